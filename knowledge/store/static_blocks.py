"""The static stage's rows in a local index's SQLite file: float16, BLOCK_ROWS rows a blob with their keys, in key
order, so a new process reads 200k rows as ~200 blobs (tens of milliseconds) where one row a chunk cost it a second,
at half the bytes of float32 (a score moves by ~1e-4; docs/benchmarks.md §5). Blocks hold only live chunks' rows:
removing a file's chunks rewrites the blocks that held them. Keys only grow (`next_key`), so appending keeps the order.
An index from before the blocks has one float32 row a chunk in `static`: it is read as it is, and moved into blocks
by the next write. The caller holds the store's lock (and its transaction, to write)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BLOCK_ROWS = 1024  # 512 KB of 256 float16 numbers: a one-file commit rewrites one or two of them
LEGACY_PAGE = 8192  # float32 rows of an older index read at a time
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS static_blocks (block INTEGER PRIMARY KEY, first_key INTEGER NOT NULL, "
    "last_key INTEGER NOT NULL, rows INTEGER NOT NULL, keys BLOB NOT NULL, vectors BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS static_blocks_by_last_key ON static_blocks(last_key)",
)


def append(db: sqlite3.Connection, keys: Sequence[int], vectors: npt.NDArray[np.floating]) -> None:
    """Rows of keys above every stored key: into the last block while it has room, then into new ones."""
    import numpy as np

    if not len(keys):
        return
    new_keys = np.asarray(keys, dtype=np.int64)
    new_rows = np.asarray(vectors, dtype=np.float16).reshape(len(new_keys), -1)
    last = db.execute("SELECT block, keys, vectors FROM static_blocks ORDER BY last_key DESC LIMIT 1").fetchone()
    if last is not None and len(last[1]) // 8 < BLOCK_ROWS:
        held_keys, held_rows = _decode(last[1], last[2])
        db.execute("DELETE FROM static_blocks WHERE block = ?", (last[0],))
        new_keys, new_rows = np.concatenate([held_keys, new_keys]), np.concatenate([held_rows, new_rows])
    for start in range(0, len(new_keys), BLOCK_ROWS):
        _insert(db, new_keys[start : start + BLOCK_ROWS], new_rows[start : start + BLOCK_ROWS])


def remove(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    """The rows of `keys` out of their blocks (a block left empty goes)."""
    import numpy as np

    if not keys:
        return
    wanted = np.unique(np.asarray(keys, dtype=np.int64))
    blocks = db.execute(
        "SELECT block, keys, vectors FROM static_blocks WHERE last_key >= ? AND first_key <= ? ORDER BY last_key",
        (int(wanted[0]), int(wanted[-1])),
    ).fetchall()
    for block, key_blob, vector_blob in blocks:
        held_keys, held_rows = _decode(key_blob, vector_blob)
        gone = np.isin(held_keys, wanted)
        if not gone.any():
            continue
        db.execute("DELETE FROM static_blocks WHERE block = ?", (block,))
        if not gone.all():
            _insert(db, held_keys[~gone], held_rows[~gone])


def read(db: sqlite3.Connection) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float16]] | None:
    """Every row, keys ascending (an index from before the blocks: its float32 rows too); None when there are none."""
    import numpy as np

    blocks = db.execute("SELECT keys, vectors FROM static_blocks ORDER BY last_key") if _has_blocks(db) else []
    parts = [_decode(keys, vectors) for keys, vectors in blocks]
    legacy = _legacy(db)
    if legacy is not None:
        parts.append(legacy)
    if not parts:
        return None
    keys = np.concatenate([part[0] for part in parts])
    matrix = np.concatenate([part[1] for part in parts])  # one copy: the blocks' buffers are SQLite's, read-only
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        order = np.argsort(keys, kind="stable")
        keys, matrix = keys[order], matrix[order]
    return keys, matrix


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
    """An index from before the blocks: its float32 rows into blocks, in a write (the caller's transaction)."""
    if db.execute("SELECT 1 FROM static LIMIT 1").fetchone() is None:
        return
    legacy = _legacy(db)
    if legacy is not None:
        db.execute("DELETE FROM static")
        append(db, [int(key) for key in legacy[0]], legacy[1])


def _has_blocks(db: sqlite3.Connection) -> bool:
    """False for an index from before the blocks opened where it could not be given the table (a read-only folder)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'static_blocks'").fetchone()
    return found is not None


def _legacy(db: sqlite3.Connection) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float16]] | None:
    import numpy as np

    keys: list[int] = []
    pages: list[npt.NDArray[np.float16]] = []
    cursor = db.execute("SELECT key, vector FROM static ORDER BY key")
    while page := cursor.fetchmany(LEGACY_PAGE):
        rows = np.frombuffer(b"".join(vector for _, vector in page), dtype=np.float32).reshape(len(page), -1)
        pages.append(rows.astype(np.float16))
        keys.extend(int(key) for key, _ in page)
    if not keys:
        return None
    return np.array(keys, dtype=np.int64), np.concatenate(pages)


def _decode(key_blob: bytes, vector_blob: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float16]]:
    """A block's keys and rows (never empty: an emptied block is deleted)."""
    import numpy as np

    block_keys = np.frombuffer(key_blob, dtype=np.int64)
    return block_keys, np.frombuffer(vector_blob, dtype=np.float16).reshape(len(block_keys), -1)


def _insert(db: sqlite3.Connection, block_keys: npt.NDArray[np.int64], rows: npt.NDArray[np.float16]) -> None:
    db.execute(
        "INSERT INTO static_blocks (first_key, last_key, rows, keys, vectors) VALUES (?, ?, ?, ?, ?)",
        (int(block_keys[0]), int(block_keys[-1]), len(block_keys), block_keys.tobytes(), rows.tobytes()),
    )
