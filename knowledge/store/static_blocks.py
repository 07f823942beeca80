"""The static stage's rows in a local index's SQLite file: BLOCK_ROWS rows a blob with their keys, in key order, so a
new process reads 200k rows as ~200 blobs (tens of milliseconds) where one row a chunk cost it a second. A row is
int8 with its own float32 scale (each number is the scale times a whole number up to 127), as the static model's own
table is stored: 260 bytes a row of 256 where float32 took 1,024 (docs/benchmarks.md §5). Blocks hold only live
chunks' rows: removing a file's chunks rewrites the blocks that held them. Keys only grow (`next_key`), so appending
keeps the order. Indexes from before keep float16 blocks (`form` 16) or one float32 row a chunk in `static`: read as
they are, and moved into int8 blocks by the next write. The caller holds the store's lock (and its transaction, to
write)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # numpy is imported where rows are read or written: the store's import stays cheap
    import numpy as np
    import numpy.typing as npt

BLOCK_ROWS = 1024  # 266 KB of rows of 256 and their keys: a one-file commit rewrites one or two of them
LEGACY_PAGE = 8192  # float32 rows of an older index read at a time
INT8, FLOAT16 = 8, 16  # a block's form: int8 rows after their float32 scales, or (an index from before) float16 rows
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS static_blocks (block INTEGER PRIMARY KEY, first_key INTEGER NOT NULL, "
    "last_key INTEGER NOT NULL, rows INTEGER NOT NULL, keys BLOB NOT NULL, vectors BLOB NOT NULL, "
    "form INTEGER NOT NULL DEFAULT 16)",
    "CREATE INDEX IF NOT EXISTS static_blocks_by_last_key ON static_blocks(last_key)",
)


class Rows(NamedTuple):
    """Rows as int8 codes and a float32 scale each: row i is scales[i] * codes[i]."""

    keys: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float32]

    def taken(self, which: slice | npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> Rows:
        return Rows(self.keys[which], self.codes[which], self.scales[which])


def quantized(keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.floating]) -> Rows:
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(keys), -1)
    scales = (np.abs(matrix).max(axis=1) / 127).astype(np.float32) if matrix.size else np.zeros(len(keys), np.float32)
    codes = np.rint(matrix / np.where(scales > 0, scales, 1)[:, None]).astype(np.int8)
    return Rows(np.asarray(keys, dtype=np.int64), codes, scales)


def add_form_column(db: sqlite3.Connection) -> None:
    """Blocks written before int8 rows are float16 (the column's default)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(static_blocks)")}
    if columns and "form" not in columns:
        db.execute("ALTER TABLE static_blocks ADD COLUMN form INTEGER NOT NULL DEFAULT 16")


def append(db: sqlite3.Connection, keys: Sequence[int], vectors: npt.NDArray[np.floating]) -> None:
    """Rows of keys above every stored key: into the last block while it has room, then into new ones."""
    import numpy as np

    if not len(keys):
        return
    new = quantized(np.asarray(keys, dtype=np.int64), vectors)
    last = db.execute("SELECT block, keys, vectors, form FROM static_blocks ORDER BY last_key DESC LIMIT 1").fetchone()
    if last is not None and len(last[1]) // 8 < BLOCK_ROWS:
        db.execute("DELETE FROM static_blocks WHERE block = ?", (last[0],))
        new = _joined([_decode(*last[1:]), new])
    for start in range(0, len(new.keys), BLOCK_ROWS):
        _insert(db, new.taken(slice(start, start + BLOCK_ROWS)))


def remove(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    """The rows of `keys` out of their blocks (a block left empty goes)."""
    import numpy as np

    if not keys:
        return
    wanted = np.unique(np.asarray(keys, dtype=np.int64))
    blocks = db.execute(
        "SELECT block, keys, vectors, form FROM static_blocks WHERE last_key >= ? AND first_key <= ? ORDER BY last_key",
        (int(wanted[0]), int(wanted[-1])),
    ).fetchall()
    for block, *stored in blocks:
        held = _decode(*stored)
        gone = np.isin(held.keys, wanted)
        if not gone.any():
            continue
        db.execute("DELETE FROM static_blocks WHERE block = ?", (block,))
        if not gone.all():
            _insert(db, held.taken(~gone))


def read(db: sqlite3.Connection) -> Rows | None:
    """Every row, keys ascending (an index from before: its float16 blocks and float32 rows too); None when none."""
    import numpy as np

    parts = [_filled(db)] if _has_blocks(db) else []
    legacy = _legacy(db)
    if legacy is not None:
        parts.append(legacy)
    parts = [part for part in parts if len(part.keys)]
    if not parts:
        return None
    rows = parts[0] if len(parts) == 1 else _joined(parts)
    if len(rows.keys) > 1 and not bool(np.all(rows.keys[1:] > rows.keys[:-1])):
        order = np.argsort(rows.keys, kind="stable")
        rows = rows.taken(order)
    return rows


def row_count(db: sqlite3.Connection) -> int:
    blocks = int(db.execute("SELECT coalesce(sum(rows), 0) FROM static_blocks").fetchone()[0]) if _has_blocks(db) else 0
    return blocks + int(db.execute("SELECT count(*) FROM static").fetchone()[0])


def keys(db: sqlite3.Connection) -> npt.NDArray[np.int64]:
    """Every row's key (unordered)."""
    import numpy as np

    blocks = db.execute("SELECT keys FROM static_blocks") if _has_blocks(db) else []
    parts = [np.frombuffer(blob, dtype=np.int64) for (blob,) in blocks]
    parts.append(np.array([key for (key,) in db.execute("SELECT key FROM static")], dtype=np.int64))
    return np.concatenate(parts)


def move_rows_once(db: sqlite3.Connection) -> None:
    """An index from before: its float32 rows and float16 blocks into int8 blocks, in a write (the caller's
    transaction)."""
    add_form_column(db)
    if db.execute("SELECT 1 FROM static_blocks WHERE form != ? LIMIT 1", (INT8,)).fetchone() is not None:
        older = db.execute("SELECT block, keys, vectors, form FROM static_blocks WHERE form != ?", (INT8,)).fetchall()
        for block, *stored in older:
            db.execute("DELETE FROM static_blocks WHERE block = ?", (block,))
            _insert(db, _decode(*stored))
    if db.execute("SELECT 1 FROM static LIMIT 1").fetchone() is None:
        return
    legacy = _legacy(db)
    if legacy is not None:
        db.execute("DELETE FROM static")
        append(db, [int(key) for key in legacy.keys], legacy.codes * legacy.scales[:, None])


def _form(db: sqlite3.Connection) -> str:
    """The blocks' form column, or (an index from before it, opened where it could not be added) float16."""
    return "form" if "form" in {row[1] for row in db.execute("PRAGMA table_info(static_blocks)")} else str(FLOAT16)


def _has_blocks(db: sqlite3.Connection) -> bool:
    """False for an index from before the blocks opened where it could not be given the table (a read-only folder)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'static_blocks'").fetchone()
    return found is not None


def _legacy(db: sqlite3.Connection) -> Rows | None:
    import numpy as np

    parts: list[Rows] = []
    cursor = db.execute("SELECT key, vector FROM static ORDER BY key")
    while page := cursor.fetchmany(LEGACY_PAGE):
        matrix = np.frombuffer(b"".join(vector for _, vector in page), dtype=np.float32).reshape(len(page), -1)
        parts.append(quantized(np.array([key for key, _ in page], dtype=np.int64), matrix))
    return _joined(parts) if parts else None


def _filled(db: sqlite3.Connection) -> Rows:
    """The blocks' rows copied a block at a time into arrays made once: a new process touches its memory once (on
    these virtual machines a page's first touch is what costs)."""
    import numpy as np

    total = int(db.execute("SELECT coalesce(sum(rows), 0) FROM static_blocks").fetchone()[0])
    cursor = db.execute(f"SELECT keys, vectors, {_form(db)} FROM static_blocks ORDER BY last_key")
    filled: Rows | None = None
    at = 0
    for stored in cursor:
        block = _decode(*stored)
        if filled is None:
            dims = block.codes.shape[1]
            filled = Rows(np.empty(total, np.int64), np.empty((total, dims), np.int8), np.empty(total, np.float32))
        end = at + len(block.keys)
        filled.keys[at:end], filled.codes[at:end], filled.scales[at:end] = block.keys, block.codes, block.scales
        at = end
    return filled.taken(slice(0, at)) if filled is not None else Rows(*_empty())


def _empty() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    import numpy as np

    return np.empty(0, np.int64), np.empty((0, 0), np.int8), np.empty(0, np.float32)


def _joined(parts: Sequence[Rows]) -> Rows:
    import numpy as np

    return Rows(
        np.concatenate([part.keys for part in parts]),
        np.concatenate([part.codes for part in parts]),
        np.concatenate([part.scales for part in parts]),
    )


def _decode(key_blob: bytes, vector_blob: bytes, form: int = FLOAT16) -> Rows:
    """A block's rows (never empty: an emptied block is deleted)."""
    import numpy as np

    block_keys = np.frombuffer(key_blob, dtype=np.int64)
    if form == FLOAT16:
        return quantized(block_keys, np.frombuffer(vector_blob, dtype=np.float16).reshape(len(block_keys), -1))
    scales = np.frombuffer(vector_blob, dtype=np.float32, count=len(block_keys))
    codes = np.frombuffer(vector_blob, dtype=np.int8, offset=4 * len(block_keys)).reshape(len(block_keys), -1)
    return Rows(block_keys, codes, scales)


def _insert(db: sqlite3.Connection, rows: Rows) -> None:
    import numpy as np

    db.execute(
        "INSERT INTO static_blocks (first_key, last_key, rows, keys, vectors, form) VALUES (?, ?, ?, ?, ?, ?)",
        (
            int(rows.keys[0]),
            int(rows.keys[-1]),
            len(rows.keys),
            rows.keys.tobytes(),
            rows.scales.astype(np.float32).tobytes() + rows.codes.astype(np.int8).tobytes(),
            INT8,
        ),
    )
