"""The static stage's vectors in a LocalStore: one row per chunk, kept when its transformer vector arrives (the
static list votes beside the transformer's), searched exactly: 256 numbers a chunk, 1 KB (100 MB at 100k chunks)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from . import ScoredKey
from .local_vectors import DELTA_PAGE

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class LocalStatic:
    """The caller holds the store's lock and passes its connection."""

    def __init__(self) -> None:
        self._data_version: int | None = None
        self._keys: list[int] = []
        self._matrix: npt.NDArray[np.float32] | None = None

    def invalidate(self) -> None:
        self._data_version = None

    def _refresh(self, db: sqlite3.Connection) -> None:
        """Every row into one matrix, a page at a time: a million rows cost their 1 GB once, not three times."""
        import numpy as np

        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version and self._matrix is not None:
            return
        count, width = db.execute("SELECT count(*), max(length(vector)) FROM static").fetchone()
        self._keys, self._matrix = [], None
        if count:
            matrix = np.empty((count, width // 4), dtype=np.float32)
            keys: list[int] = []
            cursor = db.execute("SELECT key, vector FROM static ORDER BY key")
            while page := cursor.fetchmany(DELTA_PAGE):
                # another process may have added rows since the count (the next search reads them all again)
                if len(keys) + len(page) > len(matrix):
                    matrix = np.concatenate([matrix, np.empty((len(page), matrix.shape[1]), np.float32)])
                rows = np.frombuffer(b"".join(vector for _, vector in page), dtype=np.float32)
                matrix[len(keys) : len(keys) + len(page)] = rows.reshape(len(page), -1)
                keys.extend(int(key) for key, _ in page)
            self._keys, self._matrix = keys, matrix[: len(keys)]
        self._data_version = version

    def counts(self, db: sqlite3.Connection) -> tuple[int, int]:
        """Rows, and rows of chunks still waiting for their transformer vector."""
        rows = int(db.execute("SELECT count(*) FROM static").fetchone()[0])
        waiting = "SELECT count(*) FROM static JOIN chunks ON chunks.key = static.key WHERE chunks.embedded = 0"
        return rows, int(db.execute(waiting).fetchone()[0])

    def search(self, db: sqlite3.Connection, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        import numpy as np

        self._refresh(db)
        if self._matrix is None or self._matrix.shape[1] != len(vector):
            return []
        scores = self._matrix @ np.asarray(vector, dtype=np.float32)
        rows = np.arange(len(scores))
        if 0 < k < len(scores):  # the k best without sorting every row (each chunk's row is searched)
            kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
            above, tied = np.flatnonzero(scores > kth), np.flatnonzero(scores == kth)
            rows = np.concatenate([above, tied[: k - len(above)]])
        top = rows[np.lexsort((rows, -scores[rows]))][:k]  # best first, ties in key order
        return [ScoredKey(self._keys[int(row)], float(scores[int(row)])) for row in top]
