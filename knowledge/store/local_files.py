"""The files of a LocalStore under `.knowledge/`: their paths, the SQLite schema and connection, transactions, the
`<kind>.meta.json` description, and what killed writers leave behind."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

from ..fs import atomic_write
from ..quiet import is_quiet
from ..records import Chunk
from . import (
    FORMAT_VERSION,
    Manifest,
    StoreSummary,
    chunk_from_dict,
    chunk_to_compact_json,
    index_dir,
    policy,
    static_blocks,
)
from .vectors import SnapshotIdentity, remove_stale_temp_files, snapshot_file_problem

FTS_TOKENIZER = "porter unicode61 tokenchars '_'"
# The name a code chunk defines, as the ranking rules compare names: lower case (SQLite's lower(): ASCII letters), no
# underscores; kept in `symbol_key`, computed from the JSON in the rows of an index from before the column.
SYMBOL_KEY = "lower(replace(json_extract(data, '$.symbol'), '_', ''))"
SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    key INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL, data TEXT NOT NULL,
    embed_text TEXT, chars INTEGER NOT NULL DEFAULT 0, embedded INTEGER NOT NULL DEFAULT 0,
    in_snapshot INTEGER NOT NULL DEFAULT 0, content BLOB, symbol_key TEXT, fill_rank INTEGER);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(key) WHERE embedded = 0;
CREATE INDEX IF NOT EXISTS chunks_by_symbol_key ON chunks(symbol_key) WHERE symbol_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ns INTEGER, size INTEGER);
CREATE TABLE IF NOT EXISTS problems (path TEXT NOT NULL, problem TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS problems_by_path ON problems(path);
CREATE TABLE IF NOT EXISTS delta (seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER UNIQUE NOT NULL, vector BLOB);
CREATE TABLE IF NOT EXISTS tombstones (key INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS static (key INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, content='', tokenize="{tokenizer}");
CREATE TABLE IF NOT EXISTS call_names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS callers (name_id INTEGER NOT NULL, key INTEGER NOT NULL, PRIMARY KEY (name_id, key))
    WITHOUT ROWID;
""".replace("{tokenizer}", FTS_TOKENIZER)
    + ";\n".join(static_blocks.SCHEMA)
)


# The order chunks get their transformer vectors: what is most likely asked first. Code before its tests; public
# entities, then other named entities, then the lines between them (a doc index fills before the code's). The files
# changed lately come before all of it, most recent first (`first` of `pending`, see `recent_first`).
FILL_ORDER = (  # policy.FILL_ORDER in SQLite (`quiet` is policy's rule, registered on every connection)
    "quiet(path), coalesce(fill_rank, CASE WHEN json_extract(data, '$.exported') = 1 THEN 0 "
    "WHEN json_extract(data, '$.symbol') != '' THEN 1 ELSE 2 END), key"
)


# A chunk's row: its id (less its path, which it begins with), path and content hash (32 bytes) in their columns, and
# in `content` one zlib stream (behind a PACKED_ROW byte, with ROW_DICTIONARY) of a JSON document of the fields that
# differ from their defaults and the chunk's text: a row of 400 characters of code is ~300 bytes. What SQL reads of
# the fields has columns: the name a chunk defines (`symbol_key`) and its place in the fill (`fill_rank`). The JSON
# leaves out an empty description and the commit: a chunk is read as of the commit its index reflects, so a
# carried-forward index answers as a fresh one. Indexes from before hold the JSON in `data`, with the text
# zlib-compressed in `content` or (older) in the JSON, whole ids and hex hashes; all are read alike.
CHUNK_COLUMNS = "chunk_id, path, content_hash, data, content"
WRITTEN_COLUMNS = f"{CHUNK_COLUMNS}, symbol_key, fill_rank"
PACKED_ROW = b"\x01"  # never a zlib stream's first byte
# Strings rows share, which zlib finds without each row spelling them first. Never changed: rows written with it are
# read with it (another dictionary needs another PACKED_ROW byte).
ROW_DICTIONARY = (
    b'"decorators":["@","exported":false,"names":["references":["tags":["description":"'
    b'"language":"typescript","language":"javascript","language":"java","language":"go","language":"rust",'
    b'"language":"c","language":"cpp","language":"csharp","language":"ruby","language":"php","language":"python",'
    b'"section":"lines","symbol_kind":"class","section":"class","symbol_kind":"method","section":"method",'
    b'"symbol_kind":"function","section":"function","parent":"","exported":true,"calls":["'
    b'{"kind":"doc","title":"","section":"{"kind":"code","title":"","line_start":1,"line_end":1'
)
_IN_COLUMNS = frozenset({"id", "path", "content_hash", "content", "commit"})
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def chunk_row(chunk: Chunk) -> tuple[str, str, bytes | str, str, bytes, str | None, int]:
    """The values of WRITTEN_COLUMNS for `chunk`."""
    fields = chunk_to_compact_json(chunk, _IN_COLUMNS | ({"description"} if not chunk.description else set()))
    stored_id = chunk.id[len(chunk.path) :] if chunk.id.startswith(f"{chunk.path}#") else chunk.id
    packer = zlib.compressobj(6, zdict=ROW_DICTIONARY)
    packed = PACKED_ROW + packer.compress(f"{fields}\0{chunk.content}".encode()) + packer.flush()
    symbol_key = chunk.symbol.replace("_", "").translate(_ASCII_LOWER) or None
    rank = policy.fill_key(chunk.path, chunk.exported is True, chunk.symbol, 0)[1]
    return stored_id, chunk.path, packed_digest(chunk.content_hash), "{}", packed, symbol_key, rank


def row_fields(data: str, content: bytes | None) -> tuple[str, str | None]:
    """(JSON of the fields, text) of a row of any form; the text None where (oldest form) the JSON holds it."""
    if content is None:
        return data, None
    if content[:1] == PACKED_ROW:
        unpacker = zlib.decompressobj(zdict=ROW_DICTIONARY)
        fields, _, text = (unpacker.decompress(content[1:]) + unpacker.flush()).decode().partition("\0")
        return fields, text
    return data, unpacked_text(content)


def chunk_from_row(
    chunk_id: str, path: str, content_hash: bytes | str, data: str, content: bytes | None, *, commit: str | None = None
) -> Chunk:
    """`commit`: the one the index reflects, which a row of an index from before holds itself."""
    data, text = row_fields(data, content)
    fields = {"description": "", "commit": commit, **json.loads(data)}
    fields.update(id=path + chunk_id if chunk_id.startswith("#") else chunk_id, path=path)
    fields["content_hash"] = unpacked_digest(content_hash)
    if text is not None:
        fields["content"] = text
    return chunk_from_dict(fields)


def packed_digest(digest: str) -> bytes | str:
    return bytes.fromhex(digest) if len(digest) == 64 else digest


def unpacked_digest(stored: bytes | str) -> str:
    return stored.hex() if isinstance(stored, bytes) else stored


def chunk_by_id(db: sqlite3.Connection, chunk_id: str, commit: str | None) -> Chunk | None:
    """Found by its path, which its id begins with (a path may hold `#` itself)."""
    paths = [chunk_id[:at] for at, char in enumerate(chunk_id) if char == "#"]
    rows = db.execute(
        f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE path IN ({','.join('?' * len(paths))}) "
        "AND chunk_id IN (?, substr(?, length(path) + 1))",
        (*paths, chunk_id, chunk_id),
    ).fetchall()
    return next((chunk for row in rows if (chunk := chunk_from_row(*row, commit=commit)).id == chunk_id), None)


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
    """What an index from before them lacks: the symbol index, the chunks' packed text and the columns SQL reads,
    the static rows, the tables of calls (filled by its next write: `local_derived.upgrade_derived`)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
    if "content" not in columns:
        db.execute("ALTER TABLE chunks ADD COLUMN content BLOB")
    if "symbol_key" not in columns:  # its rows' names are read from their JSON (`defining`)
        db.execute(f"CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks({SYMBOL_KEY})")
        db.execute("ALTER TABLE chunks ADD COLUMN symbol_key TEXT")
        db.execute("ALTER TABLE chunks ADD COLUMN fill_rank INTEGER")
    db.execute("CREATE INDEX IF NOT EXISTS chunks_by_symbol_key ON chunks(symbol_key) WHERE symbol_key IS NOT NULL")
    db.execute("CREATE TABLE IF NOT EXISTS static (key INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS call_names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS callers (name_id INTEGER NOT NULL, key INTEGER NOT NULL, "
        "PRIMARY KEY (name_id, key)) WITHOUT ROWID"
    )
    for statement in static_blocks.SCHEMA:
        db.execute(statement)
    static_blocks.add_form_column(db)


def upgrade_tables(db: sqlite3.Connection) -> None:
    """An index from before the static blocks gets its rows moved into them, and its index of chunk ids (a chunk is
    found by its path, which its id begins with) dropped, once, in a write (the caller's transaction)."""
    static_blocks.move_rows_once(db)
    db.execute("DROP INDEX IF EXISTS chunks_by_id")


def packed_text(text: str) -> bytes:
    """Text kept compressed (zlib); an index from before it holds the plain text, which `unpacked_text` passes
    through."""
    return zlib.compress(text.encode("utf-8"), 1)


def unpacked_text(stored: str | bytes | None) -> str:
    if isinstance(stored, bytes):
        return zlib.decompress(stored).decode("utf-8")
    return stored or ""


# A chunk's embedding input as it waits for its vector. It is a header (which begins with the chunk's path) and then
# the chunk's text or its first lines, so it is kept as the header, less the path, and how many characters of the text
# follow it (`\0<count>\1<header less the path>`, or `\0<count>\0<header>`); one that is not is kept whole,
# compressed.
def packed_embed_text(embed_text: str, content: str, path: str) -> str | bytes:
    probe = content[:64]
    at = embed_text.find(probe) if probe else -1
    while at >= 0:
        if content.startswith(embed_text[at:]):
            header = embed_text[:at]
            if header.startswith(path):
                return f"\0{len(embed_text) - at}\1{header[len(path) :]}"
            return f"\0{len(embed_text) - at}\0{header}"
        at = embed_text.find(probe, at + 1)
    return packed_text(embed_text)


def unpacked_embed_text(stored: str | bytes | None, path: str, data: str, content: bytes | None) -> str:
    if isinstance(stored, str) and stored.startswith("\0"):
        count, mark, header = re.split("([\0\1])", stored[1:], maxsplit=1)
        return (path if mark == "\1" else "") + header + (row_fields(data, content)[1] or "")[: int(count)]
    return unpacked_text(stored)


def pending_rows(
    db: sqlite3.Connection, first: Sequence[str], limit: int, skip: Sequence[str] = ()
) -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str, str, str]]]:
    """(key, content hash, embed text, path) of the chunks waiting for vectors, none of the files in `skip`: those of
    the files in `first`, then up to `limit` in all of the others, each in fill order."""
    paths, skipped = json.dumps(list(first)), json.dumps(list(skip))
    select = (
        "SELECT key, content_hash, embed_text, path, data, content FROM chunks WHERE embedded = 0 "
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


def _unpacked(
    rows: list[tuple[int, str, str | bytes | None, str, str, bytes | None]],
) -> list[tuple[int, str, str, str]]:
    return [
        (key, unpacked_digest(digest), unpacked_embed_text(text, path, data, content), path)
        for key, digest, text, path, data, content in rows
    ]


def chunk_texts(database: Path) -> Iterator[tuple[str, str]]:
    """Every chunk's path and shown text in the index file `database`, by path, a page at a time (what a snapshot's
    import checks against the files; a million chunks' texts are never held at once)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
        packed = "content" if "content" in columns else "NULL"
        cursor = db.execute(f"SELECT path, data, {packed} FROM chunks ORDER BY path")
        while page := cursor.fetchmany(4096):
            for path, data, content in page:
                fields, text = row_fields(data, content)
                yield str(path), text if text is not None else str(json.loads(fields).get("content", ""))


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
