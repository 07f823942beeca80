import json
from pathlib import Path

import pytest

from knowledge.api.request import SearchRequest
from knowledge.budget import metadata_text, pack
from knowledge.records import SearchHit

REPO = Path(__file__).resolve().parent.parent


def hit(i, content):
    return SearchHit(
        id=f"d.md#{i}",
        path="d.md",
        kind="doc",
        score=1 - i / 10,
        title="T",
        description="D",
        section="S",
        line_start=1,
        line_end=2,
        content=content,
        tokens=0,
    )


def words(text):
    return len(text.split())


def test_packing_never_exceeds_the_budget_and_degrades_to_metadata():
    hits = [hit(i, "word " * 30) for i in range(5)]
    meta = words(metadata_text(hits[0]))
    for budget in range(1, 200, 7):
        kept, used, omitted = pack(hits, budget, words)
        assert used <= budget
        assert used == sum(h.tokens for h in kept)
        assert len(kept) + omitted == len(hits)
    # every hit's metadata before any text: nothing is left out while a line of it fits
    kept, used, omitted = pack(hits, 30 + 5 * meta, words)
    assert [h.content is not None for h in kept] == [True, False, False, False, False]
    assert omitted == 0
    kept, used, omitted = pack(hits, 2 * meta, words)
    assert [h.content is not None for h in kept] == [False, False]
    assert omitted == 3


def test_metadata_hits_cost_their_metadata_tokens():
    kept, used, _ = pack([hit(0, None)], 100, words)
    assert kept[0].tokens == used == words(metadata_text(kept[0]))


def test_what_the_budget_has_left_gives_text_to_the_best_results_first():
    hits = [hit(0, "word " * 30), hit(1, None), hit(2, None), hit(3, None)]
    spare = [None, "more " * 20, "long " * 500, "last " * 20]
    meta = words(metadata_text(hits[0]))
    budget = 4 * meta + 30 + 20 + 20
    kept, used, omitted = pack(hits, budget, words, spare)
    assert omitted == 0
    assert used <= budget
    # the first keeps its text, the second gets its spare text, the third's does not fit, the fourth's does
    assert [h.content is not None for h in kept] == [True, True, False, True]
    assert [h.tokens for h in kept] == [meta + 30, meta + 20, meta, meta + 20]
    tight, used, _ = pack(hits, 4 * meta + 30, words, spare)
    assert [h.content is not None for h in tight] == [True, False, False, False]  # metadata of all before any spare


@pytest.mark.model
def test_what_is_printed_fits_the_budget_for_50_questions_on_this_repository(git_repo, monkeypatch):
    """The budget bounds what an agent reads: the printed JSON (`--json`) and the printed text, counted by the
    model's own tokenizer (loaded apart from knowledge), at budgets 200, 400 and 2000, for 50 questions."""
    from tokenizers import Tokenizer

    from knowledge.kb import KnowledgeBase
    from knowledge.server.backend import LocalBackend

    from .conftest import commit, model_home

    monkeypatch.setenv("KNOWLEDGE_HOME", str(model_home()))
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    files = {f"docs/{p.name}": p.read_text() for p in (REPO / "docs").glob("*.md")}
    commit(git_repo, {**files, "README.md": (REPO / "README.md").read_text()})
    kb = KnowledgeBase.open(git_repo)
    kb.reindex_all()
    headings = [line.lstrip("#").strip() for text in files.values() for line in text.splitlines()]
    questions = list(dict.fromkeys(h.lower() for h in headings if 3 <= len(h.split()) <= 12))[:50]
    assert len(questions) == 50
    tokenizer = Tokenizer.from_file(str(kb.model.counter().installed.path / "tokenizer.json"))
    tokenizer.no_truncation()  # the shipped file truncates and pads to 128
    tokenizer.no_padding()

    def tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    backend = LocalBackend(kb, warm=False)
    full = 0
    for question in questions:
        for budget in (200, 400, 2000):
            params = {"query": question, "budget": budget, "threshold": 0}
            data = backend.call("search", SearchRequest.from_params(params))
            printed = json.dumps(data, ensure_ascii=False, indent=2)  # what `search --json` prints
            assert tokens(printed) <= budget, (question, budget)
            assert data["tokens_used"] - 1 <= tokens(printed) <= data["tokens_used"]  # its own digits, at most
            text = backend.call("search", SearchRequest.from_params({**params, "format": "text"}))["text"]
            assert tokens(text) <= budget, (question, budget)
            full += sum(hit.get("content") is not None for hit in data["results"])
    assert full > 0  # the budget still carries text, not only pointers


@pytest.mark.model
def test_a_tight_budget_answers_lines_not_nothing_when_the_top_result_has_a_long_caller_list(git_repo, monkeypatch):
    """569400d: `--json --budget 300` printed `"results": []` on uvicorn (the top code result's metadata alone, its
    `called_by` list, was ~400 tokens). Now: at least three results, and none left out while a line of it fits."""
    from knowledge.kb import KnowledgeBase
    from knowledge.server.backend import LocalBackend

    from .conftest import commit, model_home

    monkeypatch.setenv("KNOWLEDGE_HOME", str(model_home()))
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    callers = "".join(
        f'\n\ndef handler_{i}(request):\n    """Serve route {i}."""\n    return load_config(request.path)\n'
        for i in range(30)
    )
    commit(
        git_repo,
        {
            "app/config.py": 'def load_config(path):\n    """Load the server configuration from a file."""\n'
            '    return open(path).read()\n\n\ndef save_config(path, text):\n    """Save the server configuration."""\n'
            "    open(path, 'w').write(text)\n",
            "app/routes.py": "from app.config import load_config\n" + callers,
            "docs/config.md": "---\ndescription: config\n---\n# Configuration\n\nThe server configuration is loaded "
            "from a file at start.\n",
        },
    )
    kb = KnowledgeBase.open(git_repo)
    kb.reindex_all()
    backend = LocalBackend(kb, warm=False)
    tight = backend.call("search", SearchRequest("load the server configuration", budget=300, threshold=0))
    assert len(tight["results"]) >= 3, tight
    assert tight["tokens_used"] <= 300
    wide = backend.call("search", SearchRequest("load the server configuration", budget=2000, threshold=0))
    assert wide["over_budget"] == 0  # every result's line fits in 2,000: none left out
    top = next(r for r in wide["results"] if r.get("symbol") == "load_config")
    assert len(top["called_by"]) == 30 or top.get("more_callers", 0) + len(top["called_by"]) >= 20


def test_a_pasted_issue_is_a_question_and_its_echo_spends_no_budget(git_repo):
    """569400d refused a 5,820-character issue ("at most 4,000"), and a 3,188-character one answered one file: the
    JSON echoed the query, 1,890 of the 2,000 tokens."""
    from knowledge.kb import KnowledgeBase
    from knowledge.server.backend import LocalBackend

    from .conftest import HashingEmbedder, commit

    pages = {
        f"docs/p{n}.md": f"---\ndescription: page {n}\n---\n# Page {n}\n\nThe widget {n} packs gears.\n"
        for n in range(8)
    }
    commit(git_repo, pages)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    issue = "Widgets do not pack gears after the upgrade.\n\n" + "Traceback line: widget gears pack failed\n" * 500
    assert len(issue) > 20_000
    data = LocalBackend(kb, warm=False).call("search", SearchRequest(issue, budget=2000, threshold=0))
    assert data["query_chars"] == len(issue)
    assert len(data["query"]) <= 202
    assert len(data["results"]) >= 5
    assert data["tokens_used"] <= 2000
