"""reindex_all(): corpus -> chunks -> embeddings (cached by content hash) -> a new store generation."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import __version__
from .chunking import CHUNKER_VERSION, chunk_source
from .config import Settings
from .corpus import candidate_paths, read_source
from .embedding import Embedder
from .embedding.cache import EmbeddingCache, embed_with_cache
from .git import head_commit, repo_root
from .records import Chunk, FileProblem, IndexReport, Progress
from .store import IndexStore, Manifest, locked

ProgressCallback = Callable[[Progress], None]


def index_fingerprint(embedder: Embedder) -> str:
    return f"{embedder.fingerprint}-c{CHUNKER_VERSION}"


def embedding_cache(settings: Settings, embedder: Embedder) -> EmbeddingCache | None:
    if not embedder.fingerprint:
        return None
    return EmbeddingCache(settings.home / "embeddings" / f"{embedder.fingerprint}.sqlite", embedder.dims)


def collect_chunks(
    root: Path, settings: Settings, embedder: Embedder, on_progress: ProgressCallback | None = None
) -> tuple[list[Chunk], dict[str, str], list[FileProblem], list[FileProblem], list[str]]:
    """Chunks of every indexable file, with file hashes, skipped files, warnings and undescribed docs."""
    chunks: list[Chunk] = []
    files: dict[str, str] = {}
    skipped: list[FileProblem] = []
    warnings: list[FileProblem] = []
    undescribed: list[str] = []
    paths = candidate_paths(root, settings)
    for done, rel in enumerate(paths, start=1):
        source = read_source(root, rel, settings)
        if isinstance(source, FileProblem):
            skipped.append(source)
            continue
        try:
            parsed = chunk_source(source, embedder.max_tokens, embedder.count_tokens)
        except Exception as exc:  # one bad file must never stop the run
            skipped.append(FileProblem(rel, f"could not be chunked: {type(exc).__name__}: {exc}"))
            continue
        warnings.extend(parsed.problems)
        if not parsed.chunks:
            warnings.append(FileProblem(rel, "empty: no text to index"))
        if not parsed.meta.description:
            undescribed.append(rel)
        files[rel] = source.content_hash
        chunks.extend(parsed.chunks)
        if on_progress is not None:
            on_progress(Progress("reading", done, len(paths)))
    return chunks, files, skipped, warnings, undescribed


def reindex_all(
    root: Path,
    settings: Settings,
    embedder: Embedder,
    thresholds: tuple[float, float],
    on_progress: ProgressCallback | None = None,
) -> IndexReport:
    """Rebuild the docs index from scratch (reusing cached vectors) and swap it in atomically."""
    started = time.monotonic()
    with locked(root):
        chunks, files, skipped, warnings, undescribed = collect_chunks(root, settings, embedder, on_progress)
        cache = embedding_cache(settings, embedder)
        embedded = 0

        def embed(texts: list[str]) -> np.ndarray:
            done = 0

            def tick(count: int) -> None:
                nonlocal done
                done += count
                if on_progress is not None:
                    on_progress(Progress("embedding", done, len(texts)))

            return embedder.embed_documents(texts, tick)

        try:
            vectors, embedded = embed_with_cache([c.embed_text for c in chunks], embed, cache, embedder.dims)
        finally:
            if cache is not None:
                cache.close()
        manifest = Manifest(
            format_version=1,
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
            commit=head_commit(root) if repo_root(root) is not None else None,
        )
        IndexStore.write(root, "docs", manifest, chunks, vectors, skipped + warnings, files)
    return IndexReport(
        files_indexed=len(files),
        chunks_total=len(chunks),
        chunks_embedded=embedded,
        chunks_reused=len(chunks) - embedded,
        files_removed=0,
        skipped=tuple(skipped),
        warnings=tuple(warnings),
        undescribed=tuple(undescribed),
        seconds=round(time.monotonic() - started, 3),
    )
