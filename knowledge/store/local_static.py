"""The static stage's vectors in a LocalStore: one row per chunk, kept when its transformer vector arrives (the
static list votes beside the transformer's), searched exactly: 256 numbers a chunk, 1 KB (100 MB at 100k chunks)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from . import ScoredKey

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
        import numpy as np

        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version and self._matrix is not None:
            return
        rows = db.execute("SELECT key, vector FROM static ORDER BY key").fetchall()
        self._keys = [int(key) for key, _ in rows]
        blob = b"".join(vector for _, vector in rows)
        self._matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1) if rows else None
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
