"""IndexStore: owns `.knowledge/` (usearch vectors, JSON metadata, manifest). The only module importing usearch.

A generation is `<kind>.usearch` + `<kind>.meta.json`. The metadata records the identity (inode, size, sha256) of
the vector file it belongs to, and the previous vector file is kept as a hard link `<kind>.usearch.prev` while the
new one is renamed in; so a crash between the two renames still leaves a matching pair to open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .callgraph import CallGraph
from .errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from .fs import atomic_write, file_lock, fsync_dir
from .records import Chunk, FileProblem

FORMAT_VERSION = 1
INDEX_DIR = ".knowledge"
# Below this many vectors an exact scan is fast enough (~20 ms at 100k x 768) and has perfect recall.
EXACT_SEARCH_LIMIT = 50_000
EXPANSION_SEARCH = 128


@dataclass(frozen=True, slots=True)
class Manifest:
    """What the vectors mean: any change of fingerprint makes the index incompatible."""

    format_version: int
    knowledge_version: str
    model_id: str
    model_variant: str
    dims: int
    metric: str
    chunker_version: int
    fingerprint: str
    threshold: float
    full_threshold: float
    built_at: str
    commit: str | None = None  # HEAD when the index was last brought up to date
    selection: str = ""  # fingerprint of include/exclude/size settings


@dataclass(frozen=True, slots=True)
class FileTable:
    """Per-file facts kept beside the chunks: what was indexed, when it was read, and what could not be."""

    hashes: dict[str, str]  # path -> sha256 of the file as indexed
    stats: dict[str, list[int]]  # path -> [mtime_ns, size] when it was read
    problems: list[FileProblem]  # skipped files and warnings


def index_dir(root: Path) -> Path:
    return root / INDEX_DIR


def lock_path(root: Path) -> Path:
    return index_dir(root) / "index.lock"


def _chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    data = asdict(chunk)
    data["tags"] = list(chunk.tags)
    data["decorators"] = list(chunk.decorators)
    data["calls"] = list(chunk.calls)
    del data["embed_text"]  # re-derivable, and the largest field
    return data


def _chunk_from_json(data: dict[str, Any]) -> Chunk:
    return Chunk(
        **{
            **data,
            "tags": tuple(data.get("tags", ())),
            "decorators": tuple(data.get("decorators", ())),
            "calls": tuple(data.get("calls", ())),
            "embed_text": "",
        }
    )


def _usearch_index() -> Any:  # noqa: ANN401 - the usearch.index.Index class
    # Measured with usearch 2.26.6 and onnxruntime 1.31.1: importing usearch first makes the later import of
    # onnxruntime crash the process (SIGSEGV); the other order is fine. So onnxruntime always loads first.
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


def _new_index(dims: int, keys: npt.NDArray[np.uint64], vectors: npt.NDArray[np.float32]) -> Any:  # noqa: ANN401
    index = _usearch_index()(ndim=dims, metric="cos", dtype="f32", connectivity=16, expansion_add=128)
    index.add(keys, np.asarray(vectors, dtype=np.float32))
    return index


def _file_identity(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"inode": stat.st_ino, "size": stat.st_size}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class IndexStore:
    """One kind's vectors and metadata, opened read-only or built anew."""

    def __init__(
        self,
        root: Path,
        kind: str,
        manifest: Manifest,
        chunks: dict[int, Chunk],
        index: Any,  # noqa: ANN401
        skipped: list[FileProblem],
        files: dict[str, str],
    ) -> None:
        self.root = root
        self.kind = kind
        self.manifest = manifest
        self.chunks = chunks
        self._index = index
        self.skipped = skipped
        self.files = files  # path -> content hash of the file as indexed
        self.stats: dict[str, list[int]] = {}  # path -> [mtime_ns, size] when it was read
        self.generation = ""  # changes with every write: derived indexes (lexical) sync against it
        self._call_graph: CallGraph | None = None
        self._vectors_path = self.paths(root, kind)[0]

    # ---- reading -------------------------------------------------------------------------------------------
    @staticmethod
    def paths(root: Path, kind: str) -> tuple[Path, Path]:
        folder = index_dir(root)
        return folder / f"{kind}.usearch", folder / f"{kind}.meta.json"

    @classmethod
    def exists(cls, root: Path, kind: str = "docs") -> bool:
        return cls.paths(root, kind)[1].is_file()

    @classmethod
    def open(cls, root: Path, kind: str = "docs") -> IndexStore:
        """Open the last complete generation; IndexNotFoundError / IndexCorruptError otherwise."""
        vectors_path, meta_path = cls.paths(root, kind)
        if not meta_path.is_file():
            raise IndexNotFoundError(f"{meta_path}: no index yet; run `knowledge reindex-all`")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            manifest = Manifest(**meta["manifest"])
            chunks = {int(key): _chunk_from_json(value) for key, value in meta["chunks"].items()}
            skipped = [FileProblem(**p) for p in meta.get("skipped", [])]
            files = dict(meta.get("files", {}))
            identity = meta["vectors"]
            generation = str(meta.get("generation", ""))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexCorruptError(
                f"{meta_path}: unreadable index metadata ({exc}); run `knowledge reindex-all`"
            ) from exc
        if manifest.format_version != FORMAT_VERSION:
            raise IndexIncompatibleError(
                f"{meta_path}: index format {manifest.format_version}, this knowledge reads {FORMAT_VERSION}; "
                "run `knowledge reindex-all`"
            )
        chosen = cls._matching_vectors(vectors_path, identity)
        if chosen is None:
            raise IndexCorruptError(
                f"{vectors_path}: does not match {meta_path.name} (interrupted or edited); run `knowledge reindex-all`"
            )
        index = cls._restore(chosen, manifest.dims, len(chunks)) if chunks else None
        store = cls(root, kind, manifest, chunks, index, skipped, files)
        store.stats = {path: list(value) for path, value in meta.get("stats", {}).items()}
        store.generation = generation
        store._vectors_path = chosen
        return store

    @staticmethod
    def _matching_vectors(vectors_path: Path, identity: dict[str, Any]) -> Path | None:
        if identity.get("count", 1) == 0:
            return vectors_path
        candidates = [vectors_path, vectors_path.with_name(vectors_path.name + ".prev")]
        existing = [p for p in candidates if p.is_file()]
        for path in existing:  # fast path: same inode and size as when written
            if _file_identity(path) == {"inode": identity["inode"], "size": identity["size"]}:
                return path
        for path in existing:  # copied or restored elsewhere: inodes differ, the bytes must not
            if path.stat().st_size == identity["size"] and _sha256(path) == identity["sha256"]:
                return path
        return None

    @staticmethod
    def _restore(path: Path, dims: int, count: int) -> Any:  # noqa: ANN401 - usearch.index.Index
        try:
            index = _usearch_index().restore(str(path), view=True)
        except Exception as exc:  # usearch raises bare RuntimeError/AssertionError
            raise IndexCorruptError(f"{path}: cannot open vector index ({exc}); run `knowledge reindex-all`") from exc
        if index is None or index.ndim != dims or len(index) != count:
            raise IndexCorruptError(f"{path}: vector index does not match its metadata; run `knowledge reindex-all`")
        return index

    def call_graph(self) -> CallGraph:
        """The call graph of this store's code chunks, built once per opened store."""
        if self._call_graph is None:
            self._call_graph = CallGraph(list(self.chunks.values()))
        return self._call_graph

    def file_changed(self, path: str) -> bool:
        """True when `path` on disk is no longer what was indexed (edited, deleted or unreadable)."""
        try:
            return hashlib.sha256((self.root / path).read_bytes()).hexdigest() != self.files.get(path)
        except OSError:
            return True

    def check_compatible(self, fingerprint: str) -> None:
        if self.manifest.fingerprint != fingerprint:
            raise IndexIncompatibleError(
                f"{self.paths(self.root, self.kind)[1]}: built with {self.manifest.model_id} "
                f"({self.manifest.model_variant}, fingerprint {self.manifest.fingerprint}), but the configured "
                f"model has fingerprint {fingerprint}; run `knowledge reindex-all`"
            )

    def search(self, vector: npt.NDArray[np.float32], k: int) -> list[tuple[Chunk, float]]:
        """The `k` nearest chunks with cosine similarity, best first."""
        return [(self.chunks[key], score) for key, score in self.search_keys(vector, k)]

    def search_keys(self, vector: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The `k` nearest keys with cosine similarity, best first."""
        if self._index is None or not self.chunks:
            return []
        k = min(k, len(self.chunks))
        exact = len(self.chunks) <= EXACT_SEARCH_LIMIT
        if not exact:
            self._index.expansion_search = max(EXPANSION_SEARCH, k)
        matches = self._index.search(np.asarray(vector, dtype=np.float32), k, exact=exact)
        return [
            (int(key), float(1.0 - distance))
            for key, distance in zip(matches.keys, matches.distances, strict=True)
            if int(key) in self.chunks
        ]

    # ---- writing -------------------------------------------------------------------------------------------
    @classmethod
    def write(
        cls,
        root: Path,
        kind: str,
        manifest: Manifest,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        table: FileTable,
    ) -> None:
        """Replace this kind's generation with a new one built from scratch; the caller holds the index lock."""
        keys = np.arange(len(chunks), dtype=np.uint64)
        index = _new_index(manifest.dims, keys, vectors) if len(chunks) else None
        by_key = {int(key): chunk for key, chunk in zip(keys, chunks, strict=True)}
        cls._write_generation(root, kind, manifest, by_key, index, table)

    def updated(
        self,
        manifest: Manifest,
        remove_paths: set[str],
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        table: FileTable,
    ) -> None:
        """Write a new generation: this one minus every chunk and file fact of `remove_paths`, plus the new ones."""
        kept = {key: chunk for key, chunk in self.chunks.items() if chunk.path not in remove_paths}
        removed = [key for key in self.chunks if key not in kept]
        next_key = max(self.chunks, default=-1) + 1
        new_keys = np.arange(next_key, next_key + len(chunks), dtype=np.uint64)
        vectors = np.asarray(vectors, dtype=np.float32)
        if self._index is None or len(removed) > len(self.chunks) // 4:
            # Large change or empty index: a fresh graph from the kept vectors is cheaper than many tombstones.
            kept_keys = np.array(sorted(kept), dtype=np.uint64)
            all_keys = np.concatenate([kept_keys, new_keys])
            all_vectors = np.concatenate([self.vectors(kept_keys), vectors]) if len(kept_keys) else vectors
            index = _new_index(manifest.dims, all_keys, all_vectors) if len(all_keys) else None
        else:
            index = _usearch_index().restore(str(self._vectors_path))  # a private, writable copy
            if removed:
                index.remove(np.array(removed, dtype=np.uint64))
            if len(chunks):
                index.add(new_keys, vectors)
        by_key = {**kept, **{int(key): chunk for key, chunk in zip(new_keys, chunks, strict=True)}}
        merged = FileTable(
            hashes={p: h for p, h in self.files.items() if p not in remove_paths} | table.hashes,
            stats={p: v for p, v in self.stats.items() if p not in remove_paths} | table.stats,
            problems=[p for p in self.skipped if p.path not in remove_paths] + table.problems,
        )
        self._write_generation(self.root, self.kind, manifest, by_key, index, merged)

    def vectors(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.float32]:
        """Stored vectors for `keys`, in order."""
        if self._index is None or not len(keys):
            return np.zeros((0, self.manifest.dims), dtype=np.float32)
        return np.asarray(self._index.get(keys, dtype=np.float32), dtype=np.float32).reshape(len(keys), -1)

    @classmethod
    def _write_generation(
        cls,
        root: Path,
        kind: str,
        manifest: Manifest,
        chunks: dict[int, Chunk],
        index: Any,  # noqa: ANN401 - usearch.index.Index or None when empty
        table: FileTable,
    ) -> None:
        vectors_path, meta_path = cls.paths(root, kind)
        vectors_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{vectors_path.name}.", suffix=".tmp", dir=vectors_path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            identity: dict[str, Any] = {"count": len(chunks), "inode": 0, "size": 0, "sha256": ""}
            if index is not None and len(chunks):
                index.save(str(tmp))
                with tmp.open("rb+") as handle:
                    os.fsync(handle.fileno())
                identity = {"count": len(chunks), **_file_identity(tmp), "sha256": _sha256(tmp)}
            meta = {
                "generation": uuid.uuid4().hex,
                "manifest": asdict(manifest),
                "vectors": identity,
                "files": table.hashes,
                "stats": {path: table.stats[path] for path in table.hashes if path in table.stats},
                "skipped": [asdict(p) for p in table.problems],
                "chunks": {str(key): _chunk_to_json(chunk) for key, chunk in sorted(chunks.items())},
            }
            if vectors_path.exists():
                prev = vectors_path.with_name(vectors_path.name + ".prev")
                link_tmp = vectors_path.with_name(f".{vectors_path.name}.prev.tmp")
                with contextlib.suppress(FileNotFoundError):
                    link_tmp.unlink()
                os.link(vectors_path, link_tmp)
                os.replace(link_tmp, prev)
            if identity["size"]:
                os.replace(tmp, vectors_path)
            fsync_dir(vectors_path.parent)
            atomic_write(meta_path, json.dumps(meta, ensure_ascii=False, separators=(",", ":")))
            atomic_write(
                index_dir(root) / "manifest.json",
                json.dumps(
                    {
                        **asdict(manifest),
                        "kinds": {kind: {"chunks": len(chunks), "files": len(table.hashes)}},
                        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    },
                    indent=2,
                ),
            )
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        gitignore = index_dir(root) / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, "# knowledge's index: local, rebuilt from the repository\n*\n")


def locked(root: Path, timeout: float = 600.0) -> contextlib.AbstractContextManager[None]:
    """The lock every writer of `.knowledge/` holds."""
    return file_lock(lock_path(root), timeout)
