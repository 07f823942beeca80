"""Indexing use cases in two phases.

1. `Indexer.rebuild` / `Indexer.update`: everything that needs no model — discovery, chunks, lexical index, symbols,
   call graph, and vectors the content-hash cache already has — in one store transaction. The index is searchable
   (lexically, plus whatever vectors exist) as soon as it returns.
2. `embed_pending`: the model fills in the missing vectors batch by batch; each batch is committed (and cached), so an
   interrupted run resumes where it stopped. One runner per index at a time (`embed.lock`); others leave it the work.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .chunk_files import Chunked, TokenCounter, chunk_batches
from .chunking import CHUNKER_VERSION
from .config import Settings
from .corpus import candidate_paths
from .fs import private_dir
from .kind import KindIndex, selection_fingerprint
from .records import IndexReport, Progress
from .store import (
    FORMAT_VERSION,
    Change,
    ChunkStore,
    EmbedProgress,
    Manifest,
    NewChunk,
    embed_lock_path,
)
from .store.engines import Engine, LocalEngine
from .version import __version__

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .embedding.cache import EmbeddingCache

ProgressCallback = Callable[[Progress], None]
EMBED_BATCH = 256  # chunks per committed batch: small enough to lose little when killed
PROGRESS_SECONDS = 2.0


class DocumentEmbedder(Protocol):
    def embed_documents(
        self, texts: list[str], on_batch: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What an index needs to know of its model without loading it."""

    model_id: str
    variant: str
    dims: int
    fingerprint: str  # of the built model; empty for models that cannot be cached


def index_fingerprint(model_fingerprint: str) -> str:
    return f"{model_fingerprint}-c{CHUNKER_VERSION}"


def model_fingerprint_of(index_fingerprint: str) -> str:
    """The model's part: an index chunked by an older chunker still answers with the same model's vectors (the
    next reindex chunks it again)."""
    return index_fingerprint.rsplit("-c", 1)[0]


def open_cache(settings: Settings, model: ModelIdentity) -> EmbeddingCache | None:
    if not model.fingerprint:
        return None
    from .embedding.cache import EmbeddingCache

    return EmbeddingCache(settings.home / "embeddings" / f"{model.fingerprint}.sqlite", model.dims)


class Indexer:
    """Phase one for every kind: chunk what changed and commit it, with cached vectors, in one transaction."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        model: ModelIdentity,
        thresholds: tuple[float, float],
        counter: Callable[[], TokenCounter],
        on_progress: ProgressCallback | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.root = root
        self.engine = engine or LocalEngine(root)
        self.settings = settings
        self.model = model
        self.thresholds = thresholds
        self._counter = counter
        self._on_progress = on_progress

    def manifest(self) -> Manifest:
        return Manifest(
            format_version=FORMAT_VERSION,
            knowledge_version=__version__,
            model_id=self.model.model_id,
            model_variant=self.model.variant,
            dims=self.model.dims,
            metric="cos",
            chunker_version=CHUNKER_VERSION,
            fingerprint=index_fingerprint(self.model.fingerprint),
            threshold=self.thresholds[0],
            full_threshold=self.thresholds[1],
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            selection=selection_fingerprint(self.settings),
        )

    def compatible(self, store: ChunkStore) -> bool:
        mine, theirs = self.manifest(), store.manifest
        return (mine.fingerprint, mine.dims, mine.model_variant) == (
            theirs.fingerprint,
            theirs.dims,
            theirs.model_variant,
        )

    def rebuild(self, kind: str, commit: str | None) -> tuple[ChunkStore, IndexReport]:
        """A clean index of `kind` built beside the live one and swapped in; vectors come from the cache only.

        With no live index to answer meanwhile, the new one goes live after its first batch of files and fills in
        place, one transaction per batch: searchable within seconds of starting. It records the commit only when
        complete, so an interrupted build is finished by the next run (what it lacks differs from the disk).
        """
        started = time.monotonic()
        progressive = not self.engine.exists(kind)
        store = self.engine.create(kind, self.manifest())
        paths = candidate_paths(self.root, self.settings, kind)
        batches = chunk_batches(self.root, self.settings, kind, paths, commit, self._counter, self._on_progress)
        if not progressive:
            chunked = Chunked.merged(batches)
            self._apply(store, frozenset(), chunked, commit)
            store.publish()
            return store, self._report(store, chunked, 0, started)
        chunked = Chunked()
        for number, batch in enumerate(batches):
            chunked.extend(batch)
            self._apply(store, frozenset(), batch, None, set_commit=False)
            if number == 0:
                store.publish()
        store.set_commit(commit)
        store.publish()
        return store, self._report(store, chunked, 0, started)

    def update(self, index: KindIndex, targets: Iterable[str], commit: str | None) -> IndexReport:
        """Re-chunk exactly `targets` (changed, added or deleted paths) and move the commit; no model needed."""
        started = time.monotonic()
        store = index.store
        known = set(store.files()) | {p.path for p in store.problems()}
        wanted = set(targets)
        candidates = set(candidate_paths(self.root, self.settings, index.kind)) if wanted else set()
        relevant = (wanted & candidates) | (wanted & known)
        if not relevant:
            if commit != store.commit():
                store.set_commit(commit)  # one row: the commit moved, nothing indexed changed
            return self._report(store, Chunked(), 0, started, write=False)
        chunked = self._chunk(sorted(relevant & candidates), index.kind, commit)
        removed = len([p for p in relevant if p in known and p not in {f.path for f in chunked.files}])
        self._apply(store, frozenset(relevant), chunked, commit)
        return self._report(store, chunked, removed, started)

    def _apply(
        self, store: ChunkStore, remove: frozenset[str], chunked: Chunked, commit: str | None, set_commit: bool = True
    ) -> None:
        cache = open_cache(self.settings, self.model)
        try:
            known = cache.get_many([c.content_hash for c in chunked.chunks]) if cache is not None else {}
        finally:
            if cache is not None:
                cache.close()
        change = Change(
            remove_paths=remove,
            chunks=[
                NewChunk(chunk, known.get(chunk.content_hash), lexical)
                for chunk, lexical in zip(chunked.chunks, chunked.lexical, strict=True)
            ],
            files=chunked.files,
            problems=[*chunked.skipped, *chunked.warnings],
            commit=commit,
            set_commit=set_commit,
        )
        store.apply(change)

    def _chunk(self, paths: Iterable[str], kind: str, commit: str | None) -> Chunked:
        return Chunked.merged(
            chunk_batches(self.root, self.settings, kind, list(paths), commit, self._counter, self._on_progress)
        )

    def _report(
        self, store: ChunkStore, chunked: Chunked, removed: int, started: float, write: bool = True
    ) -> IndexReport:
        coverage = store.coverage()
        pending = coverage.chunks - coverage.embedded
        return IndexReport(
            files_indexed=len(chunked.files),
            chunks_total=len(chunked.chunks),
            chunks_embedded=0,
            chunks_reused=len(chunked.chunks) - min(pending, len(chunked.chunks)) if write else 0,
            files_removed=removed,
            skipped=tuple(chunked.skipped),
            warnings=tuple(chunked.warnings),
            undescribed=tuple(chunked.undescribed),
            seconds=round(time.monotonic() - started, 3),
            chunks_pending=pending,
            dense_coverage=coverage.ratio,
        )


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """A non-blocking exclusive flock: yields whether it was taken."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@dataclass(slots=True)
class EmbedResult:
    embedded: int = 0  # run through the model
    reused: int = 0  # found in the cache
    ran: bool = False  # False when another process was already embedding
    seconds: float = 0.0


def embed_pending(
    root: Path,
    stores: list[ChunkStore],
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None = None,
    compact_at_end: bool = False,
) -> EmbedResult:
    """Give every pending chunk its vector, batch by batch; the model loads only if the cache lacks something."""
    result = EmbedResult()
    started = time.monotonic()
    try:
        _embed_all(root, stores, embedder, cache, writer_lock, on_progress, compact_at_end, result)
    finally:
        result.seconds = round(time.monotonic() - started, 3)
    return result


def _embed_all(
    root: Path,
    stores: list[ChunkStore],
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None,
    compact_at_end: bool,
    result: EmbedResult,
) -> None:
    while True:
        with try_lock(embed_lock_path(root)) as mine:
            if not mine:
                return
            result.ran = True
            sizes = [store.pending_size() for store in stores]
            tracker = _Tracker(sum(n for n, _ in sizes), sum(c for _, c in sizes))
            for store in stores:
                _embed_store(store, embedder, cache, writer_lock, on_progress, result, tracker)
                if compact_at_end:
                    with writer_lock():
                        store.compact(force=True)
        # Released: anything committed since is either ours to take (lock free) or the next runner's.
        if not any(store.pending_size()[0] for store in stores):
            return


@dataclass(slots=True)
class _Tracker:
    """One embedding pass over every store: its rate and ETA are the whole index's, not the running store's."""

    chunks_total: int = 0
    chars_total: int = 0
    chars_done: int = 0  # settled: batches committed
    chars_embedded: int = 0  # of those, what the model embedded (not the cache): the rate's numerator
    chars_in_flight: float = 0.0  # estimated progress inside the batch the model is on
    started: float = field(default_factory=time.monotonic)

    def rate(self) -> float:
        embedded = self.chars_embedded + self.chars_in_flight
        return embedded / max(1e-6, time.monotonic() - self.started) if embedded else 0.0

    def progress(self, done: int, total: int) -> EmbedProgress:
        chars_done = round(self.chars_done + self.chars_in_flight)
        return EmbedProgress(
            done, max(total, done), chars_done, max(self.chars_total, chars_done), self.rate(), time.time()
        )


def _report_within(report: Callable[[int], None], before: int, cap: int, embedded: int) -> None:
    report(before + min(embedded, cap))


def _embed_tracked(
    embedder: DocumentEmbedder, texts: list[str], tracker: _Tracker, on_texts: Callable[[int], None]
) -> npt.NDArray[np.float32]:
    """Vectors of `texts`, with `on_texts(how many so far)` after each of the model's own batches."""
    chars_per_text = sum(map(len, texts)) / len(texts)
    embedded = 0

    def within(count: int) -> None:
        nonlocal embedded
        embedded += count
        tracker.chars_in_flight = embedded * chars_per_text
        on_texts(embedded)

    try:
        return embedder.embed_documents(texts, on_batch=within)
    finally:
        tracker.chars_in_flight = 0.0


def _embed_store(
    store: ChunkStore,
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None,
    result: EmbedResult,
    tracker: _Tracker,
) -> None:
    total, _ = store.pending_size()
    if total == 0:
        return
    done = 0
    last_report = 0.0

    def report(done_now: int) -> None:
        """Progress after every model batch (seconds apart), not only per committed batch (minutes on 2 cores)."""
        nonlocal last_report
        progress = tracker.progress(done_now, total)
        now = time.monotonic()
        if now - last_report >= PROGRESS_SECONDS:
            last_report = now
            store.record_progress(progress)
        if on_progress is not None:
            on_progress(Progress(f"embedding {store.kind}", progress.done, progress.total, progress.eta_seconds))

    try:
        while True:
            batch = store.pending(EMBED_BATCH)
            if not batch:
                break
            known = cache.get_many([p.content_hash for p in batch]) if cache is not None else {}
            missing = [p for p in batch if p.content_hash not in known]
            fresh: dict[str, npt.NDArray[np.float32]] = {}
            if missing:
                texts = list(dict.fromkeys(p.embed_text for p in missing))
                before, cap = done + len(batch) - len(missing), len(missing)
                vectors = _embed_tracked(embedder(), texts, tracker, partial(_report_within, report, before, cap))
                tracker.chars_embedded += sum(len(p.embed_text) for p in missing)
                by_text = dict(zip(texts, vectors, strict=True))
                fresh = {p.content_hash: by_text[p.embed_text] for p in missing}
                if cache is not None:
                    cache.put_many(fresh)
            with writer_lock():
                store.add_vectors({p.key: {**known, **fresh}[p.content_hash] for p in batch})
                store.compact()
            result.embedded += len(missing)
            result.reused += len(batch) - len(missing)
            done += len(batch)
            tracker.chars_done += sum(len(p.embed_text) for p in batch)
            report(done)
    finally:
        store.record_progress(None)
