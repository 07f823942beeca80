"""The store seam: what the use cases need from an engine that keeps one kind's chunks, vectors and lexical index.

`LocalStore` (SQLite + USearch under `.knowledge/`) is the default engine; a second engine implements the same
`ChunkStore` protocol. Every write is one transaction: a reader sees the state before or after it, never half.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..records import INDEX_DIR_NAME, Chunk, FileProblem

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FORMAT_VERSION = 2
INDEX_DIR = INDEX_DIR_NAME


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
    selection: str = ""  # fingerprint of include/exclude/size settings
    static_stage: str = ""  # the static table whose vectors this index holds for waiting chunks ("": before v2)

    @property
    def model_fingerprint(self) -> str:
        """The model's part of `fingerprint`: an index chunked by an older chunker still answers with the same model's
        vectors (the next reindex chunks it again)."""
        return self.fingerprint.rsplit("-c", 1)[0]


def index_fingerprint(model_fingerprint: str, chunker_version: int) -> str:
    """What a manifest records: the model's fingerprint and the chunker's version (`Manifest.model_fingerprint`)."""
    return f"{model_fingerprint}-c{chunker_version}"


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What was indexed of one file: its content hash and (mtime_ns, size) when it was read."""

    path: str
    content_hash: str
    mtime_ns: int = 0
    size: int = 0


@dataclass(frozen=True, slots=True)
class NewChunk:
    """A chunk to add, with its vector when one is already known (the embedding cache)."""

    chunk: Chunk
    vector: npt.NDArray[np.float32] | None = None
    lexical: str | None = None  # the chunk's lexical terms when already computed (lexical.terms of chunk_text)
    static: npt.NDArray[np.float32] | None = None  # the static first stage's vector, for a chunk without `vector`


@dataclass(frozen=True, slots=True)
class Change:
    """One transaction: drop everything of `remove_paths`, then add the new chunks, file facts and problems."""

    remove_paths: frozenset[str]
    chunks: Sequence[NewChunk] = ()
    files: Sequence[FileFacts] = ()
    problems: Sequence[FileProblem] = ()
    commit: str | None = None
    set_commit: bool = True


@dataclass(frozen=True, slots=True)
class Pending:
    """A chunk still waiting for its vector."""

    key: int
    content_hash: str
    embed_text: str


@dataclass(frozen=True, slots=True)
class EmbedProgress:
    """What a running embedder last wrote: chunks done and left, and its measured rate."""

    done: int
    total: int
    chars_done: int  # characters of embedding input: cost follows text length, not chunk count
    chars_total: int
    chars_per_second: float
    updated_at: float

    @property
    def eta_seconds(self) -> float | None:
        if self.chars_per_second <= 0:
            return None
        return round(max(0, self.chars_total - self.chars_done) / self.chars_per_second, 1)


@dataclass(frozen=True, slots=True)
class Coverage:
    chunks: int
    embedded: int
    progress: EmbedProgress | None = None
    static: int = 0  # chunks without a transformer vector that have the static first stage's
    static_rows: int = 0  # chunks with the static stage's vector, with or without the transformer's

    @property
    def ratio(self) -> float:
        return 1.0 if self.chunks == 0 else round(self.embedded / self.chunks, 4)


@dataclass(slots=True)
class ScoredKey:
    key: int
    score: float


@dataclass(frozen=True, slots=True)
class StoreSummary:
    files: int
    chunks: int
    commit: str | None
    problems: tuple[FileProblem, ...] = field(default_factory=tuple)


class StoreReader(Protocol):
    """What every side reads: the index's record, its chunks and files, and how much of it is embedded."""

    kind: str
    manifest: Manifest
    keeps_static: bool  # whether it holds the static stage's vector of every chunk (the shared store holds none)

    def commit(self) -> str | None:
        """The git commit the stored chunks reflect (None outside git or before the first write)."""
        ...

    def files(self) -> dict[str, FileFacts]: ...

    def file(self, path: str) -> FileFacts | None:
        """What was indexed of one file, if it was."""
        ...

    def problems(self) -> list[FileProblem]: ...

    def summary(self) -> StoreSummary: ...

    def chunks(self, keys: Sequence[int]) -> dict[int, Chunk]:
        """The chunks of `keys` that exist."""
        ...

    def all_chunks(self) -> dict[int, Chunk]: ...

    def keeps_calls(self) -> bool:
        """Whether `callers` is read by key (a table of who calls what), so a call graph need not load every chunk."""
        ...

    def chunks_of_path(self, path: str) -> list[Chunk]: ...

    def chunk_by_id(self, chunk_id: str) -> Chunk | None: ...

    def vectors(self, keys: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors of those `keys` that have one."""
        ...

    def version(self) -> str:
        """Changes whenever chunks are added or removed (not when vectors arrive)."""
        ...

    def coverage(self) -> Coverage: ...

    def keep_warm(self, wait: bool = False) -> None:
        """A long-running process holds this store: keep whatever makes its queries faster (may do nothing)."""
        ...

    def close(self) -> None: ...


class SearchSide(Protocol):
    """All a search asks of a store, and nothing else (search, retrieval, grep, locate and serving read an index
    through `KindIndex.searched`, typed by this): eleven members, both engines alike (tests/test_store_contract.py)."""

    manifest: Manifest

    def files(self) -> dict[str, FileFacts]: ...

    def chunks(self, keys: Sequence[int]) -> dict[int, Chunk]:
        """The chunks of `keys` that exist."""
        ...

    def chunks_of_path(self, path: str) -> list[Chunk]:
        """One file's chunks, in key order (a chunk's id starts with its path: `path#name`)."""
        ...

    def dense_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        """The `k` nearest embedded chunks by cosine similarity, best first."""
        ...

    def static_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        """The `k` chunks closest to `vector` in the static stage's space (every chunk that has a static row)."""
        ...

    def lexical_search(self, terms: Sequence[str], k: int) -> list[ScoredKey]:
        """BM25 over the chunks' lexical terms (any term may match), best first."""
        ...

    def lexical_terms(self, keys: Sequence[int]) -> dict[int, str]:
        """The lexical text (space-separated terms) stored for `keys`."""
        ...

    def defining(self, names: Sequence[str], limit: int) -> list[int]:
        """Keys of chunks whose symbol is one of `names` (lower case, underscores removed)."""
        ...

    def callers(self, calls: Sequence[str]) -> list[tuple[str, int]]:
        """(call, key) of the chunks that make one of `calls` as recorded (`f`, `.f`, `path::Qual`), by key: the call
        graph's callers, read by name."""
        ...

    def similarities(self, keys: Sequence[int], vector: npt.NDArray[np.float32]) -> dict[int, float]:
        """The cosine of `vector` to each of `keys` that has a stored vector, computed where the vectors live."""
        ...


class WriteSide(StoreReader, Protocol):
    """What indexing writes (indexer.py): chunks, files and lexical rows in one change, and the commit."""

    def apply(self, change: Change) -> None:
        """Apply one change atomically."""
        ...

    def set_commit(self, commit: str | None) -> None: ...


class FillSide(StoreReader, Protocol):
    """What the fill asks and writes (embed_pass.py): the chunks waiting for vectors, then their vectors."""

    def pending(self, limit: int, first: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Pending]:
        """Chunks without a vector, at most `limit`, in fill order (the files in `first` before others), none of the
        files in `skip` (outside `fill_paths`, or in `fill_exclude`)."""
        ...

    def pending_size(self, skip: Sequence[str] = ()) -> tuple[int, int]:
        """(chunks, characters of embedding input) still waiting for vectors, none of the files in `skip`."""
        ...

    def add_vectors(self, vectors: dict[int, npt.NDArray[np.float32]]) -> int:
        """Store vectors for pending chunks (keys gone meanwhile are ignored); returns how many were stored."""
        ...

    def record_progress(self, progress: EmbedProgress | None) -> None: ...

    def compact(self, force: bool = False) -> bool:
        """Fold recent vectors into the main vector index when worth it (or `force`); True when it did."""
        ...


class ChunkStore(SearchSide, WriteSide, FillSide, Protocol):  # WriteSide and FillSide bring StoreReader
    """One kind's chunks, their vectors and their lexical index, as one engine keeps them: the three sides."""


_STORED_FIELDS = tuple(name for name in Chunk.__dataclass_fields__ if name != "embed_text")
_TUPLE_FIELDS = ("tags", "decorators", "calls", "references", "names")
_REQUIRED = object()
_DEFAULTS = {name: spec.default for name, spec in Chunk.__dataclass_fields__.items() if spec.default is not MISSING}


def recent_first(
    first: Sequence[str], recent: Sequence[Sequence[Any]], rest: Sequence[Sequence[Any]], limit: int
) -> list[Pending]:
    """`pending`'s answer from rows (key, content hash, embed text, path) of the files in `first`, in fill order, and of
    the others: the former first, most recently changed file first, then the others, `limit` in all."""
    rank = {path: n for n, path in enumerate(first)}
    ordered = sorted(recent, key=lambda row: rank[row[3]]) + list(rest)  # stable: fill order within a file
    return [Pending(int(key), digest, text or "") for key, digest, text, _ in ordered[:limit]]


def chunk_to_json(chunk: Chunk) -> str:
    """A chunk as engines store it; embed_text is kept in its own column, and only until the chunk is embedded."""
    return json.dumps(
        {name: getattr(chunk, name) for name in _STORED_FIELDS}, ensure_ascii=False, separators=(",", ":")
    )


def chunk_to_compact_json(chunk: Chunk, leave_out: frozenset[str] = frozenset()) -> str:
    """A chunk as `chunk_to_json` writes it, less the fields that hold their default (`chunk_from_dict` restores
    them: a tenth of a doc section's row in a large shared store) and those the caller keeps in columns."""
    return json.dumps(
        {
            name: value
            for name in _STORED_FIELDS
            if name not in leave_out and (value := getattr(chunk, name)) != _DEFAULTS.get(name, _REQUIRED)
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def chunk_from_dict(data: dict[str, Any]) -> Chunk:
    return Chunk(**{**data, **{name: tuple(data.get(name, ())) for name in _TUPLE_FIELDS}, "embed_text": ""})


def index_dir(root: Path) -> Path:
    return root / INDEX_DIR


def lock_path(root: Path) -> Path:
    return index_dir(root) / "index.lock"


def embed_lock_path(root: Path) -> Path:
    return index_dir(root) / "embed.lock"


__all__ = [
    "FORMAT_VERSION",
    "INDEX_DIR",
    "Change",
    "ChunkStore",
    "Coverage",
    "EmbedProgress",
    "FileFacts",
    "Manifest",
    "NewChunk",
    "Pending",
    "ScoredKey",
    "StoreSummary",
    "chunk_from_dict",
    "chunk_to_json",
    "embed_lock_path",
    "index_dir",
    "lock_path",
]
