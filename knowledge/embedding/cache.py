"""A content-hash keyed embedding cache (SQLite), one file per model fingerprint, so no text is embedded twice."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..fs import create_private_file, private_dir


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tighten(path: Path, mode: int) -> None:
    """`path` no wider than `mode` (a cache made by an earlier version was 0755/0644); only what this user owns."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if info.st_uid == os.getuid() and not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(info.st_mode) & mode)


class EmbeddingCache:
    """Vectors by sha256 of the embedded text, for one model fingerprint."""

    def __init__(self, path: Path, dims: int) -> None:
        # the cache is this user's alone: a chunk's hash in a world-readable cache let another user confirm a guess
        # at a private repository's text
        private_dir(path.parent)
        _tighten(path.parent, 0o700)
        create_private_file(path)
        for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            _tighten(part, 0o600)
        self._dims = dims
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    @classmethod
    def of_model(cls, home: Path, fingerprint: str, dims: int) -> EmbeddingCache:
        """The user's cache for the model of `fingerprint`, under `home`."""
        return cls(home / "embeddings" / f"{fingerprint}.sqlite", dims)

    def get_many(self, hashes: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        found: dict[str, npt.NDArray[np.float32]] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            rows = self._db.execute(
                f"SELECT hash, vector FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part
            ).fetchall()
            for key, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (self._dims,):
                    found[key] = vector
        return found

    def put_many(self, items: dict[str, npt.NDArray[np.float32]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (hash, vector) VALUES (?, ?)",
                [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in items.items()],
            )

    def close(self) -> None:
        self._db.close()


def embed_with_cache(
    texts: Sequence[str],
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]],
    cache: EmbeddingCache | None,
    dims: int,
) -> tuple[npt.NDArray[np.float32], int]:
    """Vectors for `texts`, embedding only those not cached; returns (vectors, how many were embedded)."""
    hashes = [text_hash(t) for t in texts]
    known = cache.get_many(hashes) if cache is not None else {}
    missing = [i for i, h in enumerate(hashes) if h not in known]
    # Identical texts are embedded once.
    first_of: dict[str, int] = {}
    for i in missing:
        first_of.setdefault(hashes[i], i)
    fresh_order = list(first_of.values())
    fresh = embed([texts[i] for i in fresh_order]) if fresh_order else np.zeros((0, dims), np.float32)
    new = {hashes[i]: fresh[row] for row, i in enumerate(fresh_order)}
    if cache is not None and new:
        cache.put_many(new)
    out = np.zeros((len(texts), dims), dtype=np.float32)
    for i, h in enumerate(hashes):
        out[i] = known[h] if h in known else new[h]
    return out, len(fresh_order)
