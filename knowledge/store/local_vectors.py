"""The dense side of a LocalStore: the HNSW snapshot (`<kind>.usearch`), the delta of vectors added since it and the
tombstones of keys removed from it (both in SQLite), kept in step with what any process committed. The caller holds
the store's lock and passes its connection."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import ScoredKey
from .local_files import Transaction, read_meta
from .vectors import Snapshot, SnapshotIdentity, new_index, write_snapshot

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Fold the delta into the snapshot once it holds this many vectors, or a quarter of the snapshot if that is more.
COMPACT_MIN = 4096
DELTA_PAGE = 8192  # delta rows read, and vectors added to a graph, at a time


class LocalVectors:
    def __init__(self, snapshot_path: Path, dims: int) -> None:
        self.snapshot_path = snapshot_path
        self.dims = dims
        self._data_version: int | None = None
        self._snapshot: Snapshot | None = None
        self._snapshot_identity: SnapshotIdentity | None = None
        self._tombstones: set[int] = set()
        self._delta_epoch = ""
        self._delta_seq = 0
        self._delta_keys: list[int] = []
        self._delta_rows: dict[int, int] = {}
        self._delta_matrix: npt.NDArray[np.float32] | None = None  # numpy loads only when vectors are read

    def invalidate(self) -> None:
        """After our own commits (data_version only moves for other connections' commits)."""
        self._data_version = None

    def _deltas(self) -> npt.NDArray[np.float32]:
        """The vectors added since the snapshot (rows of `_delta_rows`); empty until the first refresh reads them."""
        if self._delta_matrix is None:
            import numpy as np

            self._delta_matrix = np.zeros((0, self.dims), dtype=np.float32)
        return self._delta_matrix

    def refresh(self, db: sqlite3.Connection) -> None:
        """Pick up what other processes committed since the last call: one PRAGMA when nothing changed."""
        import numpy as np

        self._deltas()
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        self._data_version = version
        self._open_snapshot(db)
        epoch = read_meta(db, "delta_epoch") or ""
        if epoch != self._delta_epoch:
            self._delta_epoch, self._delta_seq = epoch, 0
            self._delta_keys, self._delta_rows = [], {}
            self._delta_matrix = np.zeros((0, self.dims), dtype=np.float32)
            self._tombstones = {key for (key,) in db.execute("SELECT key FROM tombstones")}
        self._read_delta(db)

    def _open_snapshot(self, db: sqlite3.Connection) -> None:
        identity = SnapshotIdentity.from_json(json.loads(read_meta(db, "snapshot") or "null"))
        if identity != self._snapshot_identity:
            self._snapshot = (
                Snapshot.open(self.snapshot_path, identity, self.dims) if identity and identity.count else None
            )
            self._snapshot_identity = identity

    def _read_delta(self, db: sqlite3.Connection) -> None:
        """Append the delta rows committed since the last read: one matrix filled a page at a time, so a build's
        100k new vectors cost their own size once, not four copies of it."""
        import numpy as np

        count, last = db.execute("SELECT count(*), max(seq) FROM delta WHERE seq > ?", (self._delta_seq,)).fetchone()
        if not count:
            return
        held = len(self._delta_keys)
        matrix = np.empty((held + count, self.dims), dtype=np.float32)
        matrix[:held] = self._deltas()
        keys: list[int] = []
        cursor = db.execute(
            "SELECT key, vector FROM delta WHERE seq > ? AND seq <= ? ORDER BY seq", (self._delta_seq, last)
        )
        while page := cursor.fetchmany(DELTA_PAGE):
            row = held + len(keys)
            matrix[row : row + len(page)] = np.frombuffer(b"".join(blob for _, blob in page), dtype=np.float32).reshape(
                len(page), self.dims
            )
            keys.extend(int(key) for key, _ in page)
        for offset, key in enumerate(keys):
            self._delta_rows[key] = held + offset
        self._delta_keys.extend(keys)
        self._delta_matrix = matrix[: held + len(keys)]
        self._delta_seq = last

    def search(self, db: sqlite3.Connection, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        import numpy as np

        self.refresh(db)
        scored: dict[int, float] = {}
        if self._snapshot is not None:
            depth = k + len(self._tombstones)
            for key, score in self._snapshot.search(vector, depth):
                if key not in self._tombstones:
                    scored[key] = score
        if len(self._delta_keys):
            scores = self._deltas() @ np.asarray(vector, dtype=np.float32)
            top = np.argpartition(-scores, min(k, len(scores)) - 1)[:k] if len(scores) > k else range(len(scores))
            for row in top:
                scored[self._delta_keys[int(row)]] = float(scores[int(row)])
        best = sorted(scored.items(), key=lambda item: (-round(item[1], 6), item[0]))[:k]
        return [ScoredKey(key, score) for key, score in best]

    def get(self, db: sqlite3.Connection, keys: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        out: dict[int, npt.NDArray[np.float32]] = {}
        if not unique:
            return out
        self.refresh(db)
        rows = db.execute(
            f"SELECT key, in_snapshot FROM chunks WHERE embedded = 1 AND key IN ({','.join('?' * len(unique))})",
            unique,
        ).fetchall()
        in_snapshot = [key for key, flag in rows if flag and key not in self._delta_rows]
        for key, _ in rows:
            row = self._delta_rows.get(key)
            if row is not None:
                out[key] = self._deltas()[row]
        if in_snapshot and self._snapshot is not None:
            for key, vector in zip(in_snapshot, self._snapshot.get(in_snapshot), strict=True):
                out[key] = vector
        return out

    def compact(self, db: sqlite3.Connection, force: bool = False) -> bool:
        """Fold the delta and tombstones into a new snapshot once they are big enough (or `force`). The delta's
        vectors go from SQLite to the graph a page at a time: a build's 100k new vectors are never one matrix."""
        import numpy as np

        self._open_snapshot(db)
        base = len(self._snapshot) if self._snapshot is not None else 0
        tombstones = [key for (key,) in db.execute("SELECT key FROM tombstones ORDER BY key")]
        delta = db.execute("SELECT seq, key FROM delta ORDER BY seq").fetchall()
        delta_keys = [key for _, key in delta]
        changes = len(delta_keys) + len(tombstones)
        if changes == 0 or (not force and changes < max(COMPACT_MIN, base // 4)):
            return False
        last_seq = delta[-1][0] if delta else 0
        if self._snapshot is not None and len(tombstones) <= base // 4:
            index = self._snapshot.writable_copy()
            present = [key for key in tombstones if index.contains(key)]
            if present:
                index.remove(np.array(present, dtype=np.uint64))
        else:  # many removals: a fresh graph from the live vectors beats a graph full of holes
            index = new_index(self.dims)
            if self._snapshot is not None:
                in_delta = set(delta_keys)
                live = [
                    key
                    for (key,) in db.execute("SELECT key FROM chunks WHERE in_snapshot = 1 ORDER BY key")
                    if key not in in_delta
                ]
                for start in range(0, len(live), DELTA_PAGE):
                    part = live[start : start + DELTA_PAGE]
                    index.add(np.array(part, dtype=np.uint64), self._snapshot.get(part))
        cursor = db.execute("SELECT key, vector FROM delta WHERE seq <= ? ORDER BY seq", (last_seq,))
        while page := cursor.fetchmany(DELTA_PAGE):
            fresh = [(int(key), blob) for key, blob in page if not index.contains(int(key))]
            if fresh:
                vectors = np.frombuffer(b"".join(blob for _, blob in fresh), dtype=np.float32)
                index.add(np.array([key for key, _ in fresh], dtype=np.uint64), vectors.reshape(len(fresh), self.dims))
        identity = write_snapshot(self.snapshot_path, index, self._snapshot_identity)
        with Transaction(db):
            db.executemany("UPDATE chunks SET in_snapshot = 1 WHERE key = ?", [(k,) for k in delta_keys])
            db.execute("DELETE FROM delta WHERE seq <= ?", (last_seq,))
            db.executemany("DELETE FROM tombstones WHERE key = ?", [(k,) for k in tombstones])
            db.execute("INSERT OR REPLACE INTO meta VALUES ('snapshot', ?)", (json.dumps(identity.to_json()),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('delta_epoch', ?)", (f"{time.time_ns()}",))
        db.execute("PRAGMA incremental_vacuum")
        self.invalidate()
        return True
