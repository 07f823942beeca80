"""search(): similarity threshold, full-content threshold, then token-budget packing."""

from __future__ import annotations

from dataclasses import dataclass

from .budget import pack
from .embedding import Embedder
from .records import SearchHit, SearchResponse
from .store import IndexStore

CANDIDATE_FLOOR = 50


@dataclass(frozen=True, slots=True)
class SearchOptions:
    k: int
    threshold: float
    full_threshold: float
    budget: int
    metadata_only: bool = False


def search(store: IndexStore, embedder: Embedder, query: str, options: SearchOptions) -> SearchResponse:
    """Rank chunks by cosine similarity to `query`; see docs/agents.md for what each threshold does."""
    vector = embedder.embed_query(query)
    candidates = store.search(vector, max(options.k * 3, CANDIDATE_FLOOR))
    stale: dict[str, bool] = {}

    def is_stale(path: str) -> bool:
        if path not in stale:
            stale[path] = store.file_changed(path)
        return stale[path]

    above = [(chunk, score) for chunk, score in candidates if score >= options.threshold]
    hits = [
        SearchHit(
            id=chunk.id,
            path=chunk.path,
            kind=chunk.kind,
            score=round(score, 4),
            title=chunk.title,
            description=chunk.description,
            section=chunk.section,
            line_start=chunk.line_start,
            line_end=chunk.line_end,
            content=chunk.content if score >= options.full_threshold and not options.metadata_only else None,
            tokens=0,
            commit=chunk.commit,
            stale=is_stale(chunk.path),
        )
        for chunk, score in above[: options.k]
    ]
    kept, used, left_out = pack(hits, options.budget, embedder.count_tokens)
    return SearchResponse(
        query=query,
        results=tuple(kept),
        tokens_used=used,
        budget=options.budget,
        omitted=left_out + max(0, len(above) - options.k),
        threshold=options.threshold,
        full_threshold=options.full_threshold,
        model=store.manifest.model_id,
    )
