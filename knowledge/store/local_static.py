"""The static stage's vectors in a LocalStore: one row per chunk, kept when its transformer vector arrives (the
static list votes beside the transformer's): 256 numbers a chunk, 1 KB (100 MB at 100k chunks), read into memory once
per commit and searched there (static_scan.py: exactly, or from HEAD_SCAN_MIN_ROWS rows by a rotated head scan)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .local_vectors import DELTA_PAGE
from .static_scan import HEAD_SCAN_MIN_ROWS, StaticRows, exact_rows, rotated_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


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
            self._rows = self._read(db)
            self._data_version = version
        return self._rows

    def _read(self, db: sqlite3.Connection) -> StaticRows | None:
        """Every row, a page at a time: a million rows cost their 1 GB once, not three times."""
        import numpy as np

        count, width = db.execute("SELECT count(*), max(length(vector)) FROM static").fetchone()
        if not count:
            return None
        if count >= HEAD_SCAN_MIN_ROWS:
            return rotated_rows(_pages(db), count, width // 4)
        matrix = np.empty((count, width // 4), dtype=np.float32)
        keys: list[int] = []
        for page_keys, page in _pages(db):
            # another process may have added rows since the count (the next search reads them all again)
            if len(keys) + len(page) > len(matrix):
                matrix = np.concatenate([matrix, np.empty((len(page), matrix.shape[1]), np.float32)])
            matrix[len(keys) : len(keys) + len(page)] = page
            keys.extend(page_keys)
        return exact_rows(keys, matrix[: len(keys)])

    def counts(self, db: sqlite3.Connection) -> tuple[int, int]:
        """Rows, and rows of chunks still waiting for their transformer vector."""
        rows = int(db.execute("SELECT count(*) FROM static").fetchone()[0])
        waiting = "SELECT count(*) FROM static JOIN chunks ON chunks.key = static.key WHERE chunks.embedded = 0"
        return rows, int(db.execute(waiting).fetchone()[0])


def _pages(db: sqlite3.Connection) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
    import numpy as np

    cursor = db.execute("SELECT key, vector FROM static ORDER BY key")
    while page := cursor.fetchmany(DELTA_PAGE):
        rows = np.frombuffer(b"".join(vector for _, vector in page), dtype=np.float32)
        yield [int(key) for key, _ in page], rows.reshape(len(page), -1)
