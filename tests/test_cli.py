import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.kb import KnowledgeBase

from .conftest import HashingEmbedder, commit, git

FIXTURES = Path(__file__).parent / "fixtures" / "docs"


def run(root, *args, expect=0):
    runner = CliRunner()
    result = runner.invoke(cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == expect, (result.output, result.exception)
    return result


@pytest.fixture
def docs_repo(git_repo):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    return git_repo


def test_reindex_then_search_json_schema(docs_repo):
    result = run(docs_repo, "reindex-all")
    assert "indexed 3 files" in result.stderr
    data = json.loads(run(docs_repo, "search", "token budget omitted", "--json", "--threshold", "0").stdout)
    assert data["format_version"] == 2
    assert set(data) >= {"format_version", "query", "results", "tokens_used", "budget", "omitted"}
    top = data["results"][0]
    # format 2: the core keys always, an optional one only when set; the commit all results share, once
    assert set(top) == {
        "id",
        "path",
        "kind",
        "score",
        "title",
        "description",
        "section",
        "line_start",
        "line_end",
        "content",
        "tokens",
        "relevance",
    }
    assert len(data["commit"]) == 40
    assert top["id"] == "docs/search.md#token-budget"
    assert top["section"] == "Searching > Token budget"
    assert (top["line_start"], top["line_end"]) == (9, 12)


@pytest.mark.parametrize("budget", [1, 20, 50, 120, 400])
def test_search_never_returns_more_tokens_than_the_budget(docs_repo, budget):
    run(docs_repo, "reindex-all")
    data = json.loads(
        run(
            docs_repo,
            "search",
            "hook install index",
            "--json",
            "--threshold",
            "-1",
            "--full-threshold",
            "-1",
            "--budget",
            str(budget),
        ).stdout
    )
    # what is printed is counted: a budget below the envelope's own size gets the envelope alone
    assert data["tokens_used"] <= budget or not data["results"]
    assert sum(r.get("tokens", 0) for r in data["results"]) <= data["tokens_used"]  # a thinned line says none
    assert len(data["results"]) + data["omitted"] >= 1


def test_strong_results_get_their_text_first_and_the_rest_what_the_budget_has_left(docs_repo):
    run(docs_repo, "reindex-all")

    from dataclasses import asdict

    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(docs_repo, embedder_factory=lambda s: HashingEmbedder())

    def answer(budget, *extra):  # the packing itself (the use case), before the printed answer is held to it
        response = kb.search(
            "uninstall hook chained",
            threshold=0,
            full_threshold=0.5,
            explain=True,
            budget=budget,
            metadata_only="--metadata-only" in extra,
        )
        return [asdict(hit) for hit in response.results]

    roomy = answer(50_000)
    assert all(r["content"] is not None for r in roomy)  # room for all: every result has its text
    metadata = {r["id"]: r["tokens"] for r in answer(50_000, "--metadata-only")}
    text = {r["id"]: r["tokens"] - metadata[r["id"]] for r in roomy}
    strong = [r["id"] for r in roomy if r["score"] >= 0.5 or r["explain"]["lexical_rank"] == 1]
    weak = [r["id"] for r in roomy if r["id"] not in strong]
    assert strong
    assert len(weak) >= 2
    just_strong = sum(metadata.values()) + sum(text[i] for i in strong)
    assert [r["content"] is not None for r in answer(just_strong)] == [r["id"] in strong for r in roomy]
    # what is left after that goes to the weak results, best first: here, the first one's text exactly
    one_more = answer(just_strong + text[weak[0]])
    assert [r["id"] for r in one_more if r["content"] is not None] == [
        i for i in metadata if i in strong or i == weak[0]
    ]
    meta = json.loads(
        run(docs_repo, "search", "uninstall hook chained", "--json", "--threshold", "0", "--metadata-only").stdout
    )
    assert meta["results"]
    assert all(r["content"] is None for r in meta["results"])


def test_no_hits_is_success(docs_repo):
    run(docs_repo, "reindex-all")
    data = json.loads(run(docs_repo, "search", "zebra", "--json", "--threshold", "0.99").stdout)
    assert data["results"] == []


def test_search_without_index_says_what_to_run(docs_repo):
    result = run(docs_repo, "search", "hooks", expect=1)
    assert "knowledge reindex-all" in result.stderr
    result = run(docs_repo, "search", "hooks", "--build", "--threshold", "0")
    assert "docs/hooks.md" in result.stdout
    # the index is the test embedder's: no fill of the configured model may start (it built the full model for a
    # minute, then died writing 768-dim vectors into a 64-dim index)
    assert not (docs_repo / ".knowledge" / "logs" / "embed.log").exists()


def test_a_fill_never_writes_into_an_index_of_another_model(docs_repo):
    from knowledge.errors import IndexIncompatibleError

    with pytest.MonkeyPatch.context() as env:
        env.setenv("KNOWLEDGE_FILL", "0")  # chunks left waiting for their vectors
        run(docs_repo, "reindex-all", "--quiet")
    kb = KnowledgeBase.open(docs_repo)  # the configured model (mpnet), not the test embedder the index was built with
    said = kb.fill_mismatch()
    assert said is not None
    assert "built with hashing-test" in said
    assert "\n" not in said
    assert kb.embed_in_background() is False
    with pytest.raises(IndexIncompatibleError, match="nothing embedded"):
        kb.embed_pending()
    assert kb.model._built is None  # judged without loading or building the model


def test_with_the_fill_off_nothing_says_chunks_wait_for_vectors(docs_repo, monkeypatch):
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    result = run(docs_repo, "reindex-all")
    assert "wait for vectors" not in result.stderr
    assert "indexed" in result.stderr


def test_bad_inputs_are_reported_one_line_each_and_the_rest_is_indexed(docs_repo):
    with (docs_repo / "docs" / "huge.md").open("wb") as handle:  # untracked: listed, never committed
        handle.write(b"# Huge\n" + b"x" * (50 * 1024 * 1024))
    commit(
        docs_repo,
        {
            "docs/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
            "docs/latin1.md": "# Caf\xe9\n".encode("latin-1"),
            "docs/badyaml.md": "---\ntitle: [oops\ndescription: x\n---\n# Bad yaml\n\nstill indexed\n",
            "docs/empty.md": "",
            "docs/noheadings.md": "---\ndescription: plain\n---\njust words without any heading\n",
            "docs/nodesc.md": "# No description\n\nbody\n",
        },
    )
    result = run(docs_repo, "reindex-all", expect=1)
    lines = result.stderr.splitlines()

    def line_for(path):
        found = [line for line in lines if line.startswith(f"docs/{path}: ")]
        assert len(found) == 1, (path, lines)
        return found[0]

    assert "binary" in line_for("binary.md")
    assert "not valid UTF-8" in line_for("latin1.md")
    assert "malformed YAML front matter at line 3" in line_for("badyaml.md")
    assert "empty" in line_for("empty.md")
    assert "too large" in line_for("huge.md")
    assert any("no `description`" in line and "knowledge lint" in line for line in lines)
    status = json.loads(run(docs_repo, "status", "--json").stdout)
    assert status["kinds"]["docs"]["files"] == 3 + 4  # fixtures + badyaml, empty, noheadings, nodesc
    data = json.loads(run(docs_repo, "search", "just words without any heading", "--json", "--threshold", "0").stdout)
    assert data["results"][0]["path"] == "docs/noheadings.md"
    data = json.loads(run(docs_repo, "search", "still indexed bad yaml", "--json", "--threshold", "0").stdout)
    assert data["results"][0]["path"] == "docs/badyaml.md"


def test_lint_lists_docs_without_description(docs_repo):
    run(docs_repo, "lint")
    commit(docs_repo, {"docs/nodesc.md": "# No description\n\nbody\n"})
    result = run(docs_repo, "lint", expect=1)
    assert result.stdout.splitlines() == ["docs/nodesc.md: no `description` in front matter"]


def test_gitignored_and_excluded_files_are_not_indexed(docs_repo):
    (docs_repo / ".gitignore").write_text("ignored/\n")
    (docs_repo / "knowledge.toml").write_text('exclude = ["docs/install.md"]\n')
    (docs_repo / "ignored").mkdir()
    (docs_repo / "ignored" / "secret.md").write_text("# Secret\n\nhidden\n")
    (docs_repo / "untracked.md").write_text("---\ndescription: u\n---\n# Untracked\n\nnew doc\n")
    git(docs_repo, "config", "user.name", "x")
    run(docs_repo, "reindex-all")
    status = json.loads(run(docs_repo, "status", "--json").stdout)
    assert status["kinds"]["docs"]["files"] == 3  # hooks, search, untracked


def test_folder_outside_git_honours_gitignore(tmp_path):
    root = tmp_path / "plain"
    shutil.copytree(FIXTURES, root / "docs")
    (root / ".gitignore").write_text("docs/install.md\n")
    run(root, "reindex-all")
    assert json.loads(run(root, "status", "--json").stdout)["kinds"]["docs"]["files"] == 2


def test_empty_query_is_a_usage_error(docs_repo):
    run(docs_repo, "reindex-all")
    assert "QUERY is empty" in run(docs_repo, "search", "  ", expect=2).stderr


def test_off_a_terminal_progress_is_plain_lines_and_quiet_is_silent(docs_repo):
    loud = run(docs_repo, "reindex-all")
    assert "reading docs: 3/3 (100%)" in loud.stderr
    assert "searchable now: " in loud.stderr  # nothing was cached yet: the lexical index came first
    assert "embedding docs: " in loud.stderr
    quiet = run(docs_repo, "reindex-all", "--quiet")
    assert quiet.stderr == ""


def test_search_answers_lexically_before_any_vector_and_embed_completes_it(docs_repo):
    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(docs_repo, embedder_factory=lambda s: HashingEmbedder())
    report = kb.reindex_all(embed=False)
    assert report.chunks_pending == report.chunks_total > 0
    data = json.loads(run(docs_repo, "search", "token budget", "--json").stdout)
    assert data["dense_coverage"] == 0
    assert data["results"]
    assert all(hit["score"] is None for hit in data["results"])
    text = run(docs_repo, "search", "token budget").stdout
    assert "[no vector yet: lexical or static-stage match]" in text
    assert "0% embedded so far" in text
    status = json.loads(run(docs_repo, "status", "--json").stdout)
    assert status["chunks_pending"] == report.chunks_total
    assert status["embedding_stopped"] is True  # no fill holds its lock (a killed one left its progress behind)
    assert status["embedding_eta_seconds"] is None
    assert "no fill is running: `knowledge embed` resumes it" in run(docs_repo, "status").stdout
    run(docs_repo, "embed", "--quiet")
    done = json.loads(run(docs_repo, "search", "token budget", "--json").stdout)
    assert done["dense_coverage"] == 1
    assert all(isinstance(hit["score"], float) for hit in done["results"])


def test_a_closed_pipe_ends_quietly(git_repo):
    import subprocess
    import sys

    commit(git_repo, {f"docs/d{n}.md": f"# D{n}\n\nno description\n" for n in range(3000)})
    reader = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    writer = subprocess.run(
        [sys.executable, "-m", "knowledge", "-C", str(git_repo), "lint"], stdout=reader.stdin, stderr=subprocess.PIPE
    )
    reader.stdin.close()
    assert reader.stdout.read().decode().startswith("docs/d")
    reader.wait()
    assert writer.returncode == 141
    assert "Traceback" not in writer.stderr.decode()
    assert "internal error" not in writer.stderr.decode()


def test_the_displayed_score_follows_the_display_order(docs_repo):
    import re

    run(docs_repo, "reindex-all", "--quiet")
    for query in ("token budget", "how are hooks installed", "hooks", "what happens when the model changes"):
        data = json.loads(run(docs_repo, "search", query, "--json", "--threshold", "0").stdout)
        relevance = [hit["relevance"] for hit in data["results"]]
        assert len(relevance) > 1
        assert relevance == sorted(relevance, reverse=True), query
        assert all(r > 0 for r in relevance)
        text = run(docs_repo, "search", query, "--threshold", "0").stdout
        shown = [float(v) for v in re.findall(r"^\[(\d+\.\d{3})\]", text, flags=re.MULTILINE)]
        assert shown == relevance, query


def test_the_first_hour_traps_are_gone(docs_repo, monkeypatch):
    """Global options after the command, `show` from a subfolder and by a bare id, usage errors exit 2, and
    `status` without an index is not a success."""
    assert run(docs_repo, "status", expect=1).stdout.startswith("No index in ")
    run(docs_repo, "reindex-all", "--quiet")
    after = run(docs_repo, "search", "token budget", "--json", "--debug", "--model", "all-MiniLM-L6-v2", "-k", "1")
    assert json.loads(after.stdout)["results"]
    assert "No such option" in run(docs_repo, "search", "hooks", "--topk", "3", expect=2).output
    assert "QUERY is empty" in run(docs_repo, "search", "   ", expect=2).output
    hit = json.loads(run(docs_repo, "search", "install the hook", "--json", "-k", "1").stdout)["results"][0]
    by_id = run(docs_repo, "show", hit["id"]).stdout
    assert by_id == run(docs_repo, "show", f"{hit['path']}:{hit['line_start']}-{hit['line_end']}").stdout
    monkeypatch.chdir(docs_repo / "docs")
    here = run(docs_repo, "show", f"{Path(hit['path']).name}:{hit['line_start']}").stdout
    assert here == run(docs_repo, "show", f"{hit['path']}:{hit['line_start']}").stdout


def test_docs_without_descriptions_are_noise_only_where_the_repository_uses_them(git_repo):
    commit(git_repo, {"docs/a.md": "# A\n\nText.\n", "docs/b.md": "# B\n\nMore.\n"})
    assert "have no `description`" not in run(git_repo, "reindex-all").stderr  # this repository uses none
    commit(git_repo, {"docs/c.md": "---\ndescription: C.\n---\n# C\n\nText.\n"})
    assert "2 doc(s) have no `description`" in run(git_repo, "reindex-all").stderr


def test_a_rare_word_is_found_lexically_before_any_vector(git_repo):
    """Issue 44's `zanzibarwidget`: a word in a comment, indexed, no vector yet: the lexical list answers it first."""
    from knowledge.kb import KnowledgeBase

    widgets = {
        f"src/w{i}.py": f'class Widget{i}:\n    """A widget."""\n\n    def render(self):\n        return {i}\n'
        for i in range(5)
    }
    commit(git_repo, {**widgets, "src/helper.py": "def helper():\n    # zanzibarwidget aligns frobs\n    return 1\n"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    assert kb.reindex_all(embed=False).chunks_pending > 0
    top = kb.search("zanzibarwidget", explain=True).results[0]
    assert top.path == "src/helper.py"
    assert top.explain["lexical_rank"] == 1


def test_eval_says_n_a_where_no_doc_has_a_description(git_repo):
    """569400d printed recall 0.000 for descriptions no doc has, a figure that read like a failing score."""
    commit(
        git_repo,
        {"docs/a.md": "# Alpha\n\n## How widgets pack\n\nText.\n", "docs/b.md": "# Beta\n\n## Gears turn\n\nMore.\n"},
    )
    run(git_repo, "reindex-all")
    said = run(git_repo, "eval").output
    assert "descriptions" in said
    assert "n/a (no doc has one)" in said
    assert "recall@1 0.000" not in said.split("\n")[0]


@pytest.mark.parametrize("command", [["search", "hooks"], ["status"], ["status", "--json"]])
def test_outside_a_repository_a_command_says_so(tmp_path, command):
    """Issue 69: outside any repository `search` and `status` advised indexing the folder, as if it were one."""
    folder = tmp_path / "not-a-repo"
    folder.mkdir()
    result = CliRunner().invoke(
        cli, ["-C", str(folder), *command], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 1
    assert "is in no git repository and has no index" in result.output
    assert len(result.output.strip().splitlines()) == 1
