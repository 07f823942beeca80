"""The call graph read by key (issue 68): the local engine keeps who calls what in a table every write keeps true,
so an answer reads the rows it shows; after any sequence of commits it answers as a graph built from every chunk,
and as the table a rebuild from scratch makes."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.callgraph import CallGraph, StoredEntities
from knowledge.cli import cli
from knowledge.kb import KnowledgeBase
from knowledge.store.local import LocalStore

from .conftest import HashingEmbedder, commit, git

FIXTURES = Path(__file__).parent / "fixtures" / "code"
LONG_BODY = "".join(f"    total = total + helper_{n % 3}(value, {n})\n" for n in range(400))
PROJECT = {
    **{f"src/{p.name}": p.read_text() for p in FIXTURES.iterdir() if p.is_file()},
    "pkg/__init__.py": "from .core import Engine\n",
    "pkg/core.py": "from pkg.util import helper_0, helper_1, helper_2\n\n\nclass Engine:\n"
    "    def run(self, value):\n        return self.step(value) + helper_0(value, 1)\n\n"
    "    def step(self, value):\n        return helper_1(value, 2)\n\n\n"
    f"def long_walk(value):\n    total = 0\n{LONG_BODY}    return total\n",
    "pkg/util.py": "def helper_0(value, n):\n    return value + n\n\n\ndef helper_1(value, n):\n"
    "    return helper_2(value, n)\n\n\ndef helper_2(value, n):\n    return value * n\n",
    "pkg/app.py": "from pkg import Engine\n\n\ndef main():\n    return Engine().run(3)\n",
    "native/buffer.hpp": "class Buffer {\npublic:\n    ~Buffer() { release_storage(); }\n"
    "    void reset() { release_storage(); }\nprivate:\n    void release_storage() { data_ = nullptr; }\n"
    "    char* data_ = nullptr;\n};\n\nvoid free_buffer(Buffer& b) { b.reset(); }\n",
}


def run(root, *args, expect=0):
    result = CliRunner().invoke(cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == expect, (result.output, result.exception)
    return result


def answers(root):
    """Every code entity's callees and callers, from the stored graph, checked against a graph of every chunk."""
    store = LocalStore.open(root, "code")
    try:
        assert store.keeps_calls()
        chunks = list(store.all_chunks().values())
        loaded, stored = CallGraph(chunks), CallGraph(StoredEntities(store))
        found = {}
        for chunk in chunks:
            pair = (stored.calls(chunk), stored.called_by(chunk))
            assert pair == (loaded.calls(chunk), loaded.called_by(chunk)), chunk.id
            found[chunk.id] = pair
        rows = sorted(
            (name, store.chunks([key])[key].id) for name, key in store.callers([n for c in chunks for n in c.calls])
        )
        return found, rows, lexical_rows(root, store)
    finally:
        store.close()


def lexical_rows(root, store):
    """What FTS5 holds, term by term and chunk by chunk: a delete that gave it back other terms than it was given
    leaves rows a rebuild does not have."""
    import sqlite3

    with sqlite3.connect(root / ".knowledge" / "code.sqlite") as db:
        db.execute("CREATE VIRTUAL TABLE temp.held USING fts5vocab(main, fts, 'instance')")
        held = db.execute("SELECT term, doc, count(*) FROM temp.held GROUP BY term, doc").fetchall()
    ids = {key: chunk.id for key, chunk in store.chunks(sorted({doc for _, doc, _ in held})).items()}
    assert len(ids) == len({doc for _, doc, _ in held}), "FTS5 holds a chunk the index does not"
    return sorted((term, ids[doc], count) for term, doc, count in held)


def test_the_stored_graph_after_every_kind_of_commit_is_the_graph_of_a_rebuild(git_repo):
    commit(git_repo, PROJECT, "start")
    run(git_repo, "reindex-all", "--quiet")
    answers(git_repo)
    steps = [
        lambda: commit(git_repo, {"pkg/util.py": PROJECT["pkg/util.py"].replace("helper_2(value, n)", "value")}),
        lambda: (git(git_repo, "mv", "pkg/app.py", "pkg/main_app.py"), git(git_repo, "commit", "-qm", "rename")),
        lambda: (git(git_repo, "rm", "-q", "native/buffer.hpp"), git(git_repo, "commit", "-qm", "delete")),
        lambda: commit(
            git_repo,
            {"pkg/extra.py": "from pkg.util import helper_1\n\ndef extra():\n    return helper_1(1, 2)\n"},
            "add",
        ),
        lambda: (git(git_repo, "checkout", "-q", "-b", "other", "HEAD~3"),),  # a branch switch: back before three
    ]
    for step in steps:
        step()
        run(git_repo, "reindex-from-changes", "--quiet")
        kept = answers(git_repo)
        run(git_repo, "reindex-all", "--quiet")
        assert answers(git_repo) == kept  # the same table and the same answers as a build from scratch


def test_a_method_defined_in_its_cpp_class_body_has_its_callers_and_callees(git_repo):
    commit(git_repo, {"native/buffer.hpp": PROJECT["native/buffer.hpp"]})
    run(git_repo, "reindex-all", "--quiet")
    store = LocalStore.open(git_repo, "code")
    graph = CallGraph(StoredEntities(store))
    entities = {c.symbol: c for c in store.chunks_of_path("native/buffer.hpp") if c.symbol}
    callers = {ref["name"] for ref in graph.called_by(entities["release_storage"])}
    assert callers == {"Buffer.~Buffer", "Buffer.reset"}
    assert [ref["name"] for ref in graph.calls(entities["reset"])] == ["Buffer.release_storage"]
    assert [ref["name"] for ref in graph.called_by(entities["reset"])] == ["free_buffer"]
    store.close()


def test_the_shared_store_reads_who_calls_what_by_name_and_answers_as_a_graph_of_every_chunk(
    git_repo, postgres_url, monkeypatch
):
    from knowledge.store.engines import PostgresEngine

    monkeypatch.setenv("KNOWLEDGE_STORE", postgres_url)
    commit(git_repo, PROJECT, "start")
    run(git_repo, "reindex-all", "--quiet")
    for step in (
        lambda: commit(git_repo, {"pkg/util.py": PROJECT["pkg/util.py"].replace("helper_2(value, n)", "value")}),
        lambda: (git(git_repo, "mv", "pkg/app.py", "pkg/main_app.py"), git(git_repo, "commit", "-qm", "rename")),
    ):
        step()
        run(git_repo, "reindex-from-changes", "--quiet")
        store = PostgresEngine(git_repo, postgres_url, "").open("code")
        assert store.keeps_calls()
        chunks = list(store.all_chunks().values())
        loaded, stored = CallGraph(chunks), CallGraph(StoredEntities(store))
        for chunk in chunks:
            assert (stored.calls(chunk), stored.called_by(chunk)) == (loaded.calls(chunk), loaded.called_by(chunk))
        run_by = {store.chunks([key])[key].symbol for _, key in store.callers(["module:pkg.util::helper_1"])}
        assert run_by == {"step", "long_walk"}  # as recorded; helper_1 itself calls helper_2
        store.close()


@pytest.mark.parametrize("engine", ["local", "postgres"])
def test_no_answer_of_search_or_locate_reads_every_chunk(git_repo, monkeypatch, request, engine):
    from knowledge.store.postgres import PostgresStore

    if engine == "postgres":
        monkeypatch.setenv("KNOWLEDGE_STORE", request.getfixturevalue("postgres_url"))
    commit(git_repo, PROJECT, "start")
    run(git_repo, "reindex-all", "--quiet")

    def everything(self):
        raise AssertionError("an answer read every chunk of the index")

    monkeypatch.setattr(LocalStore, "all_chunks", everything)
    monkeypatch.setattr(PostgresStore, "all_chunks", everything)
    said = run(git_repo, "search", "engine step helper", "--kind", "code", "--json", "--threshold", "0").stdout
    assert '"called_by"' in said
    run(git_repo, "search", "where is helper_1 called", "--kind", "code", "--expand", "--threshold", "0")
    issue = "Engine.run returns the wrong total\n\n```python\nfrom pkg import Engine\nEngine().run(3)\n```\n"
    result = CliRunner().invoke(
        cli, ["-C", str(git_repo), "locate", "-"], input=issue, obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 0, result.output
    assert "pkg/core.py" in result.output


@pytest.mark.parametrize("before", ["no calls table", "a row a call"])
def test_an_index_from_before_the_calls_table_answers_and_is_filled_by_its_next_write(git_repo, before):
    import sqlite3

    commit(git_repo, PROJECT, "start")
    run(git_repo, "reindex-all", "--quiet")
    kept = answers(git_repo)
    with sqlite3.connect(git_repo / ".knowledge" / "code.sqlite") as db:  # as 0d65f9d, then a904587, wrote it
        db.execute("DROP TABLE callers")
        db.execute("DROP TABLE call_names")
        db.execute("DELETE FROM meta WHERE name = 'calls_kept'")
        if before == "a row a call":
            db.execute("CREATE TABLE calls (key INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (key, name))")
            db.execute("INSERT INTO calls SELECT DISTINCT c.key, j.value FROM chunks c, json_each(c.data, '$.calls') j")
            db.execute("INSERT INTO meta VALUES ('calls_kept', '1')")
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    code = kb.index("code")
    assert code.store.keeps_calls() == (before == "a row a call")
    engine = next(c for c in code.store.chunks_of_path("pkg/core.py") if c.symbol == "Engine")
    assert kept[0][engine.id] == (code.call_graph().calls(engine), code.call_graph().called_by(engine))
    commit(git_repo, {"pkg/extra.py": "def extra():\n    return 1\n"}, "a write")
    run(git_repo, "reindex-from-changes", "--quiet")
    assert answers(git_repo)[1] == kept[1]


@pytest.mark.parametrize("language", ["java", "csharp"])
def test_implicit_receiver_calls_stay_inside_their_class(git_repo, language):
    sources = {
        "java": ("src/Pool.java", "class Pool {\n  void close() { drain(); }\n  void drain() { }\n}\n"
                 "class Other {\n  void drain() { }\n}\n"),
        "csharp": ("src/Pool.cs", "class Pool {\n  void Close() { Drain(); }\n  void Drain() { }\n}\n"
                   "class Other {\n  void Drain() { }\n}\n"),
    }  # fmt: skip
    path, text = sources[language]
    commit(git_repo, {path: text})
    run(git_repo, "reindex-all", "--quiet")
    store = LocalStore.open(git_repo, "code")
    graph = CallGraph(StoredEntities(store))
    by_id = {c.id: c for c in store.chunks_of_path(path)}
    closer = next(c for c in by_id.values() if c.symbol.lower() == "close")
    assert [ref["name"] for ref in graph.calls(closer)] == [f"Pool.{'drain' if language == 'java' else 'Drain'}"]
    other = next(c for c in by_id.values() if c.parent == "Other")
    assert graph.called_by(other) == ()
    store.close()


def test_a_call_by_name_lands_in_its_own_project_never_in_anothers_vendored_copy(git_repo):
    """Issue 68: in a monorepo one project's method listed as its callee a function of a library vendored inside
    another project."""
    commit(
        git_repo,
        {
            "shop/go.mod": "module example.com/shop\n",
            "shop/cart.go": "package shop\n\nfunc Checkout() int { return normalize(3) }\n",
            "shop/util.go": "package shop\n\nfunc normalize(n int) int { return n }\n",
            "billing/go.mod": "module example.com/billing\n",
            "billing/extern/lib/fmt/util.go": "package fmt\n\nfunc normalize(n int) int { return -n }\n",
            "billing/bill.go": "package billing\n\nfunc Total() int { return round(2) }\n",
            "tools/go.mod": "module example.com/tools\n",
            "tools/round.go": "package tools\n\nfunc round(n int) int { return n }\n",
        },
    )
    run(git_repo, "reindex-all", "--quiet")
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    code = kb.index("code")
    graph = code.call_graph()
    checkout = next(c for c in code.chunks_in("shop/cart.go") if c.symbol == "Checkout")
    assert [(ref["path"], ref["name"]) for ref in graph.calls(checkout)] == [("shop/util.go", "normalize")]
    vendored = next(c for c in code.chunks_in("billing/extern/lib/fmt/util.go") if c.symbol)
    assert graph.called_by(vendored) == ()
    total = next(c for c in code.chunks_in("billing/bill.go") if c.symbol == "Total")  # a sibling project's function
    assert [ref["path"] for ref in graph.calls(total)] == ["tools/round.go"]
    assert code.project_of("billing/extern/lib/fmt/util.go") == "billing"
    assert code.project_of("shop/util.go") == "shop"


def test_a_member_call_of_unknown_receiver_is_a_caller_only_within_the_methods_own_project(git_repo):
    """Issue 68: on the monorepo, pip's `Retry.sleep` listed Kong's Lua functions calling `ngx.sleep()` as callers."""
    commit(
        git_repo,
        {
            "pip/pyproject.toml": "[project]\nname = 'pip'\n",
            "pip/retry.py": "class Retry:\n    def sleep(self, seconds):\n        return seconds\n",
            "pip/pool.py": "def urlopen(retries):\n    retries.sleep(3)\n    return retries\n",
            "kong/kong-3.0.rockspec": "package = 'kong'\n",
            "kong/rpc.lua": "local function wait_ready()\n  ngx.sleep(1)\n  return true\nend\n",
            "kong/quit.lua": "local function execute(retries)\n  retries.sleep(2)\nend\n",
        },
    )
    run(git_repo, "reindex-all", "--quiet")
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    code = kb.index("code")
    sleep = next(c for c in code.chunks_in("pip/retry.py") if c.symbol == "sleep")
    assert [(ref["path"], ref["name"]) for ref in code.call_graph().called_by(sleep)] == [("pip/pool.py", "urlopen")]
