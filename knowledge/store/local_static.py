"""The static stage's vectors in a LocalStore: one row per chunk, kept when its transformer vector arrives (the
static list votes beside the transformer's), stored as int8 blocks (static_blocks.py: 268 bytes a chunk with its
key, 54 MB at 200k chunks), read into memory once per commit and searched there (static_scan.py)."""

from __future__ import annotations

import sqlite3

from . import static_blocks
from .static_scan import StaticRows


class LocalStatic:
    """The caller holds the store's lock and passes its connection."""

    def __init__(self) -> None:
        self._data_version: int | None = None
        self._rows: StaticRows | None = None

    def invalidate(self) -> None:
        self._data_version = None

    def current(self, db: sqlite3.Connection) -> StaticRows | None:
        """The rows as committed now. A refresh replaces them, never changes them in place, so a caller may search
        them after letting go of the lock."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version or self._rows is None:
            found = static_blocks.read(db)
            self._rows = StaticRows(*found) if found is not None else None
            self._data_version = version
        return self._rows

    def counts(self, db: sqlite3.Connection) -> tuple[int, int]:
        """Rows, and rows of chunks still waiting for their transformer vector."""
        import numpy as np

        rows = static_blocks.row_count(db)
        total, pending = db.execute(
            "SELECT count(*), (SELECT count(*) FROM chunks WHERE embedded = 0) FROM chunks"
        ).fetchone()
        if rows == total:  # every chunk has its row (the blocks hold live chunks' rows only)
            return rows, int(pending)
        waiting = np.array([key for (key,) in db.execute("SELECT key FROM chunks WHERE embedded = 0")], dtype=np.int64)
        return rows, int(np.isin(waiting, static_blocks.keys(db)).sum())
