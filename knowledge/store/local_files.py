"""The files of a LocalStore under `.knowledge/`: their paths, the SQLite schema and connection, transactions, the
`<kind>.meta.json` description, and what killed writers leave behind."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

from ..fs import atomic_write
from ..quiet import is_quiet
from ..records import Chunk
from . import FORMAT_VERSION, Manifest, StoreSummary, chunk_from_dict, chunk_to_compact_json, index_dir, static_blocks
from .vectors import SnapshotIdentity, remove_stale_temp_files, snapshot_file_problem

FTS_TOKENIZER = "porter unicode61 tokenchars '_'"
# The name a code chunk defines, as the ranking rules compare names: lower case, no underscores.
SYMBOL_KEY = "lower(replace(json_extract(data, '$.symbol'), '_', ''))"
SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    key INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL, data TEXT NOT NULL,
    embed_text TEXT, chars INTEGER NOT NULL DEFAULT 0, embedded INTEGER NOT NULL DEFAULT 0,
    in_snapshot INTEGER NOT NULL DEFAULT 0, content BLOB);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_id ON chunks(chunk_id);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(key) WHERE embedded = 0;
CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks({symbol});
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ns INTEGER, size INTEGER);
CREATE TABLE IF NOT EXISTS problems (path TEXT NOT NULL, problem TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS problems_by_path ON problems(path);
CREATE TABLE IF NOT EXISTS delta (seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER UNIQUE NOT NULL, vector BLOB);
CREATE TABLE IF NOT EXISTS tombstones (key INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS static (key INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, content='', tokenize="{tokenizer}");
CREATE TABLE IF NOT EXISTS lexical (key INTEGER PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS calls (key INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (key, name)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS calls_by_name ON calls(name);
""".replace("{symbol}", SYMBOL_KEY).replace("{tokenizer}", FTS_TOKENIZER)
    + ";\n".join(static_blocks.SCHEMA)
)


# The order chunks get their transformer vectors: what is most likely asked first. Code before its tests; public
# entities, then other named entities, then the lines between them (a doc index fills before the code's). The files
# changed lately come before all of it, most recent first (`first` of `pending`, see `recent_first`).
FILL_ORDER = (  # policy.FILL_ORDER in SQLite (`quiet` is policy's rule, registered on every connection)
    "quiet(path), CASE WHEN json_extract(data, '$.exported') = 1 THEN 0 "
    "WHEN json_extract(data, '$.symbol') != '' THEN 1 ELSE 2 END, key"
)


# Who calls what, one row a call a chunk makes (as recorded: `f`, `.f`, `path::Qual`), kept by every write: the call
# graph reads the callers of a name by key instead of every chunk (`calls_kept` in meta: an index from before it
# has the table filled by its next write)
CALLS_KEPT = "calls_kept"
FILL_CALLS = (
    "INSERT INTO calls (key, name) SELECT DISTINCT c.key, j.value FROM chunks c, json_each(c.data, '$.calls') j"
)


# A chunk's row: its id, path and content hash in their columns, its text zlib-compressed in `content`, the rest a JSON
# document of the fields that differ from their defaults; an index from before it keeps every field in the JSON
# (`content` NULL), and both are read alike.
CHUNK_COLUMNS = "chunk_id, path, content_hash, data, content"
_IN_COLUMNS = frozenset({"id", "path", "content_hash", "content"})


def chunk_row(chunk: Chunk) -> tuple[str, str, str, str, bytes]:
    """The values of CHUNK_COLUMNS for `chunk`."""
    data = chunk_to_compact_json(chunk, _IN_COLUMNS)
    return chunk.id, chunk.path, chunk.content_hash, data, zlib.compress(chunk.content.encode("utf-8"), 6)


def chunk_from_row(chunk_id: str, path: str, content_hash: str, data: str, content: bytes | None) -> Chunk:
    fields = json.loads(data)
    fields.update(id=chunk_id, path=path, content_hash=content_hash)
    if content is not None:
        fields["content"] = unpacked_text(content)
    return chunk_from_dict(fields)


def store_paths(root: Path, kind: str) -> tuple[Path, Path, Path]:
    """(`<kind>.usearch`, `<kind>.meta.json`, `<kind>.sqlite`)."""
    folder = index_dir(root)
    return folder / f"{kind}.usearch", folder / f"{kind}.meta.json", folder / f"{kind}.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
    db.create_function("quiet", 1, is_quiet, deterministic=True)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def read_meta(db: sqlite3.Connection, name: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def index_files_problem(folder: Path, kind: str) -> str | None:
    """What keeps `kind`'s files in `folder` from being opened as an index (a snapshot's, before it replaces the
    working one): the database must open and hold the schema, and the vector file must be the one it records."""
    database = folder / f"{kind}.sqlite"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            db.execute("SELECT count(*) FROM chunks").fetchone()
            recorded = read_meta(db, "snapshot")
        identity = SnapshotIdentity.from_json(json.loads(recorded or "null"))
    except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        return f"{kind}.sqlite is not a readable index ({exc})"
    vectors = folder / f"{kind}.usearch"
    if identity is None or not identity.count:
        return f"{kind}.usearch is there but {kind}.sqlite records no vectors" if vectors.exists() else None
    if not vectors.is_file():
        return f"{kind}.sqlite records {identity.count:,} vectors, and {kind}.usearch is missing"
    return snapshot_file_problem(vectors, identity)


def add_later_tables(db: sqlite3.Connection) -> None:
    """What an index from before them lacks: the symbol index, the chunks' packed text, the static rows, the calls
    table."""
    db.execute(f"CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks({SYMBOL_KEY})")
    if "content" not in {row[1] for row in db.execute("PRAGMA table_info(chunks)")}:
        db.execute("ALTER TABLE chunks ADD COLUMN content BLOB")
    db.execute("CREATE TABLE IF NOT EXISTS static (key INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS calls (key INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (key, name)) "
        "WITHOUT ROWID"
    )
    db.execute("CREATE INDEX IF NOT EXISTS calls_by_name ON calls(name)")
    for statement in static_blocks.SCHEMA:
        db.execute(statement)


def upgrade_tables(db: sqlite3.Connection) -> None:
    """An index from before the calls table gets it filled from its chunks, and one from before the static blocks
    gets its rows moved into them, once, in a write (the caller's transaction)."""
    static_blocks.move_rows_once(db)
    if read_meta(db, CALLS_KEPT) != "1":
        db.execute("DELETE FROM calls")
        db.execute(FILL_CALLS)
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (CALLS_KEPT,))


def packed_text(text: str) -> bytes:
    """A chunk's embedding input as it waits for its vector: zlib-compressed (a third of its size, read once by the
    fill); an index from before it holds the plain text, which `unpacked_text` passes through."""
    return zlib.compress(text.encode("utf-8"), 1)


def unpacked_text(stored: str | bytes | None) -> str:
    if isinstance(stored, bytes):
        return zlib.decompress(stored).decode("utf-8")
    return stored or ""


def pending_rows(
    db: sqlite3.Connection, first: Sequence[str], limit: int, skip: Sequence[str] = ()
) -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str, str, str]]]:
    """(key, content hash, embed text, path) of the chunks waiting for vectors, none of the files in `skip`: those of
    the files in `first`, then up to `limit` in all of the others, each in fill order."""
    paths, skipped = json.dumps(list(first)), json.dumps(list(skip))
    select = (
        "SELECT key, content_hash, embed_text, path FROM chunks WHERE embedded = 0 "
        "AND path NOT IN (SELECT value FROM json_each(?))"
    )
    recent = db.execute(
        f"{select} AND path IN (SELECT value FROM json_each(?)) ORDER BY {FILL_ORDER}", (skipped, paths)
    ).fetchall()
    rest = db.execute(
        f"{select} AND path NOT IN (SELECT value FROM json_each(?)) ORDER BY {FILL_ORDER} LIMIT ?",
        (skipped, paths, max(0, limit - len(recent))),
    ).fetchall()
    return _unpacked(recent), _unpacked(rest)


def _unpacked(rows: list[tuple[int, str, str | bytes | None, str]]) -> list[tuple[int, str, str, str]]:
    return [(key, digest, unpacked_text(text), path) for key, digest, text, path in rows]


# The lexical index keeps no copy of what it indexed (FTS5 contentless): each chunk's terms are kept once, compressed,
# in `lexical`, which FTS5's own delete is given back (an index from before it has FTS5 keep them, uncompressed).
def contentless(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = 'fts'").fetchone()
    return row is not None and "content=''" in row[0]


def add_lexical(db: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
    db.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", rows)
    if contentless(db):
        db.executemany("INSERT INTO lexical (key, body) VALUES (?, ?)", [(k, packed_text(body)) for k, body in rows])


def lexical_bodies(
    db: sqlite3.Connection, keys: Sequence[int] | None = None, after: int = -1
) -> Iterator[tuple[int, str]]:
    """(key, indexed terms) of `keys`, or of every chunk above `after` in key order."""
    table, key = ("lexical", "key") if contentless(db) else ("fts", "rowid")
    if keys is None:
        cursor = db.execute(f"SELECT {key}, body FROM {table} WHERE {key} > ? ORDER BY {key}", (after,))
    else:
        cursor = db.execute(f"SELECT {key}, body FROM {table} WHERE {key} IN ({','.join('?' * len(keys))})", list(keys))
    return ((int(found), unpacked_text(body)) for found, body in cursor)


def _forget_lexical(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    if not contentless(db):
        db.executemany("DELETE FROM fts WHERE rowid = ?", [(key,) for key in keys])
        return
    for start in range(0, len(keys), 500):
        gone = list(lexical_bodies(db, keys[start : start + 500]))
        db.executemany("INSERT INTO fts (fts, rowid, body) VALUES ('delete', ?, ?)", gone)
    db.executemany("DELETE FROM lexical WHERE key = ?", [(key,) for key in keys])


def forget_path(db: sqlite3.Connection, path: str) -> bool:
    """Everything of one file out of the index (the caller's transaction); whether a vector left the delta or the
    snapshot (the dense side then reads its delta afresh)."""
    rows = db.execute("SELECT key, in_snapshot FROM chunks WHERE path = ?", (path,)).fetchall()
    removed_vector = False
    if rows:
        keys = [(key,) for key, _ in rows]
        db.executemany("INSERT OR IGNORE INTO tombstones (key) VALUES (?)", [(k,) for k, s in rows if s])
        deleted = db.executemany("DELETE FROM delta WHERE key = ?", keys).rowcount
        removed_vector = deleted > 0 or any(s for _, s in rows)
        for table, column in (("static", "key"), ("calls", "key"), ("chunks", "key")):
            db.executemany(f"DELETE FROM {table} WHERE {column} = ?", keys)
        _forget_lexical(db, [key for key, _ in rows])
        static_blocks.remove(db, [key for key, _ in rows])
    db.execute("DELETE FROM files WHERE path = ?", (path,))
    db.execute("DELETE FROM problems WHERE path = ?", (path,))
    return removed_vector


def callers_of(db: sqlite3.Connection, calls: Sequence[str]) -> list[tuple[str, int]]:
    """(call, key) of the chunks making one of `calls`, by key."""
    unique = list(dict.fromkeys(calls))
    found: list[tuple[str, int]] = []
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        rows = db.execute(f"SELECT name, key FROM calls WHERE name IN ({','.join('?' * len(part))})", part)
        found += [(str(name), int(key)) for name, key in rows]
    return sorted(found, key=lambda row: row[1])


def chunk_texts(database: Path) -> Iterator[tuple[str, str]]:
    """Every chunk's path and shown text in the index file `database`, by path, a page at a time (what a snapshot's
    import checks against the files; a million chunks' texts are never held at once)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
        packed = "content" if "content" in columns else "NULL"
        cursor = db.execute(f"SELECT path, json_extract(data, '$.content'), {packed} FROM chunks ORDER BY path")
        while page := cursor.fetchmany(4096):
            yield from ((str(path), unpacked_text(packed) or str(plain or "")) for path, plain, packed in page)


def remove_leftovers(folder: Path) -> None:
    """What killed writers left: half-built stores and snapshot temp files (the caller holds the writer lock)."""
    remove_stale_temp_files(folder)
    for building in folder.glob(".*.sqlite.building*"):
        with contextlib.suppress(OSError):
            building.unlink()


def write_meta_json(root: Path, kind: str, manifest: Manifest, summary: StoreSummary) -> None:
    """`<kind>.meta.json`: the manifest and counts, for people and other tools (SQLite holds the authoritative copy)."""
    atomic_write(
        store_paths(root, kind)[1],
        json.dumps(
            {
                "format_version": FORMAT_VERSION,
                "manifest": asdict(manifest),
                "store": f"{kind}.sqlite",
                "vectors": f"{kind}.usearch",
                "files": summary.files,
                "chunks": summary.chunks,
            },
            indent=2,
        ),
    )
