"""The USearch side of the local engine: one HNSW snapshot file per kind, opened memory-mapped, and rebuilt only by
compaction. The only module importing usearch.

A snapshot is identified by (count, size, sha256) recorded in the kind's SQLite file. While a new snapshot is renamed
in, the old one stays reachable as `<kind>.usearch.prev`; the link is only ever made from a file that matches the
recorded identity, so two crashes in a row at the same step cannot turn the good copy into an orphan.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexCorruptError
from ..fs import fsync_dir, fsync_file, scratch_file

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Below this many vectors an exact scan costs a few milliseconds and has perfect recall.
EXACT_SEARCH_LIMIT = 20_000
EXPANSION_SEARCH = 128


@dataclass(frozen=True, slots=True)
class SnapshotIdentity:
    count: int
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> SnapshotIdentity | None:
        if not data:
            return None
        return cls(int(data["count"]), int(data["size"]), str(data["sha256"]))


def usearch_index_class() -> Any:  # noqa: ANN401 - the usearch.index.Index class
    # usearch 2.26.2-2.26.6 crash the process when onnxruntime is imported after them; pyproject.toml keeps them out
    # and tests/test_native_libraries.py loads both in either order.
    from usearch.index import Index

    return Index


def new_index(dims: int) -> Any:  # noqa: ANN401
    return usearch_index_class()(ndim=dims, metric="cos", dtype="f32", connectivity=16, expansion_add=128)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prev_path(path: Path) -> Path:
    return path.with_name(path.name + ".prev")


def matching_file(path: Path, identity: SnapshotIdentity) -> Path | None:
    """The snapshot file (current or .prev) whose bytes are the recorded identity.

    Size decides between the two in the common case; the hash is only read when both have the recorded size.
    """
    existing = [p for p in (path, prev_path(path)) if p.is_file() and p.stat().st_size == identity.size]
    if len(existing) == 1:
        return existing[0]
    for candidate in existing:
        if _sha256(candidate) == identity.sha256:
            return candidate
    return None


def snapshot_file_problem(path: Path, identity: SnapshotIdentity) -> str | None:
    """Why `path` is not the snapshot `identity` records (size, checksum, a readable HNSW file of that many vectors),
    or None."""
    if path.stat().st_size != identity.size or _sha256(path) != identity.sha256:
        return f"{path.name} is not the vector file its index records"
    try:
        index = usearch_index_class().restore(str(path), view=True)
    except Exception as exc:  # usearch raises bare RuntimeError/AssertionError
        return f"{path.name} cannot be opened as a vector index ({exc})"
    if index is None or len(index) != identity.count:
        return f"{path.name} does not hold the {identity.count:,} vectors its index records"
    return None


class Snapshot:
    """A read-only, memory-mapped HNSW snapshot."""

    def __init__(self, index: Any, identity: SnapshotIdentity) -> None:  # noqa: ANN401
        self._index = index
        self.identity = identity

    @classmethod
    def open(cls, path: Path, identity: SnapshotIdentity, dims: int) -> Snapshot:
        chosen = matching_file(path, identity)
        if chosen is None:
            raise IndexCorruptError(
                f"{path}: does not match its index (interrupted or edited); run `knowledge reindex-all`"
            )
        try:
            index = usearch_index_class().restore(str(chosen), view=True)
        except Exception as exc:  # usearch raises bare RuntimeError/AssertionError
            raise IndexCorruptError(f"{chosen}: cannot open vector index ({exc}); run `knowledge reindex-all`") from exc
        if index is None or index.ndim != dims or len(index) != identity.count:
            raise IndexCorruptError(f"{chosen}: vector index does not match its metadata; run `knowledge reindex-all`")
        snapshot = cls(index, identity)
        snapshot.path = chosen
        return snapshot

    path: Path = Path()

    def __len__(self) -> int:
        return len(self._index)

    def search(self, vector: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        import numpy as np

        k = min(k, len(self._index))
        if k <= 0:
            return []
        exact = len(self._index) <= EXACT_SEARCH_LIMIT
        if not exact:
            self._index.expansion_search = max(EXPANSION_SEARCH, k)
        matches = self._index.search(np.asarray(vector, dtype=np.float32), k, exact=exact)
        return [(int(key), float(1.0 - dist)) for key, dist in zip(matches.keys, matches.distances, strict=True)]

    def get(self, keys: list[int]) -> npt.NDArray[np.float32]:
        import numpy as np

        if not keys:
            return np.zeros((0, self._index.ndim), dtype=np.float32)
        found = self._index.get(np.array(keys, dtype=np.uint64), dtype=np.float32)
        return np.asarray(found, dtype=np.float32).reshape(len(keys), -1)

    def writable_copy(self) -> Any:  # noqa: ANN401
        return usearch_index_class().restore(str(self.path))


def write_snapshot(
    path: Path,
    index: Any,  # noqa: ANN401
    recorded: SnapshotIdentity | None,
) -> SnapshotIdentity:
    """Save `index` beside `path` and rename it in, keeping the recorded good copy reachable as `.prev`."""
    tmp = scratch_file(path)
    try:
        index.save(str(tmp))  # over a private file of ours made by mkstemp: usearch writes into no planted link
        fsync_file(tmp)
        identity = SnapshotIdentity(len(index), tmp.stat().st_size, _sha256(tmp))
        if recorded is not None and matching_file(path, recorded) == path:
            link_tmp = path.with_name(f".{path.name}.prev.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                link_tmp.unlink()
            os.link(path, link_tmp)
            os.replace(link_tmp, prev_path(path))
        os.replace(tmp, path)
        fsync_dir(path.parent)
        return identity
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def remove_stale_temp_files(folder: Path) -> None:
    """Temp files left by killed writers (the caller holds the writer lock, so none is in use)."""
    for stale in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()
