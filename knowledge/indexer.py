"""reindex_all() and reindex_changes(): corpus -> chunks -> embeddings (cached by content hash) -> store.

Both write a whole new store generation under the index lock; reindex_changes only re-chunks the files that changed
since the commit the index was last brought up to, and only embeds chunks whose text is not in the cache.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from . import __version__, git
from .chunking import CHUNKER_VERSION, chunk_source
from .config import Settings
from .corpus import KINDS, candidate_paths, read_source
from .embedding import Embedder
from .embedding.cache import EmbeddingCache, embed_with_cache
from .errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from .lexical import sync_all
from .records import Chunk, FileProblem, IndexReport, Progress
from .store import FORMAT_VERSION, FileTable, IndexStore, Manifest, index_dir, locked

ProgressCallback = Callable[[Progress], None]


def index_fingerprint(embedder: Embedder) -> str:
    return f"{embedder.fingerprint}-c{CHUNKER_VERSION}"


def selection_fingerprint(settings: Settings) -> str:
    """Changes when the set of indexed files could change without any commit (globs, size cap)."""
    text = repr(
        (settings.include, settings.exclude, settings.code_include, settings.code_exclude, settings.max_file_bytes)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(slots=True)
class _Chunked:
    chunks: list[Chunk] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    stats: dict[str, list[int]] = field(default_factory=dict)
    skipped: list[FileProblem] = field(default_factory=list)
    warnings: list[FileProblem] = field(default_factory=list)
    undescribed: list[str] = field(default_factory=list)

    def table(self) -> FileTable:
        return FileTable(self.files, self.stats, self.skipped + self.warnings)


def _chunk_files(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    paths: Iterable[str],
    commit: str | None,
    on_progress: ProgressCallback | None,
    kind: str = "docs",
) -> _Chunked:
    out = _Chunked()
    paths = sorted(paths)
    for done, rel in enumerate(paths, start=1):
        source = read_source(root, rel, settings, kind)
        if isinstance(source, FileProblem):
            out.skipped.append(source)
            continue
        try:
            parsed = chunk_source(source, embedder.max_tokens, embedder.count_tokens)
        except Exception as exc:  # one bad file must never stop the run
            out.skipped.append(FileProblem(rel, f"could not be chunked: {type(exc).__name__}: {exc}"))
            continue
        out.warnings.extend(parsed.problems)
        if not parsed.chunks and kind == "docs":
            out.warnings.append(FileProblem(rel, "empty: no text to index"))
        if parsed.undescribed:
            out.undescribed.append(rel)
        out.files[rel] = source.content_hash
        out.stats[rel] = list(source.stat)
        out.chunks.extend(replace(chunk, commit=commit) for chunk in parsed.chunks)
        if on_progress is not None:
            on_progress(Progress("reading", done, len(paths)))
    return out


def _embed(
    chunks: list[Chunk], settings: Settings, embedder: Embedder, on_progress: ProgressCallback | None
) -> tuple[npt.NDArray[np.float32], int]:
    cache = (
        EmbeddingCache(settings.home / "embeddings" / f"{embedder.fingerprint}.sqlite", embedder.dims)
        if embedder.fingerprint
        else None
    )

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        done = 0

        def tick(count: int) -> None:
            nonlocal done
            done += count
            if on_progress is not None:
                on_progress(Progress("embedding", done, len(texts)))

        return embedder.embed_documents(texts, tick)

    try:
        return embed_with_cache([c.embed_text for c in chunks], embed, cache, embedder.dims)
    finally:
        if cache is not None:
            cache.close()


def _manifest(
    root: Path, settings: Settings, embedder: Embedder, thresholds: tuple[float, float], commit: str | None
) -> Manifest:
    return Manifest(
        format_version=FORMAT_VERSION,
        knowledge_version=__version__,
        model_id=embedder.model_id,
        model_variant=settings.model_variant,
        dims=embedder.dims,
        metric="cos",
        chunker_version=CHUNKER_VERSION,
        fingerprint=index_fingerprint(embedder),
        threshold=thresholds[0],
        full_threshold=thresholds[1],
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        commit=commit,
        selection=selection_fingerprint(settings),
    )


def _sync_lexical(root: Path, kind: str) -> None:
    store = IndexStore.open(root, kind)
    sync_all(index_dir(root), kind, store.chunks, store.generation)


def _head(root: Path) -> str | None:
    return git.head_commit(root) if git.repo_root(root) is not None else None


def _report(chunked: _Chunked, embedded: int, removed: int, started: float, reindexed: int) -> IndexReport:
    return IndexReport(
        files_indexed=reindexed,
        chunks_total=len(chunked.chunks),
        chunks_embedded=embedded,
        chunks_reused=len(chunked.chunks) - embedded,
        files_removed=removed,
        skipped=tuple(chunked.skipped),
        warnings=tuple(chunked.warnings),
        undescribed=tuple(chunked.undescribed),
        seconds=round(time.monotonic() - started, 3),
    )


def _merge(reports: list[IndexReport], started: float) -> IndexReport:
    return IndexReport(
        files_indexed=sum(r.files_indexed for r in reports),
        chunks_total=sum(r.chunks_total for r in reports),
        chunks_embedded=sum(r.chunks_embedded for r in reports),
        chunks_reused=sum(r.chunks_reused for r in reports),
        files_removed=sum(r.files_removed for r in reports),
        skipped=tuple(p for r in reports for p in r.skipped),
        warnings=tuple(p for r in reports for p in r.warnings),
        undescribed=tuple(p for r in reports for p in r.undescribed),
        seconds=round(time.monotonic() - started, 3),
    )


def _reindex_kind_all(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    on_progress: ProgressCallback | None,
    kind: str,
    commit: str | None,
) -> IndexReport:
    started = time.monotonic()
    chunked = _chunk_files(root, settings, embedder, candidate_paths(root, settings, kind), commit, on_progress, kind)
    vectors, embedded = _embed(chunked.chunks, settings, embedder, on_progress)
    manifest = _manifest(root, settings, embedder, thresholds, commit)
    IndexStore.write(root, kind, manifest, chunked.chunks, vectors, chunked.table())
    _sync_lexical(root, kind)
    return _report(chunked, embedded, 0, started, len(chunked.files))


def _reindex_all_locked(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    on_progress: ProgressCallback | None,
    kinds: Iterable[str] = KINDS,
) -> IndexReport:
    started = time.monotonic()
    commit = _head(root)
    reports = [_reindex_kind_all(root, settings, embedder, thresholds, on_progress, kind, commit) for kind in kinds]
    return _merge(reports, started)


def reindex_all(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    on_progress: ProgressCallback | None = None,
) -> IndexReport:
    """Rebuild the docs and code indexes from scratch (reusing cached vectors) and swap each in atomically."""
    with locked(root):
        return _reindex_all_locked(root, settings, embedder, thresholds, on_progress)


def changed_by_content(root: Path, settings: Settings, store: IndexStore) -> set[str]:
    """Every path whose content differs from what is indexed: the fallback when git history cannot tell."""
    candidates = set(candidate_paths(root, settings, store.kind))
    changed = {p for p in set(store.files) | {s.path for s in store.skipped} if p not in candidates}
    for rel in candidates:
        try:
            digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        except OSError:
            digest = ""
        if store.files.get(rel) != digest:
            changed.add(rel)
    return changed


def changed_since_index(root: Path, settings: Settings, store: IndexStore, worktree: bool) -> set[str]:
    """Paths to re-index: the diff from the stored commit to HEAD (plus work-tree changes if asked)."""
    stored, head = store.manifest.commit, _head(root)
    if (
        stored is None
        or head is None
        or store.manifest.selection != selection_fingerprint(settings)
        or not git.commit_exists(root, stored)
    ):
        return changed_by_content(root, settings, store)
    paths = git.changed_paths(root, stored, head) if stored != head else set()
    if worktree:
        paths |= git.worktree_changes(root)
    return paths


def _reindex_kind_changes(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    paths: Iterable[str] | None,
    worktree: bool,
    on_progress: ProgressCallback | None,
    kind: str,
    commit: str | None,
) -> IndexReport:
    started = time.monotonic()
    try:
        store = IndexStore.open(root, kind)
        store.check_compatible(index_fingerprint(embedder))
    except (IndexNotFoundError, IndexCorruptError, IndexIncompatibleError):
        # No usable index, or one built by another model or chunker: rebuild (beside it, swapped in at the end).
        return _reindex_kind_all(root, settings, embedder, thresholds, on_progress, kind, commit)
    targets = set(paths) if paths is not None else changed_since_index(root, settings, store, worktree)
    if not targets and commit == store.manifest.commit:
        return _report(_Chunked(), 0, 0, started, 0)
    candidates = set(candidate_paths(root, settings, kind)) & targets
    chunked = _chunk_files(root, settings, embedder, candidates, commit, on_progress, kind)
    vectors, embedded = _embed(chunked.chunks, settings, embedder, on_progress)
    removed = len([p for p in targets if p in store.files and p not in chunked.files])
    manifest = _manifest(root, settings, embedder, thresholds, commit)
    store.updated(manifest, targets, chunked.chunks, vectors, chunked.table())
    _sync_lexical(root, kind)
    return _report(chunked, embedded, removed, started, len(chunked.files))


def reindex_changes(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    paths: Iterable[str] | None = None,
    worktree: bool = False,
    on_progress: ProgressCallback | None = None,
) -> IndexReport:
    """Bring the index up to date by re-indexing only changed paths (or exactly `paths`)."""
    started = time.monotonic()
    with locked(root):
        commit = _head(root)
        reports = [
            _reindex_kind_changes(root, settings, embedder, thresholds, paths, worktree, on_progress, kind, commit)
            for kind in KINDS
        ]
    return _merge(reports, started)
