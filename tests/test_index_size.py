"""An index sized to its content (issue 68): the lexical index keeps no second copy of what it indexed (FTS5
contentless, each chunk's terms kept once, compressed), the static rows are float16 blocks, a waiting chunk's
embedding input is compressed; after any sequence of commits they answer as a rebuild's do, and an index written
before them keeps answering and is moved over by its next write."""

import sqlite3
import zlib
from dataclasses import replace

import numpy as np

from knowledge.kb import KnowledgeBase
from knowledge.lexical import terms
from knowledge.store import chunk_to_json, static_blocks
from knowledge.store.local import LocalStore
from knowledge.store.local_files import chunk_from_row

from .conftest import HashingEmbedder, commit, git
from .test_callgraph_stored import PROJECT
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
    assert "fts_content" not in tables  # FTS5 holds no copy of the terms
    assert {row[0] for row in db.execute("SELECT body FROM fts")} == {None}
    assert db.execute("SELECT count(*) FROM static").fetchone()[0] == 0
    blocks, rows = db.execute("SELECT count(*), sum(rows) FROM static_blocks").fetchone()
    assert blocks >= 1
    assert rows == db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    waiting = db.execute("SELECT embed_text FROM chunks WHERE embedded = 0").fetchall()
    assert waiting
    assert all(isinstance(text, bytes) and zlib.decompress(text) for (text,) in waiting)


def test_an_index_from_before_answers_and_its_next_write_moves_it_over(git_repo):
    """Its FTS5 table holds its terms, its static rows are float32 rows, its waiting texts plain, its chunks' every
    field in their JSON."""
    commit(git_repo, PROJECT, "start")
    reindex(git_repo, everything=True)
    path = git_repo / ".knowledge" / "code.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    bodies = db.execute("SELECT key, body FROM lexical ORDER BY key").fetchall()
    before = answers(git_repo)
    db.execute("BEGIN")
    db.execute("DROP TABLE fts")
    db.execute("DROP TABLE lexical")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize=\"porter unicode61 tokenchars '_'\")")
    db.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", [(k, zlib.decompress(b).decode()) for k, b in bodies])
    found = static_blocks.read(db)
    assert found is not None
    db.executemany(
        "INSERT INTO static (key, vector) VALUES (?, ?)",
        [(int(k), row.astype(np.float32).tobytes()) for k, row in zip(*found, strict=True)],
    )
    db.execute("DELETE FROM static_blocks")
    texts = db.execute("SELECT key, embed_text FROM chunks WHERE embed_text IS NOT NULL").fetchall()
    db.executemany(
        "UPDATE chunks SET embed_text = ? WHERE key = ?", [(zlib.decompress(t).decode(), k) for k, t in texts]
    )
    rows = db.execute("SELECT key, chunk_id, path, content_hash, data, content FROM chunks").fetchall()
    whole = [(chunk_to_json(chunk_from_row(*row)), key) for key, *row in rows]  # every field in the JSON
    db.executemany("UPDATE chunks SET data = ?, content = NULL WHERE key = ?", whole)
    db.execute("COMMIT")
    assert answers(git_repo) == before  # read as it is
    commit(git_repo, {"pkg/util.py": PROJECT["pkg/util.py"].replace("helper_2(value, n)", "value")})
    reindex(git_repo)
    kept = answers(git_repo)
    assert db.execute("SELECT count(*) FROM static").fetchone()[0] == 0  # moved into blocks by the write
    assert db.execute("SELECT count(*) FROM static_blocks").fetchone()[0] >= 1
    filled = first_stage(git_repo, fill=True).embed_pending()
    assert filled.embedded + filled.reused > 0  # plain waiting texts still fill
    reindex(git_repo, everything=True)
    rebuilt = answers(git_repo)
    assert {q: kept[q][0] for q in QUESTIONS} == {q: rebuilt[q][0] for q in QUESTIONS}
    assert kept["terms"] == rebuilt["terms"]
    assert kept["chunks"] == rebuilt["chunks"]
