"""search(): the pipeline every answer runs, as named steps.

    retrieve (dense + lexical, fused)  ->  rank (the ranking policy, then per-file diversity)  ->  cut (the
    similarity threshold read with the fused evidence)  ->  group (one result per entity, or per file)  ->  hits (text
    for strong matches)  ->  pack (inside the token budget)

Chunks are read from the stores through one cache per search. Ranking follows the fused score; `score` stays the
cosine similarity of query and chunk, so the similarity and full-content thresholds keep one meaning with or without
the lexical side (docs/agents.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .budget import pack
from .grep import occurrences
from .kind import KindIndex
from .members import answer_text, is_container
from .pieces import group_key, is_part, merge
from .policy import FusionParams
from .ranking import RULE_NAMES, apply_rules, diversify, rules_for
from .records import Chunk, SearchHit, SearchResponse
from .retrieval import Candidate, embed_beside_lexical, lexical_candidates, retrieve
from .search_options import SearchOptions, resolve_options

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SearchOptions", "resolve_options", "search"]

CANDIDATE_FLOOR = 50
FILTERED_DEPTH = 4  # with path or language filters, look this many times deeper before filtering
# Before a chunk has its vector, only its lexical rank speaks for it: keep the top ranks, show text for the first few.
LEXICAL_KEPT_RANKS = 10
# A chunk in the lexical top 10 passes 0.15 under the similarity threshold (semble-dev with the defaults: 0.822 with
# the cut on cosine alone, 0.838 with top 3 / 0.10, 0.849 with top 10 / 0.15, 0.853 with 0.25; no cut: 0.860).
LEXICAL_VOUCH_RANKS, LEXICAL_VOUCH_MARGIN = 10, 0.15
# A result both lists found, with relevance from 0.25 (about the top 20 of both), passes 0.13 under the threshold
# (mpnet: down to cosine 0.25): semble-dev with the defaults 0.863 -> 0.869 (0.875 with no cut), and 40 SciFact
# questions asked of four code repositories still get no result at all (0.36 results each at 0.18 under; 4.5-9.5 with
# no floor).
RELEVANCE_PASS, RELEVANCE_PASS_MARGIN = 0.25, 0.13
LEXICAL_FULL_RANKS = 3
# A query that is one bare name (`g`, `session`, `FromRequest`): its vector says little, so the lexical side's top
# matches pass whatever their cosine, as a grep user expects; a sentence still needs the similarity floor.
_BARE_NAME = re.compile(r"\s*[A-Za-z_][\w.:]*\s*")


Pooled = list[tuple[Candidate, KindIndex]]


class ChunkCache:
    """The chunks one search has read, per source: each read from its store at most once."""

    def __init__(self) -> None:
        self._chunks: dict[int, dict[int, Chunk]] = {}

    def of(self, index: KindIndex) -> dict[int, Chunk]:
        return self._chunks.setdefault(id(index), {})

    def get(self, index: KindIndex, key: int) -> Chunk | None:
        return self.of(index).get(key)

    def load(self, pooled: Iterable[tuple[Candidate, KindIndex]]) -> None:
        """Reads the chunks of `pooled` not read yet (a chunk a writer removed since stays missing)."""
        wanted: dict[int, tuple[KindIndex, list[int]]] = {}
        for candidate, index in pooled:
            if candidate.key not in self.of(index):
                wanted.setdefault(id(index), (index, []))[1].append(candidate.key)
        for index, keys in wanted.values():
            self.of(index).update(index.store.chunks(keys))


def search(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    count_tokens: Callable[[str], int],
    query: str,
    options: SearchOptions,
    is_stale: Callable[[str], bool] | None = None,
    static_query: Callable[[str], np.ndarray] | None = None,
) -> SearchResponse:
    """Rank chunks of every source (docs, code) for `query`; see docs/agents.md for what each threshold does.

    `embed_query` is None when no source has a vector yet: the answer then uses the static first stage
    (`static_query`) and the lexical side, and no transformer loads.
    """
    if options.exact:
        return occurrences(
            sources,
            count_tokens,
            query,
            mode=options.match,
            context=options.context,
            k=options.k,
            budget=options.budget,
            metadata_only=options.metadata_only,
            keep=options.keep,
        )
    coverages = [index.coverage() for index in sources]
    total = sum(c.chunks for c in coverages)
    embedded = sum(c.embedded for c in coverages)
    cache = ChunkCache()
    static = sum(c.static for c in coverages)
    pooled = retrieve_all(sources, embed_query if embedded else None, query, options, static_query if static else None)
    pooled = rank(pooled, sources, query, options, cache)
    above = cut(pooled, query, options)
    grouped = group(above, options, cache)
    chosen = grouped[: options.k]
    hits, spare_text = make_hits(chosen, options, cache, is_stale)
    if options.expand:
        neighbours = _neighbours(hits, list(sources), options)
        hits.extend(neighbours)
        spare_text.extend([None] * len(neighbours))
    kept, used, left_out = pack(hits, options.budget, count_tokens, spare_text)
    return SearchResponse(
        query=query,
        results=tuple(kept),
        tokens_used=used,
        budget=options.budget,
        omitted=left_out + max(0, len(grouped) - options.k),
        threshold=options.threshold,
        full_threshold=options.full_threshold,
        model=sources[0].store.manifest.model_id if sources else "",
        dense_coverage=1.0 if total == 0 else round(embedded / total, 4),
        static_coverage=0.0 if total == 0 else round(static / total, 4),
    )


def retrieve_all(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    query: str,
    options: SearchOptions,
    static_query: Callable[[str], np.ndarray] | None = None,
) -> Pooled:
    """Every source's fused candidates (lexical and static stage only when no vector exists yet: then no transformer
    loads)."""
    depth = max(options.k * 3, CANDIDATE_FLOOR) * (FILTERED_DEPTH if options.keep is not None else 1)
    if embed_query is not None:
        vector, lexical = embed_beside_lexical(sources, embed_query, query, depth)
    else:
        vector, lexical = None, [lexical_candidates(index, query, depth) for index in sources]
    static_vector = static_query(query) if static_query is not None else None
    return [
        (candidate, index)
        for index, hits in zip(sources, lexical, strict=True)
        for candidate in retrieve(index, query, vector, depth, options.policy, hits, static_vector)
    ]


def rank(pooled: Pooled, sources: Sequence[KindIndex], query: str, options: SearchOptions, cache: ChunkCache) -> Pooled:
    """The filters, then the ranking policy's rules on the fused scores, then per-file diversity. Fused scores are
    rank-based, so lists from different stores merge on them directly; the rules need the chunks' names and paths."""
    mixed = {index.kind for index in sources} == {"code", "docs"}
    cache.load((c, index) for c, index in pooled if index.kind == "code" or mixed or options.keep is not None)
    if options.keep is not None:  # filters first: what they drop takes no place in the ranking
        keep = options.keep
        pooled = [(c, index) for c, index in pooled if (m := cache.get(index, c.key)) is not None and keep(m)]
    ranked = [(c, cache.get(index, c.key)) for c, index in pooled]
    fusion, rules = options.policy.fusion, rules_for(options.policy, query)
    if any(index.kind != "code" for index in sources):  # doc sections cannot earn it: it would tilt a mixed answer
        rules = replace(rules, file_coherence=0.0)
    if not mixed:  # the docs' counterpart of the code rules, for mixed answers only: prose alone keeps its fusion
        rules = replace(rules, heading_words=0.0)
    apply_rules(ranked, query, fusion.dense_weight / (fusion.k + 1), rules)
    order = sorted(range(len(pooled)), key=lambda i: (-pooled[i][0].fused, pooled[i][0].dense_rank or 10**9))
    ranked = [ranked[i] for i in order]
    pooled = [pooled[i] for i in order]
    return [pooled[i] for i in diversify(ranked, rules)]


def cut(pooled: Pooled, query: str, options: SearchOptions) -> Pooled:
    """What passes the similarity cut. An exact identifier match, and the definition of an asked name, stay even
    under the threshold: names are what dense vectors miss. A chunk with no vector yet cannot be judged by
    similarity: its lexical rank decides."""
    bare_name = _BARE_NAME.fullmatch(query) is not None
    fusion = options.policy.fusion
    return [
        (c, index)
        for c, index in pooled
        if c.exact or "defines" in c.rules or _relevant(c, options.threshold, fusion, bare_name)
    ]


def group(above: Pooled, options: SearchOptions, cache: ChunkCache) -> Pooled:
    """One result per entity (its parts merged), or with --files the best chunk of each file standing for it."""
    if not options.files_only:
        return _one_per_entity(above, cache, options.k)
    cache.load(above)
    seen_paths: set[str] = set()
    first_per_file = []
    for c, index in above:
        meta = cache.get(index, c.key)
        if meta is not None and meta.path not in seen_paths:
            seen_paths.add(meta.path)
            first_per_file.append((c, index))
    return first_per_file


def make_hits(
    chosen: Pooled, options: SearchOptions, cache: ChunkCache, is_stale: Callable[[str], bool] | None
) -> tuple[list[SearchHit], list[str | None]]:
    """The results, full text for strong matches, and beside them the text of the others (theirs if the budget has
    room: budget.pack decides)."""
    cache.load(chosen)
    stale: dict[str, bool] = {}

    def stale_for(path: str) -> bool:
        if is_stale is None:
            return False
        if path not in stale:
            stale[path] = is_stale(path)
        return stale[path]

    hits = []
    spare_text: list[str | None] = []
    for candidate, index in chosen:
        chunk = cache.get(index, candidate.key)
        if chunk is None:  # removed by a writer since the candidates were read
            continue
        strong = (
            candidate.cosine >= options.full_threshold
            # the lexical side's first pick that also passes the similarity threshold carries its text too
            or (candidate.lexical_rank == 1 and candidate.cosine >= options.threshold)
            if candidate.cosine is not None
            else _waiting_rank(candidate) <= LEXICAL_FULL_RANKS
        )
        full = strong and not options.metadata_only
        graph = index.call_graph() if chunk.kind == "code" else None
        text = answer_text(chunk, index.store.chunks_of_path(chunk.path)) if is_container(chunk) else chunk.content
        hits.append(
            _hit(
                chunk,
                score=None if candidate.cosine is None else round(candidate.cosine, 4),
                relevance=relevance(candidate.final, options.policy.fusion),
                content=text if full else None,
                stale=stale_for(chunk.path),
                explain=_explain(candidate) if options.explain else None,
                calls=graph.calls(chunk) if graph else None,
                called_by=graph.called_by(chunk) if graph else None,
            )
        )
        spare_text.append(None if full or options.metadata_only else text)
    return hits, spare_text


def _one_per_entity(above: Pooled, cache: ChunkCache, k: int) -> Pooled:
    """Each of the first `k` results that is a part of an entity or section stands for the whole: one result at the
    best part's place, with the entity's whole text and line range, however many of its parts were ranked (the parts
    not ranked are read from the store), so an entity shows one range in every kind mix."""
    groups: dict[tuple[int, str], list[int]] = {}
    position = 0
    while position < len(above) and len(groups) < k:
        batch = above[position : position + 4 * k]
        cache.load(batch)
        for offset, (candidate, index) in enumerate(batch):
            chunk = cache.get(index, candidate.key)
            key = (id(index), group_key(chunk.id) if chunk is not None else f"#{candidate.key}")
            if key in groups or len(groups) < k:
                groups.setdefault(key, []).append(position + offset)
        position += len(batch)
    dropped: set[int] = set()
    for (_, entity), positions in groups.items():
        best, index = above[positions[0]]
        first = cache.get(index, best.key)
        if first is None or (len(positions) < 2 and not _split(first, index)):
            continue
        parts = [chunk for chunk in index.store.chunks_of_path(first.path) if group_key(chunk.id) == entity]
        cache.of(index)[best.key] = merge(parts or [first])
        cosines = [cosine for p in positions if (cosine := above[p][0].cosine) is not None]
        best.cosine = max(cosines) if cosines else best.cosine
        dropped.update(positions[1:])
    kept = [item for n, item in enumerate(above[:position]) if n not in dropped]
    return kept + above[position:]


def _split(chunk: Chunk, index: KindIndex) -> bool:
    """Whether `chunk` is one part of an entity or section split in several (a later part's id ends in `~N`)."""
    return is_part(chunk.id) or index.store.chunk_by_id(f"{chunk.id}~2") is not None


def _hit(chunk: Chunk, **fields: object) -> SearchHit:
    """A result for `chunk`: its metadata, then what the caller says (score, content, line range, …)."""
    base: dict[str, object] = {
        "id": chunk.id,
        "path": chunk.path,
        "kind": chunk.kind,
        "score": None,
        "title": chunk.title,
        "description": chunk.description,
        "section": chunk.section,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "content": None,
        "tokens": 0,
        "commit": chunk.commit,
        "language": chunk.language or None,
        "symbol": chunk.symbol or None,
        "symbol_kind": chunk.symbol_kind or None,
        "parent": chunk.parent or None,
    }
    return SearchHit(**{**base, **fields})  # type: ignore[arg-type]


def relevance(final: float, params: FusionParams) -> float:
    """The order's score in units of first place: 1.0 is first place in both the dense and the lexical list, and rule
    boosts (a definition of the asked name, the file's name) lift a result past it, uncapped, so results the evidence
    tells apart never show the same value; it never rises down a list of results, unlike the cosine beside it."""
    ideal = (params.dense_weight + params.lexical_weight) / (params.k + 1)
    return round(final / ideal, 3) if ideal > 0 else 0.0


def _relevant(candidate: Candidate, threshold: float, params: FusionParams, bare_name: bool = False) -> bool:
    """The similarity cut, read with the fused evidence: a chunk the lexical side ranks near the top, or that the
    whole ranking puts near the top, passes a margin under the threshold (a cosine just short of it is often the
    answer itself, worded differently); far under it nothing passes, so an off-topic question still gets nothing.
    For a bare name query the lexical side's top matches pass at any cosine."""
    if candidate.cosine is None:
        return _lexical_only_kept(candidate)
    if candidate.cosine >= threshold:
        return True
    rank = candidate.lexical_rank
    vouched = rank is not None and rank <= LEXICAL_VOUCH_RANKS
    if vouched and (bare_name or candidate.cosine >= threshold - LEXICAL_VOUCH_MARGIN):
        return True
    # the ranking's word counts only where both sides found the chunk: a lone dense hit at a low cosine is what an
    # off-topic question gets too
    close = candidate.cosine >= threshold - RELEVANCE_PASS_MARGIN and rank is not None
    return close and relevance(candidate.final, params) >= RELEVANCE_PASS


def _waiting_rank(candidate: Candidate) -> int:
    """For a chunk with no vector yet: its best rank in the lists that could see it (lexical, static stage)."""
    ranks = [candidate.lexical_rank, candidate.dense_rank if candidate.static is not None else None]
    return min((rank for rank in ranks if rank is not None), default=10**9)


def _lexical_only_kept(candidate: Candidate) -> bool:
    return _waiting_rank(candidate) <= LEXICAL_KEPT_RANKS


def _neighbours(hits: list[SearchHit], sources: list[KindIndex], options: SearchOptions) -> list[SearchHit]:
    """The entities the top code hit calls and is called by, full text unless metadata-only was asked."""
    top = next((hit for hit in hits if hit.kind == "code"), None)
    code = next((index for index in sources if index.kind == "code"), None)
    if top is None or code is None:
        return []
    shown = {hit.id for hit in hits}
    out = []
    # Named from the neighbour's side: what the top hit calls is its callee, what calls it is its caller.
    for relation, refs in (("callee of", top.calls or ()), ("caller of", top.called_by or ())):
        for ref in refs:
            chunk = code.chunk_at(str(ref["path"]), int(ref["line"]))
            if chunk is None or chunk.id in shown:
                continue
            shown.add(chunk.id)
            out.append(
                _hit(
                    chunk,
                    score=0.0,
                    description="",
                    content=None if options.metadata_only else chunk.content,
                    neighbour_of=f"{relation} {top.id}",
                )
            )
    return out


def _explain(candidate: Candidate) -> dict[str, float | int | bool | None]:
    return {
        **{f"rule_{name}": candidate.rules.get(name, 0.0) for name in RULE_NAMES},
        # options not on by default show only where they moved the candidate
        **{f"rule_{name}": share for name, share in candidate.rules.items() if name not in RULE_NAMES},
        "dense_score": None if candidate.cosine is None else round(candidate.cosine, 4),
        "static_score": None if candidate.static is None else round(candidate.static, 4),
        "dense_rank": candidate.dense_rank,
        "lexical_score": None if candidate.lexical_score is None else round(candidate.lexical_score, 4),
        "lexical_rank": candidate.lexical_rank,
        "exact_identifier": candidate.exact,
        "fused_score": round(candidate.fused, 6),
    }
