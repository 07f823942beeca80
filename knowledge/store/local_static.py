"""The static first stage's vectors in a LocalStore: one row per chunk still waiting for its transformer vector (the
row goes when that vector arrives), searched exactly: it holds only the pending share, 256 numbers a chunk."""

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

    def count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM static").fetchone()[0])

    def search(self, db: sqlite3.Connection, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        import numpy as np

        self._refresh(db)
        if self._matrix is None or self._matrix.shape[1] != len(vector):
            return []
        scores = self._matrix @ np.asarray(vector, dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [ScoredKey(self._keys[int(row)], float(scores[int(row)])) for row in top]
