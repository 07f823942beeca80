"""Indexing use cases in two phases.

1. `Indexer.rebuild` / `Indexer.update` (here): everything that needs no model — discovery, chunks, lexical index,
   symbols, call graph, and vectors the content-hash cache already has — in one store transaction. The index is
   searchable (lexically, plus whatever vectors exist) as soon as it returns.
2. `embed_pass.embed_pending`: the model fills in the missing vectors batch by batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from .chunk_files import Chunked, chunk_batches
from .chunking import CHUNKER_VERSION
from .config import Settings
from .corpus import candidate_paths
from .embedding import ModelIdentity, StaticStage, TokenCounter
from .kind import KindIndex, selection_fingerprint
from .records import IndexReport, Progress
from .store import (
    FORMAT_VERSION,
    Change,
    ChunkStore,
    Manifest,
    NewChunk,
    StoreReader,
    WriteSide,
    index_fingerprint,
)
from .store.engines import Engine, LocalEngine
from .version import __version__

if TYPE_CHECKING:
    from .embedding.cache import EmbeddingCache

ProgressCallback = Callable[[Progress], None]


def open_cache(settings: Settings, model: ModelIdentity) -> EmbeddingCache | None:
    if not model.fingerprint:
        return None
    from .embedding.cache import EmbeddingCache

    return EmbeddingCache.of_model(settings.home, model.fingerprint, model.dims)


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
        static: Callable[[], StaticStage | None] | None = None,
        static_fingerprint: Callable[[], str] | None = None,
    ) -> None:
        self.root = root
        self._static = static
        self._static_fingerprint = static_fingerprint
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
            fingerprint=index_fingerprint(self.model.fingerprint, CHUNKER_VERSION),
            threshold=self.thresholds[0],
            full_threshold=self.thresholds[1],
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            selection=selection_fingerprint(self.settings),
            static_stage=self.static_stage(),
        )

    def static_stage(self) -> str:
        """The fingerprint of the static stage this indexer writes ("" when it has none), without loading it."""
        if self._static_fingerprint is not None:
            return self._static_fingerprint()
        stage = self._static() if self._static is not None else None
        return "" if stage is None else stage.fingerprint

    def compatible(self, store: StoreReader) -> bool:
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
        tally = Chunked()  # what the report needs; each batch's chunks are let go once stored
        chunks = 0
        # the store writes one batch while the next is prepared (its static vectors): a store's writes wait on its
        # database and disk, the preparing on the CPU, and in turns each waited for the other (docs/benchmarks.md §0a)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-writer") as writer:
            written: Future[None] | None = None
            for number, batch in enumerate(
                chunk_batches(self.root, self.settings, kind, paths, commit, self._counter, self._on_progress)
            ):
                change = self._change(frozenset(), batch, None, set_commit=False)
                if written is not None:
                    written.result()
                written = writer.submit(store.apply, change)
                chunks += len(batch.chunks)
                tally.extend(
                    Chunked(
                        files=batch.files, skipped=batch.skipped, warnings=batch.warnings, undescribed=batch.undescribed
                    )
                )
                if progressive and number == 0:
                    written.result()
                    store.publish()
            if written is not None:
                written.result()
        store.set_commit(commit)
        store.publish()
        return store, self._report(store, tally, 0, started, chunks=chunks)

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
        self, store: WriteSide, remove: frozenset[str], chunked: Chunked, commit: str | None, set_commit: bool = True
    ) -> None:
        store.apply(self._change(remove, chunked, commit, set_commit))

    def _change(self, remove: frozenset[str], chunked: Chunked, commit: str | None, set_commit: bool = True) -> Change:
        """What a store is given to write: the chunks with their cached and static vectors, files and problems."""
        cache = open_cache(self.settings, self.model)
        try:
            known = cache.get_many([c.content_hash for c in chunked.chunks]) if cache is not None else {}
        finally:
            if cache is not None:
                cache.close()
        stage = self._static() if self._static is not None and chunked.chunks else None
        static = {}  # the static stage: a dense vector for every chunk now, kept beside its transformer vector
        if stage is not None:
            vectors = stage.embed_documents([chunk.embed_text for chunk in chunked.chunks])
            static = dict(enumerate(vectors))
        return Change(
            remove_paths=remove,
            chunks=[
                NewChunk(chunk, known.get(chunk.content_hash), lexical, static.get(n))
                for n, (chunk, lexical) in enumerate(zip(chunked.chunks, chunked.lexical, strict=True))
            ],
            files=chunked.files,
            problems=[*chunked.skipped, *chunked.warnings],
            commit=commit,
            set_commit=set_commit,
        )

    def _chunk(self, paths: Iterable[str], kind: str, commit: str | None) -> Chunked:
        return Chunked.merged(
            chunk_batches(self.root, self.settings, kind, list(paths), commit, self._counter, self._on_progress)
        )

    def _report(
        self,
        store: StoreReader,
        chunked: Chunked,
        removed: int,
        started: float,
        write: bool = True,
        chunks: int | None = None,
    ) -> IndexReport:
        coverage = store.coverage()
        pending = coverage.chunks - coverage.embedded
        total = len(chunked.chunks) if chunks is None else chunks
        return IndexReport(
            files_indexed=len(chunked.files),
            chunks_total=total,
            chunks_embedded=0,
            chunks_reused=total - min(pending, total) if write else 0,
            files_removed=removed,
            skipped=tuple(chunked.skipped),
            warnings=tuple(chunked.warnings),
            undescribed=tuple(chunked.undescribed),
            docs_indexed=len(chunked.files) if store.kind == "docs" else 0,
            seconds=round(time.monotonic() - started, 3),
            chunks_pending=pending,
            dense_coverage=coverage.ratio,
        )


def merge_reports(reports: list[IndexReport], started: float) -> IndexReport:
    """One report for the kinds indexed in one pass."""
    pending = sum(r.chunks_pending for r in reports)
    return IndexReport(
        files_indexed=sum(r.files_indexed for r in reports),
        chunks_total=sum(r.chunks_total for r in reports),
        chunks_embedded=0,
        chunks_reused=sum(r.chunks_reused for r in reports),
        files_removed=sum(r.files_removed for r in reports),
        skipped=tuple(p for r in reports for p in r.skipped),
        warnings=tuple(p for r in reports for p in r.warnings),
        undescribed=tuple(p for r in reports for p in r.undescribed),
        docs_indexed=sum(r.docs_indexed for r in reports),
        seconds=round(time.monotonic() - started, 3),
        chunks_pending=pending,
        dense_coverage=min((r.dense_coverage for r in reports), default=1.0),
    )
