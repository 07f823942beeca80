"""The code ranking rules: the definition of a name first, file names, path priors, variety; each one visible in
--explain, and none of them on prose."""

import pytest

from knowledge.api.request import SearchRequest
from knowledge.kb import KnowledgeBase
from knowledge.ranking import DEFAULT_POLICY, Candidate, RankingRules, Rule, asked_names, asks_what_code_does
from knowledge.ranking.query import parse
from knowledge.ranking.rules import RULES, diversify, score, without
from knowledge.records import Chunk

from .conftest import HashingEmbedder, commit


def chunk(path: str, symbol: str = "", kind: str = "code") -> Chunk:
    return Chunk(id=f"{path}#{symbol}", path=path, kind=kind, title="", description="", section="", line_start=1,
                 line_end=2, content="", content_hash="h", embed_text="", symbol=symbol)  # fmt: skip


def at(fused: float) -> Candidate:
    return Candidate(key=0, fused=fused, ruled=fused, final=fused)


def apply_rules(ranked, query, vote=1 / 6, rules=DEFAULT_POLICY.rules):
    """The rules' scores, each candidate of `ranked` with its shares by explain name (what --explain shows)."""
    scored = score(ranked, parse(query), vote, rules)
    return [(c, {rule.value: share for rule, share in c.shares.items()}) for c in scored]


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Blueprint", {"blueprint"}),
        ("send_file", {"sendfile"}),
        ("how does Flask.route register a view", {"route"}),
        ("where is `url_for` defined", {"urlfor"}),
        ("how does the app dispatch requests", set()),
        ("getUserName", {"getusername"}),
        ("how are URL routes registered", set()),  # an acronym in a sentence is no name
        ("URL", {"url"}),
    ],
)
def test_asked_names(query, names):
    assert asked_names(query) == names


def test_the_definition_beats_its_callers_and_tests_are_demoted():
    ranked = [
        (at(0.30), chunk("src/app/views.py", "dispatch_request")),  # a caller, ranked first by fusion
        (at(0.25), chunk("tests/test_blueprints.py", "test_blueprint")),
        (at(0.20), chunk("src/app/blueprints.py", "Blueprint")),
        (at(0.20), chunk("docs/blueprints.md", "", kind="doc")),
    ]
    scored = apply_rules(ranked, "Blueprint")
    best = max(range(len(ranked)), key=lambda n: scored[n][0].ruled)
    assert ranked[best][1].symbol == "Blueprint"
    assert set(scored[best][1]) == {"defines", "file_words"}
    assert scored[1][1]["demoted"] < 0
    assert scored[3][1] == {}  # prose is never touched


def test_a_query_about_tests_keeps_tests():
    ranked = [(at(0.3), chunk("tests/test_app.py", "test_run"))]
    assert "demoted" not in apply_rules(ranked, "which tests cover the app runner")[0][1]


def test_a_second_chunk_of_one_file_gives_way():
    ranked = [(at(1.0 - n / 100), chunk("a.py", f"f{n}")) for n in range(3)] + [(at(0.6), chunk("b.py"))]
    order = diversify(ranked, DEFAULT_POLICY.rules)
    # a.py's second chunk (0.99 x 0.25) and third (0.98 x 0.06) fall behind b.py's first
    assert [position for position, _ in order] == [0, 3, 1, 2]
    assert order[2][1].shares[Rule.SAME_FILE] < 0
    assert [position for position, _ in diversify(ranked, RankingRules(enabled=False))] == [0, 1, 2, 3]


def test_a_name_query_finds_the_definition_first_and_explain_shows_why(git_repo):
    commit(
        git_repo,
        {
            "src/app/registry.py": "def register_view(name, view):\n    ROUTES[name] = view\n",
            "src/app/main.py": "def start():\n    register_view('home', home)\n    register_view('about', about)\n",
            "tests/test_registry.py": "def test_register_view():\n    register_view('x', None)\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    top = kb.search("register_view", kind="code", threshold=-1, explain=True).results[0]
    assert (top.path, top.symbol) == ("src/app/registry.py", "register_view")
    assert top.explain["rule_defines"] > 0
    off = KnowledgeBase.open(git_repo, {"rank_rules": False}, embedder_factory=lambda s: HashingEmbedder())
    assert all(v == 0 for k, v in off.search("register_view", kind="code", threshold=-1, explain=True)
               .results[0].explain.items() if k.startswith("rule_"))  # fmt: skip


def test_path_exclude_and_language_filters_on_cli_and_http_alike(git_repo):
    import json

    from click.testing import CliRunner

    from knowledge.cli import cli
    from knowledge.server.backend import LocalBackend

    commit(
        git_repo,
        {
            "src/retry.py": "def retry_on_timeout(call):\n    return call()\n",
            "tests/test_retry.py": "def test_retry_on_timeout():\n    retry_on_timeout(None)\n",
            "web/retry.js": "function retryOnTimeout(call) { return call(); }\n",
            "docs/retry.md": "# Retry\n\nretry on timeout is documented here\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    args = ["-C", str(git_repo), "search", "retry on timeout", "--threshold", "-1", "--json"]
    filters = ["--path", "src/**", "--path", "tests/**", "--exclude", "tests/**", "--lang", "python"]
    result = CliRunner().invoke(cli, [*args, *filters], obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == 0, result.output
    on_cli = json.loads(result.stdout)
    assert {hit["path"] for hit in on_cli["results"]} == {"src/retry.py"}
    params = {"query": "retry on timeout", "threshold": -1, "paths": ["src/**", "tests/**"]}
    over_http = LocalBackend(kb).call(
        "search", SearchRequest.from_params({**params, "exclude": ["tests/**"], "language": ["python"]})
    )
    assert json.loads(json.dumps(over_http["results"])) == on_cli["results"]
    unfiltered = kb.search("retry on timeout", threshold=-1).results
    assert {h.path for h in unfiltered} >= {"src/retry.py", "tests/test_retry.py", "web/retry.js", "docs/retry.md"}


def test_files_lists_each_matching_file_once_best_first(git_repo):
    from click.testing import CliRunner

    from knowledge.cli import cli
    from knowledge.server.backend import LocalBackend

    body = "\n\n".join(f"def retry_{n}(call):\n    return retry(call, {n})" for n in range(6))
    commit(git_repo, {"src/retry.py": body + "\n", "src/other.py": "def retry(call, n):\n    return call()\n"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    args = ["-C", str(git_repo), "search", "retry call", "--threshold", "-1", "--files"]
    result = CliRunner().invoke(cli, args, obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == 0, result.output
    listed = result.stdout.splitlines()
    assert sorted(listed) == ["src/other.py", "src/retry.py"]
    answer = LocalBackend(kb).call("search", SearchRequest("retry call", threshold=-1, files_only=True))
    assert [hit["path"] for hit in answer["results"]] == listed
    assert all(hit["content"] is None for hit in answer["results"])


def test_parts_of_one_section_or_function_come_back_as_one_result(git_repo):
    from knowledge.kb import KnowledgeBase

    from .conftest import HashingEmbedder, commit

    paragraphs = "\n\n".join(f"Paragraph {n}: the token budget caps what search returns, part {n}." for n in range(60))
    body = "\n".join(f"    total += budget_{n}  # token budget line {n}" for n in range(200))
    commit(
        git_repo,
        {
            "docs/long.md": f"---\ndescription: budget\n---\n# Long\n\n## Token budget\n\n{paragraphs}\n\n"
            "## Other\n\nShort.\n",
            "src/long.py": f"def spend_token_budget(total):\n{body}\n    return total\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    docs = kb.index("docs").store.chunks_of_path("docs/long.md")
    assert sum(1 for c in docs if c.section.endswith("Token budget")) > 2  # the section was split into parts
    results = kb.search("token budget", threshold=-1, k=10, budget=50_000).results
    spans = [(h.path, h.line_start, h.line_end) for h in results]
    for n, (path, start, end) in enumerate(spans):
        for other_path, other_start, other_end in spans[n + 1 :]:
            assert path != other_path or end < other_start or other_end < start, spans
    section = next(h for h in results if h.section.endswith("Token budget"))
    parts = [c for c in docs if c.section.endswith("Token budget")]
    assert (section.line_start, section.line_end) == (min(c.line_start for c in parts), max(c.line_end for c in parts))
    assert "~" not in section.id
    # the text is the part that matched (the whole range named): no paragraph twice, the rest said where to read
    assert section.content is None or all(section.content.count(f"Paragraph {n}:") <= 1 for n in range(60))
    assert section.content is None or section.content.endswith("left out (knowledge show docs/long.md:6-126)")
    function = next(h for h in results if h.symbol == "spend_token_budget")
    assert (function.line_start, function.line_end) == (1, 202)


def test_exact_mode_lists_every_occurrence_without_a_model(git_repo, monkeypatch):
    from click.testing import CliRunner

    from knowledge.cli import cli
    from knowledge.kb import KnowledgeBase

    from .conftest import HashingEmbedder, commit

    commit(
        git_repo,
        {
            "src/a.py": "def load_config(path):\n    return path\n\n\ndef use():\n    return load_config('x')\n",
            "src/b.py": "from a import load_config\n\nVALUE = load_config('y')  # load_config again\nX = 1\n"
            "load_configs = 2\n",
            "docs/c.md": "---\ndescription: c\n---\n# C\n\nCall `load_config` first.\n",
        },
    )
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()

    class NoEmbedding(HashingEmbedder):  # counts tokens for the budget; must never embed
        def embed_query(self, text):
            raise AssertionError("exact mode embedded the query")

    result = CliRunner().invoke(
        cli,
        ["-C", str(git_repo), "search", "load_config", "--exact"],
        obj={"embedder_factory": lambda s: NoEmbedding()},
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "docs/c.md:6: Call `load_config` first.",
        "src/a.py:1: def load_config(path):",
        "src/a.py:6:     return load_config('x')",
        "src/b.py:1: from a import load_config",
        "src/b.py:3: VALUE = load_config('y')  # load_config again",
    ]
    limited = CliRunner().invoke(
        cli,
        ["-C", str(git_repo), "search", "load_config", "--exact", "-k", "2", "--kind", "code", "--json"],
        obj={"embedder_factory": lambda s: NoEmbedding()},
    )
    data = __import__("json").loads(limited.stdout)
    assert [(r["path"], r["line_start"]) for r in data["results"]] == [("src/a.py", 1), ("src/a.py", 6)]
    assert data["omitted"] == 2


def test_the_file_whose_own_name_the_query_spells_gets_more_of_the_file_word_credit():
    ranked = [
        (at(0.3), chunk("gson/FieldNamingStrategy.java", "FieldNamingStrategy")),
        (at(0.3), chunk("gson/FieldNamingPolicy.java", "FieldNamingPolicy")),
    ]
    strategy, policy = (
        shares["file_words"] for _, shares in apply_rules(ranked, "field naming policy and key transformation")
    )
    assert policy == pytest.approx(1 / 6, abs=1e-4)  # two words or more matched, all three of its own name's words
    assert strategy == pytest.approx(1 / 6 * (0.5 + 0.5 * 2 / 3), abs=1e-4)


def test_a_type_name_query_prefers_the_type_to_a_snake_case_method():
    ranked = [
        (at(0.3), chunk("src/form.rs", "from_request")),
        (at(0.3), chunk("src/extract.rs", "FromRequest")),
    ]
    method, trait = (shares["defines"] for _, shares in apply_rules(ranked, "FromRequest"))
    assert trait == pytest.approx(2 / 6, abs=1e-4)
    assert method == pytest.approx(1 / 6, abs=1e-4)
    snake = [(at(0.3), chunk("src/form.rs", "from_request"))]
    assert apply_rules(snake, "from_request")[0][1]["defines"] == pytest.approx(2 / 6, abs=1e-4)  # spelled as it is


def test_an_identifier_most_candidates_hold_earns_no_exact_boost(git_repo):
    files = {f"src/ws/part{n}.py": f"def part{n}():\n    return WebSocket({n})\n" for n in range(30)}
    files["src/ws/frames.py"] = "def read():\n    return handleFrame(WebSocket(0))\n"
    commit(git_repo, files)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    results = kb.search("WebSocket handleFrame", kind="code", threshold=-1, k=40, explain=True).results
    exact = {hit.path for hit in results if hit.explain["exact_identifier"]}
    assert exact == {"src/ws/frames.py"}  # WebSocket is in every file: the vocabulary, not a name to boost


def test_a_verb_in_the_query_finds_the_file_named_for_its_agent_noun():
    ranked = [(at(0.3), chunk("gson/Gson.java", "Gson")), (at(0.3), chunk("gson/GsonBuilder.java", "build"))]
    query = "configuring options before building a Gson instance"
    plain, builder = (shares["file_words"] for _, shares in apply_rules(ranked, query))
    assert builder > plain  # building ~ builder: two words of its name, against one


def test_a_header_gives_way_to_its_source_file():
    ranked = [(at(0.3), chunk("src/idna.h")), (at(0.28), chunk("src/idna.c", "uv__idna_toascii"))]
    header, source = apply_rules(ranked, "IDNA internationalized domain name encoding")
    assert source[0].ruled > header[0].ruled
    assert header[1]["header"] < 0
    alone = [(at(0.3), chunk("include/fmt/format.h", "format"))]  # a header-only library keeps its place
    assert "header" not in apply_rules(alone, "formatting")[0][1]


def test_a_bare_name_query_keeps_the_lexical_matches_a_sentence_would_cut():
    from knowledge.ranking.cut import relevant

    weak_vector = Candidate(key=1, cosine=0.05, lexical_rank=3)  # a one-letter name: its vector says nothing
    assert relevant(weak_vector, 0.38, DEFAULT_POLICY, bare_name=True)
    assert not relevant(weak_vector, 0.38, DEFAULT_POLICY)  # in a sentence, the similarity floor holds
    assert not relevant(Candidate(key=2, cosine=0.05, lexical_rank=40), 0.38, DEFAULT_POLICY, bare_name=True)


def test_the_relevance_pass_needs_both_lists():
    from knowledge.ranking.cut import relevant

    lone_dense = Candidate(key=1, cosine=0.27, dense_rank=1, final=0.5)  # an off-topic question's top hit looks so
    assert not relevant(lone_dense, 0.38, DEFAULT_POLICY)
    both = Candidate(key=2, cosine=0.27, dense_rank=1, lexical_rank=15, final=0.5)
    assert relevant(both, 0.38, DEFAULT_POLICY)


def test_in_a_mixed_answer_a_section_whose_heading_spells_the_question_holds_its_place(git_repo):
    commit(
        git_repo,
        {
            "docs/models.md": "---\ndescription: models\n---\n# Models\n\n## How the model weights are verified\n\n"
            "Each build embeds reference texts and compares them.\n\n## Other\n\nUnrelated words here.\n",
            "src/weights.py": "def read_weights(path):\n    return open(path).read()\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    query = "how are the model weights verified"
    mixed = kb.search(query, kind="all", threshold=-1, explain=True).results
    section = next(hit for hit in mixed if hit.section.endswith("How the model weights are verified"))
    assert section.explain["rule_heading_words"] > 0
    assert mixed[0].path == "docs/models.md"
    docs_only = kb.search(query, kind="docs", threshold=-1, explain=True).results
    assert all(hit.explain["rule_heading_words"] == 0 for hit in docs_only)  # prose alone keeps its fusion


def test_results_the_evidence_tells_apart_never_show_the_same_relevance(git_repo):
    commit(
        git_repo,
        {
            "src/registry.py": "def register_view(name, view):\n    ROUTES[name] = view\n",
            "src/views/register_view.py": "def register_view(view):\n    return view\n",
            "src/main.py": "def start():\n    register_view('home', home)\n",
            "src/other.py": "def other():\n    register_view('about', about)\n    return 1\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    results = kb.search("register_view", kind="code", threshold=-1, explain=True).results
    # both definitions are lifted past first place in both lists, the one in the file named for it further
    assert [(r.path, r.relevance > 1) for r in results[:2]] == [("src/views/register_view.py", True),
                                                               ("src/registry.py", True)]  # fmt: skip
    assert results[0].relevance > results[1].relevance
    assert [r.relevance for r in results] == sorted((r.relevance for r in results), reverse=True)
    finals = [r.relevance for r in results]
    distinct_evidence = {(r.explain["fused_score"], r.explain.get("rule_same_file")) for r in results}
    assert len(set(finals)) == len(distinct_evidence)


def test_with_rank_rules_off_the_order_is_plain_reciprocal_rank_fusion(git_repo):
    from knowledge.lexical import terms
    from knowledge.ranking.fusion import lexical_scale

    floor = DEFAULT_POLICY.candidate_floor

    files = {f"src/mod{i}.py": f"def handler_{i}(request):\n    return request.body{i} + {i}\n" for i in range(12)}
    files["src/registry.py"] = "def register_view(name, view):\n    ROUTES[name] = view\n"
    files["tests/test_registry.py"] = "def test_register_view():\n    register_view('x', None)\n"
    commit(git_repo, files)
    kb = KnowledgeBase.open(git_repo, {"rank_rules": False}, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    query = "register_view handler request body"
    got = [h.id for h in kb.search(query, kind="code", threshold=-1, k=10).results]

    index = kb.index("code")
    fusion = DEFAULT_POLICY.fusion
    dense = index.store.dense_search(HashingEmbedder().embed_query(query), floor)
    lexical = index.store.lexical_search(terms(query), floor)
    scale = lexical_scale(len(set(terms(query))), fusion)
    fused: dict[int, float] = {}
    dense_rank = {hit.key: rank for rank, hit in enumerate(dense, start=1)}
    for rank, hit in enumerate(dense, start=1):
        fused[hit.key] = fused.get(hit.key, 0.0) + fusion.dense_weight / (fusion.k + rank)
    for rank, hit in enumerate(lexical, start=1):
        fused[hit.key] = fused.get(hit.key, 0.0) + fusion.lexical_weight * scale / (fusion.k + rank)
    order = sorted(fused, key=lambda key: (-fused[key], dense_rank.get(key, 10**9)))
    chunks = index.store.chunks(order[:10])
    assert got == [chunks[key].id for key in order[:10]]
    assert "tests/test_registry.py#test_register_view" in got  # no demotion, no boost: fusion alone


def long_class() -> str:
    fields = "".join(f"    option_{i}: int = {i}  # the {i}th option of the writer\n" for i in range(40))
    header = (
        "class TemplateWriter:\n"
        '    """Writes templates: every option of the writer, the encoding, the newline style and the mode."""\n\n'
        + fields
    )
    verbs = ["open", "close", "flush", "reset", "render", "escape", "indent", "wrap", "quote", "split",
             "merge", "sort", "count", "hash", "copy", "move", "lock", "unlock", "encode", "decode"]  # fmt: skip
    methods = "".join(
        f"\n    def {verb}_stream(self, stream):\n        self.{verb}_count += 1\n        return stream.{verb}()\n"
        for verb in verbs
    )
    methods += (
        "\n    def write_to_path(self, path, rendered):\n"
        "        with open(path, 'w', encoding='utf-8') as handle:\n"
        "            handle.write(rendered)\n"
    )
    return header + methods


def test_a_question_about_one_method_of_a_long_class_answers_with_that_method_first(git_repo):
    commit(git_repo, {"src/writer.py": long_class(), "src/other.py": "def unrelated():\n    return 0\n"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    # what the code does: the method first, and the class's other methods are not decayed away behind other files
    does = kb.search("write the rendered text to a file at the given path", kind="code", threshold=-1, explain=True)
    first, *rest = does.results
    assert (first.path, first.symbol) == ("src/writer.py", "write_to_path")
    assert all(hit.explain["rule_same_file"] == 0 for hit in rest)
    shell = next(hit for hit in does.results if hit.symbol == "TemplateWriter")
    assert shell.explain["rule_non_callable"] < 0
    bare = kb.search("TemplateWriter", kind="code", threshold=-1).results[0]
    assert bare.symbol == "TemplateWriter"  # a bare name still asks for the definition itself


@pytest.mark.parametrize(
    ("query", "does"),
    [
        ("Returns the package name, like java.util for Map.Entry.", True),
        ("parse a cookie header into a dict", True),
        ("Applies the middleware to every route", True),
        ("Guesses the mimetype based on a filename.", True),
        ("The URL host as a string", True),
        ("how are hooks installed", False),
        ("radix tree path matching", False),
        ("render_template and the jinja environment", False),
        ("Returns", False),
    ],
)
def test_a_question_that_says_what_code_does_is_told_from_a_topic(query, does):
    assert asks_what_code_does(query) is does


def test_every_rule_is_a_row_of_the_table_and_its_off_values_silence_it():
    from dataclasses import replace

    ranked = [
        (at(0.30), chunk("tests/test_blueprint.py", "Blueprint")),  # defines, file words, demoted
        (at(0.25), replace(chunk("src/blueprint.py", "Blueprint"), symbol_kind="class")),
        (at(0.20), chunk("src/blueprint.py", "helper")),  # its file's coherence, the same-file decay
        (at(4.00), replace(chunk("src/blueprint.py"), parent="Blueprint")),  # a piece of the class asked about
        (at(0.20), chunk("src/idna.h")),  # a header whose source is a candidate
        (at(0.10), chunk("src/idna.c", "toascii")),
        (
            at(0.20),
            Chunk(
                id="d#1",
                path="docs/guide.md",
                kind="doc",
                title="Guide",
                description="",
                section="Guide > Blueprint",
                line_start=1,
                line_end=2,
                content="",
                content_hash="h",
                embed_text="",
            ),
        ),
    ]
    rules = replace(DEFAULT_POLICY.rules, non_callable=0.6)  # a class shell counts less: these chunks are no function

    def moved(rules: RankingRules) -> set[Rule]:
        scored = score(ranked, parse("Blueprint"), 1 / 6, rules)
        decayed = diversify(list(zip(scored, [c for _, c in ranked], strict=True)), rules)
        return {rule for _, c in decayed for rule, share in c.shares.items() if share}

    assert moved(rules) == set(Rule) == {row.rule for row in RULES}  # every rule fires here, each is one row
    for row in RULES:
        assert row.rule not in moved(without(rules, row.rule)), row.rule
        assert moved(without(rules, row.rule)) == moved(rules) - {row.rule}  # and silences no other
    assert moved(RankingRules(enabled=False)) == set()


def test_a_piece_of_a_class_with_no_name_answers_below_the_class_a_question_names():
    """A block of `attr_reader`s inside `Connection` (a chunk with no name of its own), ranked first by fusion, comes
    after the class for a question naming the class; a piece of a class the question does not name keeps its place."""
    from dataclasses import replace

    ranked = [
        (at(0.40), replace(chunk("lib/net/connection.rb"), parent="Connection")),
        (at(0.35), replace(chunk("lib/net/pool.rb"), parent="Pool")),
        (at(0.20), replace(chunk("lib/net/connection.rb", "Connection"), symbol_kind="class")),
    ]
    piece, other, entity = apply_rules(ranked, "what is the net connection class")
    assert piece[0].ruled == pytest.approx(0.9 * entity[0].ruled)
    assert piece[1]["fragment"] < 0
    assert "fragment" not in other[1]
    assert "fragment" not in apply_rules(ranked, "how are attributes read")[0][1]  # the class is not asked about


def test_files_git_marks_generated_and_extern_trees_rank_below_the_projects_own_code(git_repo):
    """`linguist-generated` in `.gitattributes` (as GitHub reads it) and an `extern/` tree are demoted as vendored
    code is, in search and in locate; the same file unmarked is not."""
    client = "def settle_invoice_request(invoice):\n    # settle invoice request, settle invoice\n    return invoice\n"
    commit(
        git_repo,
        {
            "src/billing.py": "def settle_invoice(invoice):\n    return invoice.total\n",
            "src/billing_client.py": client,
            "extern/payments/settle.py": client,
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()

    def demoted():
        results = kb.search("settle invoice request", kind="code", threshold=-1, explain=True).results
        return {hit.path for hit in results if hit.explain["rule_demoted"] != 0}

    assert demoted() == {"extern/payments/settle.py"}
    commit(git_repo, {".gitattributes": "src/*_client.py linguist-generated=true\n"})
    kb.reindex_changes()
    assert demoted() == {"extern/payments/settle.py", "src/billing_client.py"}
    files = [f.path for f in kb.locate("settle_invoice_request fails for a paid invoice", k=3).files]
    assert files.index("src/billing.py") < files.index("src/billing_client.py")


def test_rank_and_margin_reads_a_near_tie_as_one_and_keeps_a_decisive_first_first():
    from knowledge.ranking.fusion import rank_and_margin, ranks_by_votes, reciprocal_rank

    decisive = {"a.py": 10.0, "b.py": 1.0}  # a.py far ahead in one signal
    near_tie = {"b.py": 0.61, "a.py": 0.60}  # b.py a hair ahead in the other
    by_rank = reciprocal_rank(((ranks_by_votes(votes), 1.0) for votes in (decisive, near_tie)), 5.0)
    assert by_rank["a.py"] == pytest.approx(by_rank["b.py"])  # places alone: a tie
    fused = rank_and_margin((decisive, near_tie), 5.0, 0.5)
    assert fused["a.py"] > fused["b.py"]
    assert rank_and_margin((decisive,), 5.0, 0.5)["a.py"] == pytest.approx(1 / 6)  # a list's first: 1/(k+1) either way
    assert rank_and_margin((decisive, near_tie), 5.0, 0.0) == pytest.approx(by_rank)  # no share: plain ranks
