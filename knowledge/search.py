"""search(): dense and lexical candidates fused by reciprocal rank, thresholds on cosine, token-budget packing.

Ranking follows the fused score; `score` stays the cosine similarity of query and chunk, so the similarity and
full-content thresholds keep one meaning with or without the lexical side (docs/agents.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field

import numpy as np

from .budget import pack
from .embedding import Embedder
from .lexical import LexicalIndex, chunk_text, identifiers, terms
from .records import Chunk, SearchHit, SearchResponse
from .store import IndexStore

CANDIDATE_FLOOR = 50


@dataclass(frozen=True, slots=True)
class FusionParams:
    """Reciprocal rank fusion: each list adds weight / (k + rank).

    The lexical weight grows with the query: full from `lexical_full_terms` distinct terms, proportionally less below,
    because a handful of words is thin evidence for BM25 and a long claim is rich evidence. k=5, weight 1.0 and 10
    terms had the best mean nDCG@10 over SciFact train and CoSQA dev for both models (bench/fusion.py); the test
    splits were never used for tuning.
    """

    k: int = 5
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    lexical_full_terms: int = 10
    exact_boost: float = 1.0  # in units of a first-rank vote, for chunks holding an identifier from the query


DEFAULT_FUSION = FusionParams()


@dataclass(frozen=True, slots=True)
class SearchOptions:
    k: int
    threshold: float
    full_threshold: float
    budget: int
    metadata_only: bool = False
    explain: bool = False
    expand: bool = False  # add the top code hit's callers and callees after the results, as the budget allows
    fusion: FusionParams = field(default_factory=FusionParams)


@dataclass(slots=True)
class Candidate:
    key: int
    cosine: float = 0.0
    dense_rank: int | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    exact: bool = False
    fused: float = 0.0


def fuse(
    dense: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    params: FusionParams,
    exact_keys: Set[int] = frozenset(),
    query_terms: int | None = None,
) -> list[Candidate]:
    """Candidates from both lists ranked by fused score (ties: better dense rank first)."""
    lexical_weight = params.lexical_weight * lexical_scale(query_terms, params)
    found: dict[int, Candidate] = {}
    for rank, (key, cosine) in enumerate(dense, start=1):
        found[key] = Candidate(key, cosine=cosine, dense_rank=rank, fused=params.dense_weight / (params.k + rank))
    for rank, (key, score) in enumerate(lexical, start=1):
        candidate = found.setdefault(key, Candidate(key))
        candidate.lexical_score, candidate.lexical_rank = score, rank
        candidate.fused += lexical_weight / (params.k + rank)
    for key in exact_keys & found.keys():
        found[key].exact = True
        found[key].fused += params.exact_boost / (params.k + 1)
    return sorted(found.values(), key=lambda c: (-c.fused, c.dense_rank or 10**9))


def lexical_scale(query_terms: int | None, params: FusionParams) -> float:
    """1.0 for queries with at least `lexical_full_terms` distinct terms, proportionally less for shorter ones."""
    if query_terms is None:
        return 1.0
    return min(1.0, query_terms / max(1, params.lexical_full_terms))


def _exact_matches(query: str, chunks: dict[int, Chunk], keys: Sequence[int]) -> set[int]:
    wanted = identifiers(query)
    if not wanted:
        return set()
    # Code only: in prose, camelCase words are terms of art ("vCJD", "iPSC"), and boosting them lowered SciFact dev
    # nDCG@10 (0.7232 without, 0.7213 with); in code they are names.
    return {key for key in keys if chunks[key].kind == "code" and wanted & set(terms(chunk_text(chunks[key])))}


def retrieve(
    store: IndexStore, lexical: LexicalIndex | None, query: str, vector: np.ndarray, depth: int, params: FusionParams
) -> list[Candidate]:
    """Fused candidates with the cosine of every one of them (lexical-only ones included)."""
    dense = store.search_keys(vector, depth)
    lexical_hits = lexical.search(query, depth) if lexical is not None else []
    pool = list(dict.fromkeys([key for key, _ in dense] + [key for key, _ in lexical_hits]))
    candidates = fuse(dense, lexical_hits, params, _exact_matches(query, store.chunks, pool), len(set(terms(query))))
    missing = [c for c in candidates if c.dense_rank is None]
    if missing:
        vectors = store.vectors(np.array([c.key for c in missing], dtype=np.uint64))
        for candidate, cosine in zip(missing, vectors @ vector, strict=True):
            candidate.cosine = float(cosine)
    return candidates


Source = tuple[IndexStore, "LexicalIndex | None"]


def search(
    sources: Sequence[Source],
    embedder: Embedder,
    query: str,
    options: SearchOptions,
    is_stale: Callable[[str], bool] | None = None,
) -> SearchResponse:
    """Rank chunks of every source (docs, code) for `query`; see docs/agents.md for what each threshold does."""
    vector = embedder.embed_query(query)
    depth = max(options.k * 3, CANDIDATE_FLOOR)
    pooled = [
        (candidate, store)
        for store, lexical in sources
        for candidate in retrieve(store, lexical, query, vector, depth, options.fusion)
    ]
    # Fused scores are rank-based, so lists from different stores merge on them directly.
    pooled.sort(key=lambda pair: (-pair[0].fused, pair[0].dense_rank or 10**9))
    # An exact identifier match stays even under the similarity threshold: names are what dense vectors miss.
    above = [(c, store) for c, store in pooled if c.cosine >= options.threshold or c.exact]
    stale: dict[str, bool] = {}

    def stale_for(path: str) -> bool:
        if is_stale is None:
            return False
        if path not in stale:
            stale[path] = is_stale(path)
        return stale[path]

    hits = []
    for candidate, store in above[: options.k]:
        chunk = store.chunks[candidate.key]
        full = candidate.cosine >= options.full_threshold and not options.metadata_only
        graph = store.call_graph() if chunk.kind == "code" else None
        hits.append(
            SearchHit(
                id=chunk.id,
                path=chunk.path,
                kind=chunk.kind,
                score=round(candidate.cosine, 4),
                title=chunk.title,
                description=chunk.description,
                section=chunk.section,
                line_start=chunk.line_start,
                line_end=chunk.line_end,
                content=chunk.content if full else None,
                tokens=0,
                commit=chunk.commit,
                stale=stale_for(chunk.path),
                explain=_explain(candidate) if options.explain else None,
                language=chunk.language or None,
                symbol=chunk.symbol or None,
                symbol_kind=chunk.symbol_kind or None,
                parent=chunk.parent or None,
                calls=graph.calls(chunk) if graph else None,
                called_by=graph.called_by(chunk) if graph else None,
            )
        )
    if options.expand:
        hits.extend(_neighbours(hits, [store for store, _ in sources], options))
    kept, used, left_out = pack(hits, options.budget, embedder.count_tokens)
    return SearchResponse(
        query=query,
        results=tuple(kept),
        tokens_used=used,
        budget=options.budget,
        omitted=left_out + max(0, len(above) - options.k),
        threshold=options.threshold,
        full_threshold=options.full_threshold,
        model=sources[0][0].manifest.model_id if sources else "",
    )


def _neighbours(hits: list[SearchHit], stores: list[IndexStore], options: SearchOptions) -> list[SearchHit]:
    """The entities the top code hit calls and is called by, full text unless metadata-only was asked."""
    top = next((hit for hit in hits if hit.kind == "code"), None)
    code = next((store for store in stores if store.kind == "code"), None)
    if top is None or code is None:
        return []
    shown = {hit.id for hit in hits}
    by_place = {(chunk.path, chunk.line_start): chunk for chunk in code.chunks.values()}
    out = []
    for relation, refs in (("calls", top.calls or ()), ("called_by", top.called_by or ())):
        for ref in refs:
            chunk = by_place.get((str(ref["path"]), int(ref["line"])))
            if chunk is None or chunk.id in shown:
                continue
            shown.add(chunk.id)
            out.append(
                SearchHit(
                    id=chunk.id,
                    path=chunk.path,
                    kind=chunk.kind,
                    score=0.0,
                    title=chunk.title,
                    description="",
                    section=chunk.section,
                    line_start=chunk.line_start,
                    line_end=chunk.line_end,
                    content=None if options.metadata_only else chunk.content,
                    tokens=0,
                    commit=chunk.commit,
                    language=chunk.language or None,
                    symbol=chunk.symbol or None,
                    symbol_kind=chunk.symbol_kind or None,
                    parent=chunk.parent or None,
                    neighbour_of=f"{relation} {top.id}",
                )
            )
    return out


def _explain(candidate: Candidate) -> dict[str, float | int | bool | None]:
    return {
        "dense_score": round(candidate.cosine, 4),
        "dense_rank": candidate.dense_rank,
        "lexical_score": None if candidate.lexical_score is None else round(candidate.lexical_score, 4),
        "lexical_rank": candidate.lexical_rank,
        "exact_identifier": candidate.exact,
        "fused_score": round(candidate.fused, 6),
    }
