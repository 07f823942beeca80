"""Findability without labels: each doc's own `description` (and each section title) asked as a query; where does
the doc itself rank? Docs their description cannot find are listed with the docs that outrank them."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .api.request import SearchRequest
from .config import Settings
from .kind import KindIndex
from .records import Chunk, Figures, FindabilityReport, Probe
from .search import resolve_options, search

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .embedding import Embedder
    from .embedding.cache import EmbeddingCache

TOP = 10


def _figures(probes: list[Probe]) -> Figures:
    n = len(probes)
    if not n:
        return Figures(0, 0.0, 0.0, 0.0)
    return Figures(
        queries=n,
        recall_at_1=round(sum(1 for p in probes if p.rank == 1) / n, 4),
        recall_at_5=round(sum(1 for p in probes if p.rank is not None and p.rank <= 5) / n, 4),
        mrr=round(sum(1 / p.rank for p in probes if p.rank) / n, 4),
    )


def probes_of(docs: dict[int, Chunk]) -> list[tuple[str, str, str]]:
    """(doc, source, query): one per described doc, one per distinct section title."""
    out: list[tuple[str, str, str]] = []
    described: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for chunk in sorted(docs.values(), key=lambda c: (c.path, c.line_start)):
        if chunk.description and chunk.path not in described:
            described.add(chunk.path)
            out.append((chunk.path, "description", chunk.description))
        title = chunk.section.rsplit(" > ", 1)[-1].strip()
        if title and (chunk.path, title) not in seen:
            seen.add((chunk.path, title))
            out.append((chunk.path, "title", title))
    return out


def evaluate(docs: dict[int, Chunk], ranked_docs: Callable[[str], list[str]]) -> FindabilityReport:
    """`ranked_docs(query)` answers the doc paths best first (the product's own search, docs only)."""
    started = time.monotonic()
    probes: list[Probe] = []
    for doc, source, query in probes_of(docs):
        ranked = list(dict.fromkeys(ranked_docs(query)))[:TOP]
        rank = ranked.index(doc) + 1 if doc in ranked else None
        above = tuple(ranked[: (rank - 1) if rank else 3])
        probes.append(Probe(doc, source, query, rank, above))
    descriptions = [p for p in probes if p.source == "description"]
    missed = [p for p in descriptions if p.rank != 1]
    lost = tuple(sorted(missed, key=lambda p: (p.rank or TOP + 1, p.doc), reverse=True))
    return FindabilityReport(
        description=_figures(descriptions),
        title=_figures([p for p in probes if p.source == "title"]),
        probes=tuple(probes),
        seconds=round(time.monotonic() - started, 2),
        lost=lost,
    )


def measure(
    sources: list[KindIndex],
    settings: Settings,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    count_tokens: Callable[[str], int],
) -> FindabilityReport:
    """`evaluate` over the docs index through the product's search, query vectors cached by text."""

    def embed_query(text: str) -> npt.NDArray[np.float32]:
        assert embedder is not None
        key = "query:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        known = cache.get_many([key]).get(key) if cache is not None else None
        if known is not None:
            return known
        vector = embedder.embed_query(text)
        if cache is not None:
            cache.put_many({key: vector})
        return vector

    manifest = sources[0].store.manifest
    request = SearchRequest("findability", kind="docs", k=TOP, threshold=-1.0, metadata_only=True, budget=50_000)
    options = resolve_options(request, settings, (manifest.threshold, manifest.full_threshold))

    def ranked(query: str) -> list[str]:
        answer = search(sources, embed_query if embedder else None, count_tokens, query, options, lambda p: False)
        return [hit.path for hit in answer.results]

    return evaluate(sources[0].all_chunks(), ranked)
