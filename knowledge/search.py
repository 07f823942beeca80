"""search(): the pipeline every answer runs, as named steps.

    retrieve (dense + lexical, fused)  ->  rank (the ranking policy, then per-file diversity)  ->  cut (the
    similarity threshold read with the fused evidence)  ->  group (one result per entity, or per file)  ->  hits (text
    for strong matches)  ->  pack (inside the token budget)

Chunks are read from the stores through one cache per search. Ranking follows the fused score; `score` stays the
cosine similarity of query and chunk, so the similarity and full-content thresholds keep one meaning with or without
the lexical side (docs/agents.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .budget import pack
from .focus import focus
from .grep import occurrences
from .kind import KindIndex
from .members import answer_text, leading_lines
from .pieces import group_key, is_part, matched
from .ranking import RULES, Candidate, carries_text, passes, relevance
from .ranking import rank as rank_candidates
from .ranking.query import Query, parse
from .records import Chunk, SearchHit, SearchResponse, hit_of
from .retrieval import models_beside_lexical, retrieve
from .search_options import SearchOptions, resolve_options

if TYPE_CHECKING:
    import numpy as np

    from .store import Coverage

__all__ = ["SearchOptions", "resolve_options", "search"]

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
            self.of(index).update(index.searched.chunks(keys))


def search(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    count_tokens: Callable[[str], int],
    query: str,
    options: SearchOptions,
    is_stale: Callable[[str], bool] | None = None,
    static_query: Callable[[str], np.ndarray] | None = None,
    coverages: Sequence[Coverage] | None = None,
) -> SearchResponse:
    """Rank chunks of every source (docs, code) for `query`; see docs/agents.md for what each threshold does.

    `embed_query` is None when no source has a vector yet: the answer then uses the static first stage
    (`static_query`) and the lexical side, and no transformer loads; once vectors exist the static stage's list votes
    beside the transformer's.
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
    question = parse(query)  # the one parse: every step below reads this
    coverages = coverages or [index.coverage() for index in sources]
    total = sum(c.chunks for c in coverages)
    embedded = sum(c.embedded for c in coverages)
    cache = ChunkCache()
    static = sum(c.static for c in coverages)
    ranked_static = any(c.static_rows for c in coverages)
    pooled = retrieve_all(
        sources, embed_query if embedded else None, question, options, static_query if ranked_static else None
    )
    pooled = rank(pooled, sources, question, options, cache)
    above = cut(pooled, question, options)
    grouped = group(above, options, cache)
    chosen = grouped[: options.k]
    hits, spare_text = make_hits(
        chosen, options, cache, is_stale, lambda text, where: focus(text, question.terms, count_tokens, where)
    )
    if options.expand:
        # right after the hit they neighbour, so the budget weighs them at its rank, not after every other result
        neighbours = _neighbours(hits, list(sources), options)
        after = _after_its_hit(hits, neighbours)
        hits[after:after] = neighbours
        spare_text[after:after] = [None] * len(neighbours)
    kept, used, left_out = pack(hits, options.budget, count_tokens, spare_text)
    return SearchResponse(
        query=query,
        results=tuple(kept),
        tokens_used=used,
        budget=options.budget,
        omitted=left_out + max(0, len(grouped) - options.k),
        over_budget=left_out,
        threshold=options.threshold,
        full_threshold=options.full_threshold,
        model=sources[0].searched.manifest.model_id if sources else "",
        dense_coverage=1.0 if total == 0 else round(embedded / total, 4),
        static_coverage=0.0 if total == 0 else round(static / total, 4),
    )


def _after_its_hit(hits: Sequence[SearchHit], neighbours: Sequence[SearchHit]) -> int:
    """Where `--expand`'s neighbours go: right after the hit they neighbour (`callee of ID`)."""
    if not neighbours or not neighbours[0].neighbour_of:
        return len(hits)
    of = neighbours[0].neighbour_of.split(" of ", 1)[-1]
    return next((i + 1 for i, hit in enumerate(hits) if hit.id == of), len(hits))


def retrieve_all(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    query: Query,
    options: SearchOptions,
    static_query: Callable[[str], np.ndarray] | None = None,
) -> Pooled:
    """Every source's fused candidates: the transformer's list (none while no vector exists: then no transformer loads),
    the static stage's and the lexical side's."""
    depth = options.policy.depth(options.k, filtered=options.keep is not None)
    vector, static, lexical = models_beside_lexical(sources, embed_query, static_query, query, depth)
    return [
        (candidate, index)
        for index, hits, static_hits in zip(sources, lexical, static, strict=True)
        for candidate in retrieve(index, query, vector, depth, options.policy, hits, static_hits)
    ]


def rank(
    pooled: Pooled, sources: Sequence[KindIndex], query: Query, options: SearchOptions, cache: ChunkCache
) -> Pooled:
    """The filters, then the ranking (ranking/rules.py: the rules on the fused scores, then per-file diversity); the
    rules need the chunks' names and paths."""
    mixed = {index.kind for index in sources} == {"code", "docs"}
    cache.load((c, index) for c, index in pooled if index.kind == "code" or mixed or options.keep is not None)
    if options.keep is not None:  # filters first: what they drop takes no place in the ranking
        keep = options.keep
        pooled = [(c, index) for c, index in pooled if (m := cache.get(index, c.key)) is not None and keep(m)]
    ranked = [(c, cache.get(index, c.key)) for c, index in pooled]
    code = [index for index in sources if index.kind == "code"]
    paths = [chunk.path for chunk in (m for _, m in ranked) if chunk is not None and chunk.kind == "code"]
    generated = frozenset(code[0].marked_generated(paths)) if code and paths else frozenset()
    order = rank_candidates(ranked, query, options.policy, [index.kind for index in sources], generated)
    return [(candidate, pooled[position][1]) for position, candidate in order]


def cut(pooled: Pooled, query: Query, options: SearchOptions) -> Pooled:
    """What passes the similarity cut (ranking/cut.py)."""
    return [(c, index) for c, index in pooled if passes(c, options.threshold, options.policy, query.bare_name)]


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
    chosen: Pooled,
    options: SearchOptions,
    cache: ChunkCache,
    is_stale: Callable[[str], bool] | None,
    narrow: Callable[[str, str], str] | None = None,
) -> tuple[list[SearchHit], list[str | None]]:
    """The results, full text for strong matches, and beside them the text of the others (theirs if the budget has
    room: budget.pack decides); `narrow(text, "path:start-end")` focuses a long text on the lines that matched
    (focus.py)."""
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
        strong = carries_text(candidate, options.threshold, options.full_threshold, options.policy.cut)
        full = strong and not options.metadata_only
        graph = index.call_graph() if chunk.kind == "code" else None
        same_file = index.chunks_in(chunk.path) if chunk.kind == "code" else []
        first_line, lead = leading_lines(chunk, same_file)
        text = lead + chunk.content
        if narrow is not None:
            text = narrow(text, f"{chunk.path}:{first_line}-{chunk.line_end}")
        text = answer_text(chunk, same_file, text)  # a class: its outline after its text
        hits.append(
            hit_of(
                chunk,
                line_start=first_line,
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
    best_of: dict[int, Candidate] = {}
    for (_, entity), positions in groups.items():
        best, index = above[positions[0]]
        first = cache.get(index, best.key)
        if first is None or (len(positions) < 2 and not _split(first, index)):
            continue
        same_file = index.chunks_in(first.path) if index.kind == "code" else index.searched.chunks_of_path(first.path)
        parts = [chunk for chunk in same_file if group_key(chunk.id) == entity]
        cache.of(index)[best.key] = matched(parts or [first], first)  # the whole range, the matching text
        cosines = [cosine for p in positions if (cosine := above[p][0].cosine) is not None]
        if cosines:  # the entity is as close to the query as its closest part
            best_of[positions[0]] = replace(best, cosine=max(cosines))
        dropped.update(positions[1:])
    kept = [(best_of.get(n, c), index) for n, (c, index) in enumerate(above[:position]) if n not in dropped]
    return kept + above[position:]


def _split(chunk: Chunk, index: KindIndex) -> bool:
    """Whether `chunk` is one part of an entity or section split in several (a later part's id ends in `~N`)."""
    return is_part(chunk.id) or index.chunk_by_id(f"{chunk.id}~2") is not None


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
            line = ref["line"]
            chunk = code.chunk_at(str(ref["path"]), line) if isinstance(line, int) else None
            if chunk is None or chunk.id in shown:
                continue
            shown.add(chunk.id)
            out.append(
                hit_of(
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
        **{f"rule_{row.rule.value}": candidate.shares.get(row.rule, 0.0) for row in RULES},
        "dense_score": None if candidate.cosine is None else round(candidate.cosine, 4),
        "static_score": None if candidate.static is None else round(candidate.static, 4),
        "dense_rank": candidate.dense_rank,
        "static_rank": candidate.static_rank,
        "lexical_score": None if candidate.lexical_score is None else round(candidate.lexical_score, 4),
        "lexical_rank": candidate.lexical_rank,
        "exact_identifier": candidate.exact,
        "fused_score": round(candidate.ruled, 6),  # with the rules' shares, as --explain always showed
    }
