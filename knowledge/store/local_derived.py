"""What a LocalStore derives from each chunk and keeps beside it, in the caller's transaction: the chunk's terms in
the FTS5 index and the names it calls. Neither is stored twice: FTS5 keeps no copy of what it indexed (contentless)
and a chunk's terms are computed again from its row when FTS5 must be given them back; a call name is stored once
and each call is a pair of integers."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence

from ..records import Chunk
from . import static_blocks
from .local_files import CHUNK_COLUMNS, chunk_from_row, read_meta, unpacked_text, upgrade_tables

# The form of the calls kept (`calls_kept` in meta): "2" call_names + callers; "1" one `calls` row a call with its
# name (an index from before, read as it is until its next write moves it); none: an index from before both.
CALLS_KEPT = "calls_kept"
CALLS_FORM = "2"
# Which `lexical.terms` built the FTS5 index: the terms FTS5 is given back on a delete must be the ones it was given,
# so an index whose terms were made otherwise has its FTS5 rows made again by its next write.
TERMS_MADE_BY = "terms_made_by"
_TERMS_PROBE = (
    "src/pkg/mod.py\nHTTPServer.reindexChanges get_json kebab-case a.b.c/d:e\nThe quick über naïve 42 x_1 __init__"
)


def terms_fingerprint() -> str:
    from ..lexical import terms  # a leaf; imported here to keep the store's import cheap

    return hashlib.sha256(" ".join(terms(_TERMS_PROBE)).encode("utf-8")).hexdigest()[:16]


def contentless(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = 'fts'").fetchone()
    return row is not None and "content=''" in row[0]


def _kept_terms(db: sqlite3.Connection) -> bool:
    """An index from before: each chunk's terms kept compressed in `lexical` (until its next write)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'lexical'").fetchone() is not None


def add_lexical(db: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
    db.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", rows)


def lexical_bodies(
    db: sqlite3.Connection, keys: Sequence[int] | None = None, after: int = -1
) -> Iterator[tuple[int, str]]:
    """(key, indexed terms) of `keys`, or of every chunk above `after` in key order."""
    if not contentless(db) or _kept_terms(db):
        table, key = ("lexical", "key") if contentless(db) else ("fts", "rowid")
        if keys is None:
            cursor = db.execute(f"SELECT {key}, body FROM {table} WHERE {key} > ? ORDER BY {key}", (after,))
        else:
            marks = ",".join("?" * len(keys))
            cursor = db.execute(f"SELECT {key}, body FROM {table} WHERE {key} IN ({marks})", list(keys))
        return ((int(found), unpacked_text(body)) for found, body in cursor)
    return _terms_of_rows(db, keys, after)


def _terms_of_rows(db: sqlite3.Connection, keys: Sequence[int] | None, after: int) -> Iterator[tuple[int, str]]:
    from ..lexical import chunk_text, terms

    return ((key, " ".join(terms(chunk_text(chunk)))) for key, chunk in _rows(db, keys, after))


def _forget_lexical(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    """Before the chunks' rows go: their terms are read from them."""
    if not contentless(db):
        db.executemany("DELETE FROM fts WHERE rowid = ?", [(key,) for key in keys])
        return
    for start in range(0, len(keys), 500):
        gone = list(lexical_bodies(db, keys[start : start + 500]))
        db.executemany("INSERT INTO fts (fts, rowid, body) VALUES ('delete', ?, ?)", gone)
    if _kept_terms(db):
        db.executemany("DELETE FROM lexical WHERE key = ?", [(key,) for key in keys])


def _remake_lexical(db: sqlite3.Connection) -> None:
    """FTS5's rows made again from the chunks, and the terms no longer kept (once; a contentless index only)."""
    db.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
    db.execute("DROP TABLE IF EXISTS lexical")
    after = -1
    while keys := [
        int(row[0]) for row in db.execute("SELECT key FROM chunks WHERE key > ? ORDER BY key LIMIT 4096", (after,))
    ]:
        add_lexical(db, list(_terms_of_rows(db, keys, -1)))
        after = keys[-1]
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (TERMS_MADE_BY, terms_fingerprint()))


def add_calls(db: sqlite3.Connection, calls: Sequence[tuple[int, str]]) -> None:
    """(key, name) of each call a new chunk makes."""
    names = list(dict.fromkeys(name for _, name in calls))
    db.executemany("INSERT OR IGNORE INTO call_names (name) VALUES (?)", [(name,) for name in names])
    ids: dict[str, int] = {}
    for start in range(0, len(names), 500):
        part = names[start : start + 500]
        rows = db.execute(f"SELECT name, id FROM call_names WHERE name IN ({','.join('?' * len(part))})", part)
        ids.update((str(name), int(found)) for name, found in rows)
    db.executemany("INSERT OR IGNORE INTO callers (name_id, key) VALUES (?, ?)", [(ids[n], k) for k, n in calls])


def _forget_calls(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    """Before the chunks' rows go: the names they call are read from them."""
    db.executemany(
        "DELETE FROM callers WHERE key = ? AND name_id = (SELECT id FROM call_names WHERE name = ?)",
        [(key, name) for key, chunk in _rows(db, keys) for name in dict.fromkeys(chunk.calls)],
    )


def _rows(db: sqlite3.Connection, keys: Sequence[int] | None, after: int = -1) -> Iterator[tuple[int, Chunk]]:
    """(key, chunk) of `keys`, or of every chunk above `after` in key order, a page at a time."""
    if keys is None:
        cursor = db.execute(f"SELECT key, {CHUNK_COLUMNS} FROM chunks WHERE key > ? ORDER BY key", (after,))
        while page := cursor.fetchmany(1024):
            yield from ((int(row[0]), chunk_from_row(*row[1:])) for row in page)
        return
    for start in range(0, len(keys), 500):
        part = list(keys[start : start + 500])
        rows = db.execute(
            f"SELECT key, {CHUNK_COLUMNS} FROM chunks WHERE key IN ({','.join('?' * len(part))})", part
        ).fetchall()
        yield from ((int(row[0]), chunk_from_row(*row[1:])) for row in rows)


def callers_of(db: sqlite3.Connection, calls: Sequence[str]) -> list[tuple[str, int]]:
    """(call, key) of the chunks making one of `calls`, by key."""
    unique = list(dict.fromkeys(calls))
    found: list[tuple[str, int]] = []
    kept = (
        "SELECT name, key FROM calls WHERE name IN ({})"
        if read_meta(db, CALLS_KEPT) == "1"
        else "SELECT n.name, c.key FROM call_names n JOIN callers c ON c.name_id = n.id WHERE n.name IN ({})"
    )
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        rows = db.execute(kept.format(",".join("?" * len(part))), part)
        found += [(str(name), int(key)) for name, key in rows]
    return sorted(found, key=lambda row: row[1])


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
        _forget_lexical(db, [key for key, _ in rows])
        _forget_calls(db, [key for key, _ in rows])
        for table in ("static", "chunks"):
            db.executemany(f"DELETE FROM {table} WHERE key = ?", keys)
        static_blocks.remove(db, [key for key, _ in rows])
    db.execute("DELETE FROM files WHERE path = ?", (path,))
    db.execute("DELETE FROM problems WHERE path = ?", (path,))
    return removed_vector


def mark_new(db: sqlite3.Connection) -> None:
    """A new index keeps its calls in the current form and its terms as this `lexical.terms` makes them."""
    db.execute("INSERT INTO meta VALUES (?, ?)", (CALLS_KEPT, CALLS_FORM))
    db.execute("INSERT INTO meta VALUES (?, ?)", (TERMS_MADE_BY, terms_fingerprint()))


def upgrade_derived(db: sqlite3.Connection) -> None:
    """An index from before the current forms moved to them, once, in a write (the caller's transaction): its calls
    into call_names + callers, its FTS5 rows made again when another `terms` made them or their terms are kept."""
    if read_meta(db, CALLS_KEPT) != CALLS_FORM:
        db.execute("DROP TABLE IF EXISTS calls")
        db.execute("DELETE FROM callers")
        calls: list[tuple[int, str]] = []
        for key, chunk in _rows(db, None):
            calls += [(key, name) for name in dict.fromkeys(chunk.calls)]
            if len(calls) > 50_000:
                add_calls(db, calls)
                calls.clear()
        add_calls(db, calls)
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (CALLS_KEPT, CALLS_FORM))
    if contentless(db) and (_kept_terms(db) or read_meta(db, TERMS_MADE_BY) != terms_fingerprint()):
        _remake_lexical(db)


def upgrade(db: sqlite3.Connection) -> None:
    """Every move of an index from before the current forms, at the start of a write (the caller's transaction)."""
    upgrade_tables(db)
    upgrade_derived(db)
