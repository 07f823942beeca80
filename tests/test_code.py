"""Code chunks in ten languages, the call graph, hybrid ranking of exact names, and incremental code updates."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.chunking.code import EMBED_HEAD_TOKENS, chunk_code
from knowledge.cli import cli
from knowledge.kb import KnowledgeBase
from knowledge.pieces import group_key
from knowledge.records import SourceFile
from knowledge.store.local import LocalStore

from .conftest import HashingEmbedder, commit

FIXTURES = Path(__file__).parent / "fixtures" / "code"


def words(text):
    return len(text.split())


def chunked(path, text, max_tokens=256):
    return chunk_code(SourceFile(path, "code", text, "h"), max_tokens, words)


def entities(name, max_tokens=256):
    path = FIXTURES / name
    parsed = chunk_code(SourceFile(f"src/{name}", "code", path.read_text(), "h"), max_tokens, words)
    return parsed, {(c.symbol_kind, c.parent, c.symbol): (c.line_start, c.line_end) for c in parsed.chunks if c.symbol}


EXPECTED = {
    "app.py": {
        ("function", "", "reindex_changes"): (6, 8),
        ("function", "", "normalize"): (11, 12),
        ("class", "", "HookWriter"): (15, 17),
        ("method", "HookWriter", "render"): (18, 20),
        ("method", "HookWriter", "_write"): (22, 23),
    },
    "web.js": {
        ("function", "", "fetchUser"): (3, 5),
        ("class", "", "Cache"): (7, 7),
        ("method", "Cache", "get"): (8, 10),
        ("function", "", "double"): (13, 13),
    },
    "view.jsx": {("function", "", "Button"): (1, 3)},
    "service.ts": {
        ("interface", "", "User"): (1, 3),
        ("class", "", "UserService"): (5, 5),
        ("method", "UserService", "find"): (6, 8),
        ("function", "", "lookup"): (11, 13),
    },
    "panel.tsx": {("function", "", "Panel"): (1, 3)},
    "server.go": {
        ("type", "", "Server"): (3, 5),
        ("method", "Server", "Start"): (7, 9),
        ("function", "", "listen"): (11, 13),
    },
    "lib.rs": {("struct", "", "Index"): (1, 3), ("method", "Index", "add"): (6, 8), ("function", "", "grow"): (11, 13)},
    "Store.java": {
        ("class", "", "Store"): (1, 1),
        ("method", "Store", "save"): (2, 4),
        ("method", "Store", "validate"): (6, 7),
    },
    "hash.c": {("function", "", "mix"): (3, 5), ("function", "", "hash"): (7, 9)},
    "tree.cpp": {("class", "", "Tree"): (2, 3), ("method", "Tree", "depth"): (4, 4), ("function", "", "walk"): (8, 10)},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entities_names_parents_and_line_ranges(name):
    parsed, found = entities(name)
    assert parsed.problems == []
    for key, lines in EXPECTED[name].items():
        assert found.get(key) == lines, (key, found)
    languages = {c.language for c in parsed.chunks}
    assert len(languages) == 1


def test_metadata_decorators_exports_and_calls():
    parsed, _ = entities("app.py")
    by_symbol = {c.symbol: c for c in parsed.chunks if c.symbol}
    assert by_symbol["render"].decorators == ("@staticmethod",)
    assert by_symbol["_write"].exported is False
    assert by_symbol["reindex_changes"].exported is True
    assert by_symbol["reindex_changes"].calls == ("normalize",)
    assert parsed.chunks[0].embed_text.endswith('"""A small Python module."""\n\nimport os')
    assert parsed.chunks[0].embed_text.startswith("src/app.py (python)")
    java, _ = entities("Store.java")
    assert {c.symbol: c.exported for c in java.chunks if c.symbol} == {"Store": True, "save": True, "validate": False}
    go, _ = entities("server.go")
    assert {c.symbol: c.exported for c in go.chunks if c.symbol} == {"Server": True, "Start": True, "listen": False}


def test_every_line_is_covered_once_by_entities_or_line_chunks():
    for path in FIXTURES.iterdir():
        parsed, _ = entities(path.name)
        lines = path.read_text().split("\n")
        covered = set()
        for chunk in parsed.chunks:
            covered |= set(range(chunk.line_start, chunk.line_end + 1))
        nonblank = {n + 1 for n, line in enumerate(lines) if line.strip() and line.strip() not in {"}", "};"}}
        assert nonblank <= covered, (path.name, sorted(nonblank - covered))


def test_a_doc_block_right_above_an_entity_belongs_to_its_chunk():
    java = (
        "package x;\n\n/**\n * A store.\n */\nclass Store {\n    int a = 1; /** trailing */\n    /** Gets. */\n"
        "    int get() {\n        return a;\n    }\n\n    /** Far. */\n\n    void gap() {}\n\n    // plain\n"
        "    void plain() {}\n}\n"
    )
    go = "package main\n\n// Handler serves.\nfunc Handler() {}\n"
    found = {}
    for path, text in (("S.java", java), ("h.go", go)):
        for chunk in chunk_code(SourceFile(path, "code", text, "h"), 256, words).chunks:
            found[chunk.symbol or f"{path}:{chunk.line_start}"] = (chunk.line_start, chunk.line_end)
    assert found["Store"][0] == 3  # its Javadoc
    assert found["get"] == (8, 11)  # its Javadoc, not the field's trailing comment above it
    assert found["gap"] == (15, 15)  # a blank line between: the block describes nothing in particular
    assert found["plain"] == (18, 18)  # a plain comment stays a line chunk of its own
    assert found["Handler"] == (4, 4)


def test_syntax_error_falls_back_to_line_chunks_around_it_only():
    parsed, found = entities("broken.py")
    assert found == {("function", "", "ok"): (1, 2)}  # parsed cleanly before the error: still an entity
    assert [p.problem for p in parsed.problems] == [
        "syntax error near line 4; the code around it indexed as line chunks"
    ]
    assert [(c.line_start, c.line_end, c.symbol_kind, c.section) for c in parsed.chunks] == [
        (1, 2, "function", "function"),
        (4, 5, "", "lines"),
    ]


def test_lines_between_the_members_of_a_class_are_indexed():
    text = (
        "public class A {\n  private int x;\n\n  public void f() {\n    return;\n  }\n\n"
        '  private static final String NAME = "wire_name";\n  private Map<String, String> cache;\n\n'
        "  public void g() {}\n}\n"
    )
    parsed = chunked("A.java", text)
    spans = [(c.line_start, c.line_end, c.symbol, c.parent, c.title) for c in parsed.chunks]
    assert spans == [(1, 3, "A", "", "A"), (4, 6, "f", "A", "A.f"), (8, 9, "", "A", "A"), (11, 11, "g", "A", "A.g")]
    assert "wire_name" in parsed.chunks[2].content  # it was dropped: the class covered it, no member held it
    assert parsed.chunks[2].embed_text.startswith("A.java (java) module  in A\n")


def test_a_c_file_with_an_unknown_macro_keeps_its_other_functions():
    text = (
        "static int first(int a) {\n  return a + 1;\n}\n\n"
        "int broken(void) {\n  QUEUE_FOREACH(q, &loop->queue) {\n    use(q)\n  }\n  return 0;\n}\n\n"
        "int last(void) {\n  return first(2);\n}\n"
    )
    parsed = chunked("uv.c", text)
    assert len(parsed.problems) == 1
    named = {c.symbol: (c.line_start, c.line_end) for c in parsed.chunks if c.symbol}
    assert named == {"first": (1, 3), "last": (12, 14)}
    assert any(c.line_start <= 7 <= c.line_end and not c.symbol for c in parsed.chunks)  # the broken one: lines


def test_oversized_function_is_split_keeping_name_and_parent():
    body = "\n".join(f"        value_{n} = compute({n})" for n in range(120))
    source = SourceFile("big.py", "code", f"class Big:\n    def run(self):\n{body}\n", "h")
    parsed = chunk_code(source, 64, words)
    parts = [c for c in parsed.chunks if c.symbol == "run"]
    assert len(parts) > 3
    assert all(c.parent == "Big" and c.symbol_kind == "method" for c in parts)
    assert parts[0].id == "big.py#Big.run"
    assert parts[1].id == "big.py#Big.run~2"
    assert all(words(c.embed_text) <= 64 for c in parts)


def test_the_model_reads_a_bounded_head_of_a_long_chunk_whose_text_stays_whole():
    body = "\n".join(f"    value_{n} = compute({n}) + offset({n})" for n in range(38))  # 190 words, one chunk
    text = f'def run():\n    """Compute every value."""\n{body}\n'
    [chunk] = chunked("run.py", text, max_tokens=384).chunks
    assert chunk.content == text.rstrip("\n")
    assert (chunk.line_start, chunk.line_end) == (1, 40)
    header, _, read = chunk.embed_text.partition("\n")
    assert header.startswith("run.py (python) function run")
    assert read.startswith('def run():\n    """Compute every value."""\n    value_0 = compute(0)')
    assert words(chunk.embed_text) <= EMBED_HEAD_TOKENS < words(chunk.content)
    [short] = chunked("run.py", 'def run():\n    """Compute."""\n    return 1\n', max_tokens=384).chunks
    assert short.embed_text.endswith(short.content)


def kb_for(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


@pytest.fixture
def code_repo(git_repo):
    files = {f"src/{p.name}": p.read_text() for p in FIXTURES.iterdir()}
    files["docs/guide.md"] = "---\ndescription: guide\n---\n# Guide\n\nCall normalize on every path first.\n"
    commit(git_repo, files)
    report = kb_for(git_repo).reindex_all()
    assert [str(p) for p in report.warnings] == [
        "src/broken.py: syntax error near line 4; the code around it indexed as line chunks"
    ]
    return git_repo


def test_exact_function_name_ranks_first(code_repo):
    for name, expected in [
        ("reindex_changes", "src/app.py#reindex_changes"),
        ("fetchUser", "src/web.js#fetchUser"),
        ("UserService.find", "src/service.ts#UserService.find"),
    ]:
        response = kb_for(code_repo).search(f"where is {name} used", threshold=0.5, explain=True)
        assert response.results[0].id == expected, [h.id for h in response.results]
        assert response.results[0].explain["exact_identifier"] is True


def test_code_results_carry_symbols_and_call_graph(code_repo):
    hits = kb_for(code_repo).search("normalize path", kind="code", threshold=0.0).results
    assert {h.kind for h in hits} == {"code"}
    top = next(h for h in hits if h.symbol == "normalize")
    assert (top.language, top.symbol_kind, top.parent) == ("python", "function", None)
    expected = {"name": "reindex_changes", "path": "src/app.py", "line": 6, "sites": [8], "resolved": "name"}
    assert expected in top.called_by
    caller = kb_for(code_repo).search("reindex_changes", kind="code", threshold=0.0).results[0]
    assert {"name": "normalize", "path": "src/app.py", "line": 11, "resolved": "name"} in caller.calls
    docs_only = kb_for(code_repo).search("normalize path", kind="docs", threshold=0.0).results
    assert {h.kind for h in docs_only} == {"doc"}


def test_editing_one_function_reembeds_only_its_chunk(code_repo):
    text = (FIXTURES / "app.py").read_text().replace("return os.path.normpath(path)", "return os.path.abspath(path)")
    commit(code_repo, {"src/app.py": text})
    report = kb_for(code_repo).reindex_changes()
    assert report.files_indexed == 1
    assert report.chunks_embedded == 1
    ids = sorted((c.id, c.content_hash) for c in LocalStore.open(code_repo, "code").all_chunks().values())
    kb_for(code_repo).reindex_all()
    assert ids == sorted((c.id, c.content_hash) for c in LocalStore.open(code_repo, "code").all_chunks().values())


def test_generated_and_vendored_files_are_excluded(git_repo):
    commit(
        git_repo,
        {
            "src/a.py": "def a():\n    return 1\n",
            "node_modules/x/index.js": "function x() {}\n",
            "web/app.min.js": "function m(){}\n",
            "api_pb2.py": "X = 1\n",
            "Cargo.lock": "[x]\n",
        },
    )
    kb_for(git_repo).reindex_all()
    assert set(LocalStore.open(git_repo, "code").files()) == {"src/a.py"}


def test_cli_kind_and_explain(code_repo):
    result = CliRunner().invoke(
        cli,
        ["-C", str(code_repo), "search", "fetchUser", "--kind", "code", "--json", "--explain"],
        obj={"embedder_factory": lambda s: HashingEmbedder()},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["results"][0]["symbol"] == "fetchUser"
    assert set(data["results"][0]["explain"]) == {
        "dense_score",
        "dense_rank",
        "static_score",
        "static_rank",
        "lexical_score",
        "lexical_rank",
        "exact_identifier",
        "fused_score",
        "rule_defines",
        "rule_file_words",
        "rule_demoted",
        "rule_same_file",
        "rule_header",
        "rule_heading_words",
        "rule_file_coherence",
        "rule_non_callable",
        "rule_fragment",
    }


def test_expand_adds_callers_and_callees_of_the_top_code_hit(code_repo):
    response = kb_for(code_repo).search("reindex_changes", kind="code", threshold=0.5, k=1, expand=True)
    assert response.results[0].id == "src/app.py#reindex_changes"
    neighbours = {h.id: h.neighbour_of for h in response.results[1:]}
    assert neighbours == {"src/app.py#normalize": "callee of src/app.py#reindex_changes"}  # it is called by the top
    assert response.tokens_used <= response.budget


def test_member_calls_resolve_within_the_file_only(code_repo):
    writer = kb_for(code_repo).search("_write", kind="code", threshold=0.5).results[0]
    assert writer.symbol == "_write"
    assert writer.calls == (
        {"name": "HookWriter.render", "path": "src/app.py", "line": 18, "resolved": "exact"},
    )  # not write_text
    render = next(
        h for h in kb_for(code_repo).search("render", kind="code", threshold=0.0).results if h.symbol == "render"
    )
    writer = {"name": "HookWriter._write", "path": "src/app.py", "line": 22, "sites": [23], "resolved": "exact"}
    assert writer in render.called_by


def test_python_calls_are_resolved_with_ast(git_repo):
    root = Path(__file__).parent / "fixtures" / "pyproj"
    commit(git_repo, {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.py")})
    kb = kb_for(git_repo)
    kb.reindex_all()
    main = next(h for h in kb.search("main", kind="code", threshold=0.0).results if h.symbol == "main")
    assert {
        "name": "open_store",
        "path": "pkg/store.py",
        "line": 14,
        "resolved": "exact",
    } in main.calls  # from pkg.store import …
    save = next(h for h in kb.search("Store.save", kind="code", threshold=0.0).results if h.symbol == "save")
    assert save.calls == (
        {"name": "Store.validate", "path": "pkg/store.py", "line": 5, "resolved": "exact"},
    )  # not Draft.validate


KB_PY = """\
class KnowledgeBase:
    @classmethod
    def open(cls, root):
        return cls()

    def reindex_changes(self):
        return 1

    def reindex_all(self):
        return self.reindex_changes()
"""
CALLERS_PY = """\
from .kb import KnowledgeBase


def _open(ctx) -> KnowledgeBase:
    return KnowledgeBase.open(ctx)


def hook(ctx):
    return _open(ctx).reindex_changes()


def command(root):
    kb = KnowledgeBase.open(root)
    return kb.reindex_changes()


class Server:
    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def reindex(self):
        return self.kb.reindex_changes()


def unknown(thing):
    return thing.reindex_changes()


def other(store):
    return store.reindex_all()
"""


def test_callers_through_attributes_are_resolved_where_the_receiver_type_is_known(git_repo):
    commit(git_repo, {"app/kb.py": KB_PY, "app/callers.py": CALLERS_PY, "app/__init__.py": ""})
    kb = kb_for(git_repo)
    kb.reindex_all()
    target = next(
        h for h in kb.search("reindex_changes", kind="code", threshold=0.0).results if h.symbol == "reindex_changes"
    )
    callers = {(ref["name"], ref["resolved"]) for ref in target.called_by}
    assert callers == {
        ("KnowledgeBase.reindex_all", "exact"),  # self.reindex_changes()
        ("hook", "exact"),  # _open(ctx).reindex_changes(), _open annotated -> KnowledgeBase
        ("command", "exact"),  # kb = KnowledgeBase.open(root)
        ("Server.reindex", "exact"),  # self.kb, from the annotated __init__ parameter
        ("unknown", "name"),  # receiver of unknown type: a candidate by name, said so
    }
    assert [ref["resolved"] for ref in target.called_by][-1] == "name"  # exact ones first


def test_an_unknown_macro_in_a_cpp_signature_keeps_the_function():
    text = "FMT_CONSTEXPR20 inline auto clz(unsigned x) -> int {\n  return 1;\n}\n"
    parsed = chunked("bits.cc", text)
    assert len(parsed.problems) == 1  # still reported: the grammar does not know the macro
    assert [(c.symbol, c.line_start, c.line_end) for c in parsed.chunks] == [("clz", 1, 3)]


def test_a_cpp_header_is_read_as_cpp():
    text = "namespace fmt {\ntemplate <typename T> struct formatter {\n  auto parse() -> int { return 0; }\n};\n}\n"
    parsed = chunked("fmt.h", text)
    assert parsed.problems == []
    assert {c.language for c in parsed.chunks} == {"cpp"}
    assert ("parse", "method", "formatter") in {(c.symbol, c.symbol_kind, c.parent) for c in parsed.chunks}
    specialised = "template <typename T> struct formatter<std::atomic<T>, char> {};\nint operator<<(int a, int b) {}\n"
    names = {c.symbol for c in chunked("f.cc", specialised).chunks}
    assert names == {"formatter", "operator<<"}  # found by the template's name; an operator keeps its own
    plain_c = chunked("uv.h", "struct uv_loop { int alive; };\n")
    assert {c.language for c in plain_c.chunks} == {"c"}


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        ("g.py", "g: T = LocalProxy(1)\nsession = LocalProxy(2)\n\ndef f():\n    local = 1\n", ["g", "session"]),
        ("a.ts", "export const createRouter = (x) => x;\nexport const DEFAULT = 1;\n", ["DEFAULT"]),
        ("r.js", "var accepts = require('accepts');\nvar req = Object.create(proto);\n", ["req"]),  # no imports
        ("a.go", 'package m\n\nconst (\n\tMaxDepth = 3\n)\nvar ErrX = errors.New("x")\n', ["MaxDepth", "ErrX"]),
        ("a.rs", 'pub const MAX: u8 = 3;\nstatic NAME: &str = "x";\nfn f() { let z = 1; }\n', ["MAX", "NAME"]),
        ("A.java", "class A {\n  static final int LIMIT = 3;\n  void f() { int local = 1; }\n}\n", ["LIMIT"]),
        (
            "uv.c",
            "#define UV_MAX 3\nstatic int counter = 0;\nint f(void) { int local = 1; return local; }\n",
            ["UV_MAX", "counter"],
        ),
    ],
)
def test_names_declared_outside_functions_are_recorded_on_their_chunk(path, text, expected):
    chunks = chunked(path, text).chunks
    assert [name for c in chunks for name in c.names] == expected  # never a function's local variable


def test_a_function_assigned_to_a_property_is_a_method_of_its_object():
    text = "/**\n * Acceptable types.\n */\nreq.accepts = function () {\n  return 1;\n};\narr[0] = function () {};\n"
    chunks = chunked("request.js", text).chunks
    named = [(c.symbol, c.parent, c.symbol_kind, c.line_start, c.line_end) for c in chunks if c.symbol]
    assert named == [("accepts", "req", "method", 1, 6)]  # express's style; a slot in an array names nothing


def test_a_haskell_type_signature_opens_its_function():
    text = (
        "module M where\n\nimport Data.List (sort)\n\n-- | Add one to a number.\naddOne :: Int -> Int\n"
        "addOne x = x + 1\n\nother :: Int\nother = 2\n\ntwice :: Int -> Int\ntwice = (* 2)\n"
    )
    chunks = {c.symbol: c for c in chunked("src/M.hs", text).chunks if c.symbol}
    assert (chunks["addOne"].line_start, chunks["addOne"].line_end) == (6, 7)  # `addOne :: Int -> Int` included


def test_python_overload_stubs_open_the_function_they_declare():
    text = (
        "import typing as t\n\n\nclass Param:\n"
        "    @t.overload\n    def get_default(self, call: t.Literal[True] = True) -> int: ...\n\n"
        "    @t.overload\n    def get_default(self, call: bool = ...) -> int | None: ...\n\n"
        "    def get_default(self, call=True):\n        return self.default\n\n"
        "    def other(self):\n        return 1\n\n\n"
        "@overload\ndef lone(x: int) -> int: ...\n"
    )
    named = [(c.symbol, c.line_start, c.line_end) for c in chunked("src/p.py", text).chunks if c.symbol]
    # one entity from the first stub to the body that implements it; a stub with no body after it stays itself
    assert named == [("Param", 4, 4), ("get_default", 5, 12), ("other", 14, 15), ("lone", 18, 19)]


def test_a_split_function_is_one_range_in_every_kind_mix(git_repo):
    """Only one part of a long function passes the threshold: the result is still the whole function's range, with
    code alone and mixed, and its text the part that matched under the signature (569400d gave every part's text: an
    answer of 10,558 tokens for one fastapi method), the lines left out said with where to read them."""
    steps = [f"    total += step_{n}(total)" for n in range(60)]
    steps[28] = "    total += pelican_rotation(total)"  # in one window only: windows overlap by a line or two
    text = "def accumulate(total):\n" + "\n".join(steps) + "\n    return total\n"
    commit(git_repo, {"src/long.py": text, "docs/a.md": "---\ndescription: a\n---\n# A\n\nBirds of the lake.\n"})
    kb = kb_for(git_repo)
    kb.reindex_all()
    parts = [c for c in LocalStore.open(git_repo, "code").chunks_of_path("src/long.py") if c.symbol == "accumulate"]
    assert len(parts) > 2
    assert sum("pelican" in c.content for c in parts) == 1
    whole = (1, text.count("\n"))
    for kind in ("code", "all"):
        top = kb.search("pelican rotation", kind=kind, k=3, threshold=0.1).results[0]
        assert (top.symbol, (top.line_start, top.line_end)) == ("accumulate", whole), kind
        assert "pelican" in (top.content or "")
        assert top.content.startswith("def accumulate(total):\n    … lines 2-")
        assert "step_59(" not in top.content  # another part's text: `show` reads it
        assert top.content.endswith(f"left out (knowledge show src/long.py:1-{whole[1]})")


def test_a_cpp_destructor_is_no_part_of_a_split_entity():
    assert group_key("src/a.cc#Buffer::~Buffer") == "src/a.cc#Buffer::~Buffer"
    assert group_key("src/a.cc#Buffer::~Buffer~2") == "src/a.cc#Buffer::~Buffer"
    assert group_key("src/a.py#run-2~3") == "src/a.py#run-2"


def test_the_model_reads_names_as_words_only_where_the_tokenizer_cannot_see_them():
    text = "class Element {\n    void appendChildren(List<Node> nodes) {\n        add(nodes);\n    }\n}\n"
    chunks = {c.symbol: c for c in chunked("Element.java", text, max_tokens=384).chunks}
    header = chunks["appendChildren"].embed_text.partition("\n")[0]
    assert header == "Element.java (java) method appendChildren in Element: append children of element"
    assert chunks["appendChildren"].content.startswith("    void appendChildren(")  # the text itself is untouched
    snake = {c.symbol: c for c in chunked("io.py", "def get_json(url):\n    return url\n", max_tokens=384).chunks}
    assert snake["get_json"].embed_text.startswith("io.py (python) function get_json\n")  # its words show already
    method = "class HTTPResponse:\n    def json(self):\n        return self.body\n"
    chunks = {c.symbol: c for c in chunked("models.py", method, max_tokens=384).chunks}
    header = chunks["json"].embed_text.partition("\n")[0]
    assert header == "models.py (python) method json in HTTPResponse: json of http response"


def test_a_call_in_the_third_part_of_a_split_function_makes_it_a_caller(git_repo):
    """A long function is chunked into parts (`id~2`, `id~3`); the call in its last part is its call: the callee
    lists it among its callers, and it lists the callee among its calls."""
    filler = "".join(f"    step_{i} = value_{i} + other_{i} * third_{i}\n" for i in range(60))
    source = (
        "def parse_args(ctx, args):\n    return args\n\n\n"
        f"def make_context(info, args):\n{filler}    return parse_args(info, args)\n"
    )
    commit(git_repo, {"src/core.py": source})
    kb = kb_for(git_repo)
    kb.reindex_all()
    ids = {c.id for c in kb.index("code").all_chunks().values()}
    assert {"src/core.py#make_context~2", "src/core.py#make_context~3"} <= ids  # split, the call in a late part
    callee = next(h for h in kb.search("parse_args", kind="code", threshold=-1).results if h.symbol == "parse_args")
    assert [ref["name"] for ref in callee.called_by] == ["make_context"]
    assert callee.called_by[0]["sites"] == [66]  # the call site's own line, in the third part, not the caller's first
    caller = next(h for h in kb.search("make_context", kind="code", threshold=-1).results if h.symbol == "make_context")
    assert "parse_args" in [ref["name"] for ref in caller.calls]
    # an answer that is a later part of an entity still knows the entity's callers
    from knowledge.callgraph import CallGraph

    chunks = list(kb.index("code").all_chunks().values())
    graph = CallGraph(chunks)
    part = next(c for c in chunks if c.id == "src/core.py#parse_args")
    later = next(c for c in chunks if c.id == "src/core.py#make_context~3")
    assert [ref["name"] for ref in graph.called_by(part)] == ["make_context"]
    assert [ref["name"] for ref in graph.calls(later)] == ["parse_args"]
    # a long method, answered by its third part, still lists the method that calls it exactly (`self.run()`)
    body = filler.replace("\n    ", "\n        ").replace("    step_0", "        step_0", 1)
    methods = (
        f"class Command:\n    def run(self, args):\n{body}        return args\n\n"
        "    def main(self):\n        return self.run([])\n"
    )
    commit(git_repo, {"src/command.py": methods})
    kb.reindex_all()
    chunks = list(kb.index("code").all_chunks().values())
    third = next(c for c in chunks if c.id == "src/command.py#Command.run~3")
    assert {"name": "Command.main", "path": "src/command.py", "line": 65, "sites": [66], "resolved": "exact"} in (
        CallGraph(chunks).called_by(third)
    )


def test_a_container_answers_with_its_members_outline(git_repo):
    """`Framework::Helpers` asked for: its declaration and what it holds (methods, a nested class and its method),
    with their lines, instead of the one line `module Helpers`. The index is untouched: only the answer grows."""
    ruby = (
        "module Framework\n  module Helpers\n    def escape_html(text)\n      text\n    end\n\n"
        "    class FormBuilder\n      def field(name)\n        name\n      end\n    end\n  end\nend\n"
    )
    commit(git_repo, {"lib/helpers.rb": ruby})
    kb = kb_for(git_repo)
    kb.reindex_all()
    hit = next(
        h for h in kb.search("Helpers", kind="code", threshold=-1, full_threshold=-1).results if h.symbol == "Helpers"
    )
    assert hit.content.splitlines() == [
        "  module Helpers",
        "",
        "members of Framework.Helpers:",
        "  method escape_html  3-5",
        "  class FormBuilder  7-7",
        "    method field  8-10",
    ]
    small = kb.search("Helpers", kind="code", threshold=-1, full_threshold=-1, budget=120).results
    assert any(h.content and "members of Framework.Helpers" in h.content for h in small)  # it fits a small budget
    indexed = next(c for c in kb.index("code").all_chunks().values() if c.symbol == "Helpers")
    assert indexed.content == "  module Helpers"  # what is indexed and embedded is unchanged


def test_a_result_never_starts_below_its_doc_comment(git_repo):
    """A Ruby class's `#` comment, a Go function's `//` comment, a Rust item's attributes and a C comment block are
    read above the declaration and shown with it: the result starts at the first of them. A class answers with its
    doc comment and its members' outline within a small budget."""
    commit(
        git_repo,
        {
            "lib/framework/base.rb": "module Framework\n  # The base of every application: routes, filters and\n"
            "  # settings live here.\n  class Base\n    def call(env)\n      env\n    end\n\n"
            "    def route(path)\n      path\n    end\n  end\nend\n",
            "server.go": 'package server\n\nimport "fmt"\n\n// Serve answers every request on addr until ctx ends.\n'
            '// It never returns nil.\nfunc Serve(addr string) error {\n\treturn fmt.Errorf("%s", addr)\n}\n',
            "src/point.rs": "/// A point on the plane.\n#[derive(Debug, Clone)]\npub struct Point {\n    x: i32,\n}\n",
            "src/ring.c": "#include <stddef.h>\n\n/* Pushes one item: the ring grows\n * when it is full. */\n"
            "int ring_push(int *r, int v) {\n  return r[0] = v;\n}\n",
        },
    )
    kb = kb_for(git_repo)
    kb.reindex_all()

    def top(query: str, symbol: str, budget: int | None = None):
        results = kb.search(query, kind="code", threshold=-1, full_threshold=-1, budget=budget).results
        return next(h for h in results if h.symbol == symbol)

    base = top("Framework::Base", "Base", budget=160)
    assert base.line_start == 2  # the comment above `class Base` (line 4)
    assert base.content.startswith("  # The base of every application")
    assert "members of Framework.Base:" in base.content
    assert "method route" in base.content
    serve = top("Serve", "Serve")
    assert (serve.line_start, serve.content.splitlines()[0]) == (
        5,
        "// Serve answers every request on addr until ctx ends.",
    )
    point = top("Point", "Point")
    assert point.line_start == 1
    assert "#[derive(Debug, Clone)]" in point.content
    push = top("ring_push", "ring_push")
    assert push.line_start == 3
    assert push.content.startswith("/* Pushes one item")


def test_a_go_function_called_through_its_package_lists_its_caller(git_repo):
    commit(
        git_repo,
        {
            "logger.go": "package logrus\n\n// New makes a logger.\nfunc New() *Logger {\n\treturn &Logger{}\n}\n",
            "internal/util/util.go": 'package util\n\nimport "example.com/logrus"\n\n'
            "func Make() {\n\tlogger := logrus.New()\n\t_ = logger\n}\n",
        },
    )
    kb = kb_for(git_repo)
    kb.reindex_all()
    new = next(h for h in kb.search("New", kind="code", threshold=-1).results if h.symbol == "New")
    assert [(r["name"], r["path"], r["sites"], r["resolved"]) for r in new.called_by] == [
        ("Make", "internal/util/util.go", [6], "name")
    ]


def test_a_class_outline_gives_a_split_methods_whole_range(git_repo):
    """569400d: outlines printed a split method's first part (`handle_events 174-199` where it runs to 270), so an
    agent that `show`ed it read half a method."""
    steps = "\n".join(f"        total += self.step_{n}(total)" for n in range(80))
    text = (
        'class Engine:\n    """Runs the pelican engine."""\n\n'
        f"    def handle_events(self, total):\n{steps}\n        return total\n\n"
        "    def stop(self):\n        return None\n"
    )
    commit(git_repo, {"src/engine.py": text})
    kb = kb_for(git_repo)
    kb.reindex_all()
    parts = [
        c for c in LocalStore.open(git_repo, "code").chunks_of_path("src/engine.py") if c.symbol == "handle_events"
    ]
    assert len(parts) > 1
    whole_end = max(c.line_end for c in parts)
    top = kb.search("Engine", kind="code", k=3, threshold=0).results[0]
    assert top.symbol == "Engine"
    assert f"method handle_events  4-{whole_end}" in (top.content or "")


def test_a_cpp_destructor_is_an_entity_not_a_part(git_repo):
    """The one part-id rule (`~N` at the end): 569400d's outline, call graph and exact answers read any `~` as a part
    number, so `Buffer::~Buffer` was dropped from its class's outline and cut to `Buffer.` as an entity."""
    from knowledge.records import group_key, is_part

    source = (
        "class Buffer {\n public:\n  Buffer() {}\n  ~Buffer() {\n    release();\n  }\n"
        "  void release() {\n    data_ = nullptr;\n  }\n private:\n  char* data_;\n};\n"
    )
    commit(git_repo, {"src/buffer.cc": source})
    kb = kb_for(git_repo)
    kb.reindex_all()
    chunks = {c.symbol: c for c in LocalStore.open(git_repo, "code").chunks_of_path("src/buffer.cc")}
    destructor = chunks["~Buffer"]
    assert not is_part(destructor.id)
    assert group_key(destructor.id) == destructor.id
    assert is_part("src/buffer.cc#Buffer.~Buffer~2")
    outline = kb.search("Buffer", kind="code", threshold=0).results[0].content
    assert "method ~Buffer  4-6" in outline


def test_a_method_called_through_a_local_alias_of_an_attribute_lists_its_caller(git_repo):
    """569400d: `called_by` of uvicorn's `Config.load` missed its main caller, `Server._serve`
    (`config = self.config; config.load()`)."""
    commit(
        git_repo,
        {
            "app/__init__.py": "",
            "app/config.py": 'class Config:\n    def load(self):\n        """Load the configuration."""\n'
            "        return {}\n",
            "app/server.py": "from app.config import Config\n\n\nclass Server:\n"
            "    def __init__(self, config: Config):\n        self.config = config\n\n"
            "    def _serve(self):\n        config = self.config\n        config.load()\n",
        },
    )
    kb = kb_for(git_repo)
    kb.reindex_all()
    hit = next(h for h in kb.search("load the configuration", kind="code", threshold=0).results if h.symbol == "load")
    callers = {(ref["name"], ref["resolved"]) for ref in hit.called_by or ()}
    assert ("Server._serve", "exact") in callers


def test_a_method_of_a_class_imported_through_its_package_lists_its_caller(git_repo):
    """569400d: `LifespanOn.__init__` (the class imported through a package re-export, `from app import Config`) was
    missing from `called_by` of `Config.load`."""
    commit(
        git_repo,
        {
            "app/__init__.py": "from app.config import Config\n\n__all__ = ['Config']\n",
            "app/config.py": 'class Config:\n    def load(self):\n        """Load the configuration."""\n'
            "        return {}\n",
            "app/lifespan.py": "from app import Config\n\n\nclass LifespanOn:\n"
            "    def __init__(self, config: Config):\n        config.load()\n",
        },
    )
    kb = kb_for(git_repo)
    kb.reindex_all()
    hit = next(h for h in kb.search("load the configuration", kind="code", threshold=0).results if h.symbol == "load")
    assert ("LifespanOn.__init__", "exact") in {(ref["name"], ref["resolved"]) for ref in hit.called_by or ()}


def test_a_library_method_is_never_named_as_a_by_name_callee(git_repo):
    """`self.session.get(url)` on a `requests.Session` calls the library's `get`, not this repository's only `get`
    (a by-name guess named `Config.get` its caller)."""
    commit(
        git_repo,
        {
            "app/__init__.py": "",
            "app/config.py": 'class Config:\n    def get(self, key):\n        """Read one setting by its key."""\n'
            "        return key\n",
            "app/client.py": "import requests\n\n\nclass Client:\n    def __init__(self):\n"
            "        self.session = requests.Session()\n\n    def fetch(self, url):\n"
            "        return self.session.get(url)\n\n\ndef download(url, session: requests.Session):\n"
            "    return session.get(url)\n",
            "app/settings.py": "from app.config import Config\n\n\ndef timeout(config: Config):\n"
            "    return config.get('timeout')\n",
        },
    )
    kb = kb_for(git_repo)
    kb.reindex_all()
    hit = next(h for h in kb.search("read one setting", kind="code", threshold=0).results if h.symbol == "get")
    callers = {ref["name"] for ref in hit.called_by or ()}
    assert "timeout" in callers  # the caller the code states
    assert not callers & {"Client.fetch", "download"}


def test_callers_in_tests_come_after_the_others_however_their_calls_were_resolved(git_repo):
    """structlog's `bind_contextvars`: 20 exact callers in tests filled the capped list before `bound_contextvars`,
    its caller in the same file (a guess by name)."""
    lib = "def bind(**kw):\n    return kw\n\n\ndef bound(**kw):\n    bind(**kw)\n"
    tests = "from pkg.lib import bind\n\n\n" + "".join(f"def test_{n}():\n    bind(a={n})\n\n\n" for n in range(25))
    commit(git_repo, {"pkg/__init__.py": "", "pkg/lib.py": lib, "tests/test_lib.py": tests})
    kb = kb_for(git_repo)
    kb.reindex_all()
    index = kb.index("code")
    bind = next(c for c in index.all_chunks().values() if c.symbol == "bind")
    callers = index.call_graph().called_by(bind)
    assert [(r["name"], r["resolved"]) for r in callers[:2]] == [("bound", "name"), ("test_0", "exact")]
    assert len(callers) == 20
