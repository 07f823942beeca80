"""An index sized to its content (issue 68): the lexical index keeps no copy of what it indexed (FTS5 contentless,
each chunk's terms made again from its row when FTS5 must be given them back), the static rows are float16 blocks, a
waiting chunk's embedding input is kept as its header and how much of its text follows, a call name is stored once,
a chunk id without the path it begins with; after any sequence of commits they answer as a rebuild's do, and an index
written before them keeps answering and is moved over by its next write."""

import hashlib
import sqlite3
import zlib
from dataclasses import replace

import numpy as np
import pytest

from knowledge.kb import KnowledgeBase
from knowledge.lexical import terms
from knowledge.store import chunk_to_compact_json, chunk_to_json, static_blocks
from knowledge.store.local import LocalStore
from knowledge.store.local_files import SYMBOL_KEY, chunk_from_row

from .conftest import HashingEmbedder, commit, git
from .test_callgraph_stored import PROJECT, lexical_rows
from .test_static_stage import StagedEmbedder

QUESTIONS = ["engine step helper", "release storage buffer", "total value helper", "main app run", "extra helper"]


def first_stage(root, fill=False):
    return KnowledgeBase.open(root, overrides={"fill": fill}, embedder_factory=lambda s: StagedEmbedder())


def reindex(root, everything=False):
    kb = first_stage(root)
    kb.reindex_all(embed=True) if everything else kb.reindex_changes(embed=False)


def answers(root):
    """Each question's lexical and static answers, by chunk id (keys differ between an updated index and a rebuild)."""
    store = LocalStore.open(root, "code")
    try:
        chunks = store.all_chunks()
        ids = {key: chunk.id for key, chunk in chunks.items()}
        static = HashingEmbedder()
        static.dims = store._static.current(store._db).dims
        found = {}
        for question in QUESTIONS:
            lexical = [(ids[hit.key], round(hit.score, 6)) for hit in store.lexical_search(terms(question), 50)]
            vector = static.embed_query(question)
            nearest = [(ids[hit.key], round(hit.score, 4)) for hit in store.static_search(vector, 10)]
            # ties fall in key order, and keys differ between an updated index and a rebuild
            found[question] = tuple(sorted(hits, key=lambda hit: (-hit[1], hit[0])) for hits in (lexical, nearest))
        found["terms"] = sorted((ids[key], body) for key, body in store.lexical_terms(list(ids)).items())
        found["held"] = lexical_rows(root, store)  # what FTS5 holds, which a wrong delete would leave behind
        found["by id"] = sorted(store.chunk_by_id(chunk_id).id for chunk_id in ids.values())
        # every field as read (but the commit each was indexed at: an update keeps the unchanged files' older one)
        found["chunks"] = sorted(repr(replace(chunk, commit="")) for chunk in chunks.values())
        return found
    finally:
        store.close()


def test_the_lexical_index_and_static_rows_after_every_kind_of_commit_answer_as_a_rebuild(git_repo):
    commit(git_repo, PROJECT, "start")
    reindex(git_repo, everything=True)
    steps = [
        lambda: commit(git_repo, {"pkg/util.py": PROJECT["pkg/util.py"].replace("helper_2(value, n)", "value")}),
        lambda: (git(git_repo, "mv", "pkg/app.py", "pkg/main_app.py"), git(git_repo, "commit", "-qm", "rename")),
        lambda: (git(git_repo, "rm", "-q", "native/buffer.hpp"), git(git_repo, "commit", "-qm", "delete")),
        lambda: commit(git_repo, {"pkg/extra.py": "def extra():\n    return helper_1(1, 2)\n"}, "add"),
        lambda: (git(git_repo, "checkout", "-q", "-b", "other", "HEAD~3"),),
    ]
    for step in steps:
        step()
        reindex(git_repo)
        kept = answers(git_repo)
        reindex(git_repo, everything=True)
        assert answers(git_repo) == kept
    db = sqlite3.connect(git_repo / ".knowledge" / "code.sqlite")
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "fts_content" not in tables  # no copy of the terms
    assert "lexical" not in tables
    assert {row[0] for row in db.execute("SELECT body FROM fts")} == {None}
    assert db.execute("SELECT count(*) FROM static").fetchone()[0] == 0
    blocks, rows = db.execute("SELECT count(*), sum(rows) FROM static_blocks").fetchone()
    assert blocks >= 1
    assert rows == db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    waiting = db.execute("SELECT embed_text, path FROM chunks WHERE embedded = 0").fetchall()
    assert waiting
    # the header less its path, and a count: a code chunk's input is its header (its path first) and its first lines
    assert all(
        text.startswith("\0") and "\1" in text and path not in text and len(text) < 200 for text, path in waiting
    )
    assert all(chunk_id.startswith("#") for (chunk_id,) in db.execute("SELECT chunk_id FROM chunks"))
    store = LocalStore.open(git_repo, "code")
    made_again = store.pending(10_000)
    store.close()
    assert len(made_again) == len(waiting)  # each input made again from its reference is the one its hash names
    assert all(hashlib.sha256(p.embed_text.encode()).hexdigest() == p.content_hash for p in made_again)


@pytest.mark.parametrize("before", ["0d65f9d", "a904587"])
def test_an_index_from_before_answers_and_its_next_write_moves_it_over(git_repo, before):
    """0d65f9d: its FTS5 table holds its terms, its static rows are float32 rows, its waiting texts plain, its chunks'
    every field in their JSON. a904587: its terms kept compressed beside a contentless FTS5, its waiting texts whole
    and compressed, a row a call, whole chunk ids found through their own index."""
    commit(git_repo, PROJECT, "start")
    reindex(git_repo, everything=True)
    path = git_repo / ".knowledge" / "code.sqlite"
    store = LocalStore.open(git_repo, "code")
    chunks = store.all_chunks()
    bodies = sorted(store.lexical_terms(list(chunks)).items())
    waiting = [(key, p.embed_text) for p in store.pending(10_000) for key in [p.key]]
    store.close()
    before_answers = answers(git_repo)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    db.execute("UPDATE chunks SET chunk_id = path || chunk_id")
    db.execute("CREATE INDEX chunks_by_id ON chunks(chunk_id)")
    # a row's fields as JSON in `data` (every one but the text, which is zlib-compressed in `content`), hex hashes,
    # the names chunks define found through an index of the JSON
    db.executemany(
        "UPDATE chunks SET data = ?, content = ?, content_hash = ? WHERE key = ?",
        [
            (
                chunk_to_compact_json(chunk, frozenset({"id", "path", "content_hash", "content"})),
                zlib.compress(chunk.content.encode()),
                chunk.content_hash,
                key,
            )
            for key, chunk in chunks.items()
        ],
    )
    db.execute("DROP INDEX chunks_by_symbol_key")
    db.execute("ALTER TABLE chunks DROP COLUMN symbol_key")
    db.execute("ALTER TABLE chunks DROP COLUMN fill_rank")
    db.execute(f"CREATE INDEX chunks_by_symbol ON chunks({SYMBOL_KEY})")
    db.execute("DROP TABLE callers")
    db.execute("DROP TABLE call_names")
    db.execute("DELETE FROM meta WHERE name IN ('calls_kept', 'terms_made_by')")
    if before == "a904587":
        db.execute("CREATE TABLE lexical (key INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        db.executemany("INSERT INTO lexical VALUES (?, ?)", [(k, zlib.compress(b.encode())) for k, b in bodies])
        db.execute("CREATE TABLE calls (key INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (key, name))")
        db.execute("INSERT INTO calls SELECT DISTINCT c.key, j.value FROM chunks c, json_each(c.data, '$.calls') j")
        db.execute("INSERT INTO meta VALUES ('calls_kept', '1')")
        db.executemany(
            "UPDATE chunks SET embed_text = ? WHERE key = ?", [(zlib.compress(t.encode()), k) for k, t in waiting]
        )
    else:
        db.execute("DROP TABLE fts")
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize=\"porter unicode61 tokenchars '_'\")")
        db.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", bodies)
        found = static_blocks.read(db)
        assert found is not None
        db.executemany(
            "INSERT INTO static (key, vector) VALUES (?, ?)",
            [(int(k), (codes * scale).astype(np.float32).tobytes()) for k, codes, scale in zip(*found, strict=True)],
        )
        db.execute("DELETE FROM static_blocks")
        db.executemany("UPDATE chunks SET embed_text = ? WHERE key = ?", [(t, k) for k, t in waiting])
        rows = db.execute("SELECT key, chunk_id, path, content_hash, data, content FROM chunks").fetchall()
        whole = [(chunk_to_json(chunk_from_row(*row)), key) for key, *row in rows]  # every field in the JSON
        db.executemany("UPDATE chunks SET data = ?, content = NULL WHERE key = ?", whole)
    db.execute("COMMIT")
    assert answers(git_repo) == before_answers  # read as it is
    commit(git_repo, {"pkg/util.py": PROJECT["pkg/util.py"].replace("helper_2(value, n)", "value")})
    reindex(git_repo)
    kept = answers(git_repo)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert not {"lexical", "calls", "chunks_by_id"} & tables  # moved over by the write
    assert db.execute("SELECT count(*) FROM chunks WHERE symbol_key IS NOT NULL").fetchone()[0] > 0  # new rows
    assert db.execute("SELECT count(*) FROM static").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM static_blocks").fetchone()[0] >= 1
    filled = first_stage(git_repo, fill=True).embed_pending()
    assert filled.embedded + filled.reused > 0  # waiting texts written before still fill
    reindex(git_repo, everything=True)
    rebuilt = answers(git_repo)
    assert {q: kept[q][0] for q in QUESTIONS} == {q: rebuilt[q][0] for q in QUESTIONS}
    for part in ("terms", "chunks", "by id") + (("held",) if before == "a904587" else ()):
        assert kept[part] == rebuilt[part], part


def test_an_index_carried_forward_answers_as_a_fresh_one_at_the_same_commit(git_repo):
    """A chunk is read as of the commit its index reflects: the files a change left alone do not keep an older one
    that every result would then have to carry (and pay for in the budget)."""
    from .test_callgraph_stored import run

    commit(git_repo, PROJECT, "start")
    run(git_repo, "reindex-all", "--quiet")
    commit(git_repo, {"pkg/extra.py": "def extra():\n    return helper_1(1, 2)\n"}, "add")
    run(git_repo, "reindex-from-changes", "--quiet")
    question = ["search", "engine step helper value", "--kind", "code", "--json", "--threshold", "0"]
    carried = run(git_repo, *question).stdout
    run(git_repo, "reindex-all", "--quiet")
    assert run(git_repo, *question).stdout == carried
    assert git(git_repo, "rev-parse", "HEAD").strip() in carried
