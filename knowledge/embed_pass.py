"""Indexing, phase two: the model fills in the vectors phase one could not take from the cache, batch by batch;
each batch is committed (and cached), so an interrupted run resumes where it stopped. One runner per index at a time
(`embed.lock`); others leave it the work. Progress after every model batch, with the whole index's ETA."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from .child import knowledge_argv, start_detached
from .config import Settings
from .embedding import model_spec
from .fs import is_locked, open_append, try_lock
from .globs import glob_to_regex, matches_any
from .indexer import ProgressCallback
from .records import Progress
from .store import EmbedProgress, FillSide, Pending, StoreReader, embed_lock_path, index_dir
from .store.asked import recently_asked

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .embedding.cache import EmbeddingCache

EMBED_BATCH = 256  # chunks per committed batch: small enough to lose little when killed
PROGRESS_SECONDS = 2.0


class DocumentEmbedder(Protocol):
    def embed_documents(
        self, texts: list[str], on_batch: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]: ...


@dataclass(slots=True)
class EmbedResult:
    embedded: int = 0  # run through the model
    reused: int = 0  # found in the cache
    ran: bool = False  # False when another process was already embedding
    seconds: float = 0.0


def embed_pending(
    root: Path,
    stores: Sequence[FillSide],
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None = None,
    compact_at_end: bool = False,
    first: Sequence[str] = (),
    in_scope: Callable[[str], bool] | None = None,
) -> EmbedResult:
    """Give every pending chunk its vector, batch by batch (the files answers pointed at during the fill first, then
    those in `first`, then `FILL_ORDER`), only in the files `in_scope` keeps; the model loads only if the cache lacks
    something."""
    result = EmbedResult()
    started = time.monotonic()
    if in_scope is not None:  # `fill_paths` / `fill_exclude`: the files outside stay at the first stage
        stores = [
            cast(FillSide, _Scoped(store, [path for path in store.files() if not in_scope(path)])) for store in stores
        ]
    try:
        _embed_all(root, stores, embedder, cache, writer_lock, on_progress, compact_at_end, result, first)
    finally:
        result.seconds = round(time.monotonic() - started, 3)
    return result


class _Scoped:
    """A store's fill, less the files the fill's scope leaves out."""

    def __init__(self, store: FillSide, skip: list[str]) -> None:
        self._store, self._skip = store, skip
        self.kind = store.kind

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def pending(self, limit: int, first: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Pending]:
        return self._store.pending(limit, first, [*self._skip, *skip])

    def pending_size(self, skip: Sequence[str] = ()) -> tuple[int, int]:
        return self._store.pending_size([*self._skip, *skip])


def waiting(settings: Settings, stores: Sequence[FillSide], pending: int) -> int:
    """Of `pending` chunks without a vector, those a fill will still embed: none with `fill = false`, those in its
    scope (`fill_paths`, `fill_exclude`)."""
    scope = fill_scope(settings)
    if not settings.fill or not pending or scope is None:
        return pending if settings.fill else 0
    return sum(store.pending_size([path for path in store.files() if not scope(path)])[0] for store in stores)


def fill_scope(settings: Settings) -> Callable[[str], bool] | None:
    """Which files the fill gives transformer vectors (`fill_paths`, less `fill_exclude`); None: every file."""
    if not settings.fill_paths and not settings.fill_exclude:
        return None
    wanted = [glob_to_regex(p) for p in settings.fill_paths]
    left = [glob_to_regex(p) for p in settings.fill_exclude]
    return lambda path: (not wanted or matches_any(path, wanted)) and not matches_any(path, left)


def _embed_all(
    root: Path,
    stores: Sequence[FillSide],
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None,
    compact_at_end: bool,
    result: EmbedResult,
    first: Sequence[str],
) -> None:
    while True:
        with try_lock(embed_lock_path(root)) as mine:
            if not mine:
                return
            result.ran = True
            sizes = [store.pending_size() for store in stores]
            tracker = _Tracker(sum(n for n, _ in sizes), sum(c for _, c in sizes))
            for store in stores:
                _embed_store(store, embedder, cache, writer_lock, on_progress, result, tracker, first, root)
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
    started: float = field(default_factory=lambda: time.monotonic())

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
    # The model embeds the shortest texts first (onnx_embedder: by token count), so the first n done are the n
    # shortest: crediting them at the mean length made the early rate too high and the ETA rise as longer ones came.
    done_chars = [0, *itertools.accumulate(sorted(map(len, texts)))]
    embedded = 0

    def within(count: int) -> None:
        nonlocal embedded
        embedded += count
        tracker.chars_in_flight = done_chars[min(embedded, len(texts))]
        on_texts(embedded)

    try:
        return embedder.embed_documents(texts, on_batch=within)
    finally:
        tracker.chars_in_flight = 0.0


def _embed_store(
    store: FillSide,
    embedder: Callable[[], DocumentEmbedder],
    cache: EmbeddingCache | None,
    writer_lock: Callable[[], contextlib.AbstractContextManager[None]],
    on_progress: ProgressCallback | None,
    result: EmbedResult,
    tracker: _Tracker,
    first: Sequence[str],
    root: Path,
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
            # read again every batch: what answers point at during the fill comes next
            batch = store.pending(EMBED_BATCH, list(dict.fromkeys([*recently_asked(index_dir(root)), *first])))
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


def embed_in_background(root: Path, model: str, variant: str) -> bool:
    """Start a detached `knowledge embed` with this model for pending chunks; False when one is already running."""
    if is_locked(embed_lock_path(root)):
        return False
    log = index_dir(root) / "logs" / "embed.log"
    with os.fdopen(open_append(root, log), "ab") as out:
        # not quiet: off a terminal it writes a plain progress line every few seconds, so embed.log follows it
        start_detached(knowledge_argv(root, "--model", model, "--variant", variant, "embed"), out.fileno())
    return True


def fill_mismatch(
    stores: Sequence[StoreReader], settings: Settings, may_have_built: Callable[[str, str, str], bool] | None
) -> str | None:
    """Why no fill may write into `stores` (one line), judged without loading a model: a vector of another model's
    size or space would break the index. `may_have_built`: this process's model (None: the configured one's name and
    variant, what a detached `knowledge embed` loads)."""
    spec = model_spec(settings.model)
    for store in stores:
        manifest = store.manifest
        if may_have_built is None:
            same = (manifest.model_id, manifest.model_variant) == (spec.name, settings.model_variant)
        else:
            same = may_have_built(manifest.model_id, manifest.model_variant, manifest.fingerprint)
        if not same:
            return (
                f"the {store.kind} index was built with {manifest.model_id} ({manifest.model_variant}), and the fill "
                f"would use {settings.model} ({settings.model_variant}): nothing embedded; `knowledge reindex-all` "
                f"rebuilds it with {settings.model}"
            )
    return None
