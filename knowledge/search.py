"""search(): dense and lexical candidates fused by reciprocal rank, thresholds on cosine, token-budget packing.

Ranking follows the fused score; `score` stays the cosine similarity of query and chunk, so the similarity and
full-content thresholds keep one meaning with or without the lexical side (docs/agents.md).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import policy as policies
from .budget import pack
from .config import Settings
from .corpus import glob_to_regex, matches_any
from .grep import occurrences
from .kind import KindIndex
from .lexical import identifiers, terms
from .pieces import group_key, merge
from .policy import FusionParams, RankingPolicy
from .ranking import RULE_NAMES, apply_rules, asked_names, diversify
from .records import Chunk, SearchHit, SearchResponse
from .request import SearchRequest

if TYPE_CHECKING:
    import numpy as np

CANDIDATE_FLOOR = 50
FILTERED_DEPTH = 4  # with path or language filters, look this many times deeper before filtering
EXACT_DEFAULT_K = 100  # exact mode lists occurrences, not the best few: the budget still caps what is returned
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


@dataclass(frozen=True, slots=True)
class SearchOptions:
    k: int
    threshold: float
    full_threshold: float
    budget: int
    metadata_only: bool = False
    files_only: bool = False  # one result per file, metadata only: where to look, not what is there
    exact: bool = False  # every line matching the query (grep.py): one result per line
    match: str = "word"  # with exact: word, substring or regex
    context: int = 0  # with exact: lines either side
    explain: bool = False
    expand: bool = False  # add the top code hit's callers and callees after the results, as the budget allows
    policy: RankingPolicy = field(default_factory=RankingPolicy)
    keep: Callable[[Chunk], bool] | None = None  # the request's path, exclude and language filters


@dataclass(slots=True)
class Candidate:
    key: int
    cosine: float | None = 0.0
    dense_rank: int | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    exact: bool = False
    fused: float = 0.0
    final: float = 0.0  # the score the results are ordered by: fused, the rules, the same-file decay
    rules: dict[str, float] = field(default_factory=dict)  # what each ranking rule added (ranking.py)


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


def _exact_matches(query: str, index: KindIndex, keys: Sequence[int], policy: RankingPolicy) -> set[int]:
    wanted = identifiers(query)
    # Code only: in prose, camelCase words are terms of art ("vCJD", "iPSC"), and boosting them lowered SciFact dev
    # nDCG@10 (0.7232 without, 0.7213 with); in code they are names.
    if not wanted or index.kind != "code":
        return set()
    bodies = {key: set(body.split()) for key, body in index.store.lexical_terms(keys).items()}
    if len(bodies) >= policy.exact_common_min_pool:
        common = policy.exact_common_share * len(bodies)
        wanted = {name for name in wanted if sum(name in body for body in bodies.values()) <= common}
    return {key for key, body in bodies.items() if wanted & body}


def lexical_candidates(index: KindIndex, query: str, depth: int) -> list[tuple[int, float]]:
    return [(hit.key, hit.score) for hit in index.store.lexical_search(terms(query), depth)]


def retrieve(
    index: KindIndex,
    query: str,
    vector: np.ndarray | None,
    depth: int,
    policy: RankingPolicy,
    lexical_hits: list[tuple[int, float]] | None = None,
) -> list[Candidate]:
    """Fused candidates with the cosine of every one that has a vector (None: lexical evidence only)."""
    store = index.store
    dense = [(hit.key, hit.score) for hit in store.dense_search(vector, depth)] if vector is not None else []
    query_terms = terms(query)
    if lexical_hits is None:
        lexical_hits = lexical_candidates(index, query, depth)
    pool = list(dict.fromkeys([key for key, _ in dense] + [key for key, _ in lexical_hits]))
    exact = _exact_matches(query, index, pool, policy)
    candidates = fuse(dense, lexical_hits, policy.fusion, exact, len(set(query_terms)))
    if index.kind == "code" and policy.definitions_joined:  # definitions of asked names join, found or not
        known = {c.key for c in candidates}
        names = sorted(asked_names(query))
        joined = index.store.defining(names, policy.definitions_joined)
        candidates += [Candidate(key) for key in joined if key not in known]
    missing = [c.key for c in candidates if c.dense_rank is None]
    found = store.vectors(missing) if missing and vector is not None else {}
    for candidate in candidates:
        if candidate.dense_rank is None:
            stored = found.get(candidate.key)
            candidate.cosine = float(stored @ vector) if stored is not None and vector is not None else None
    return candidates


def resolve_options(request: SearchRequest, settings: Settings, calibrated: tuple[float, float]) -> SearchOptions:
    """The one place a request's unasked fields are filled: request > settings > the index's calibration."""

    def pick(asked: float | None, configured: float | None, default: float) -> float:
        return asked if asked is not None else (configured if configured is not None else default)

    return SearchOptions(
        k=request.k or (EXACT_DEFAULT_K if request.exact else settings.k),
        threshold=pick(request.threshold, settings.threshold, calibrated[0]),
        full_threshold=pick(request.full_threshold, settings.full_threshold, calibrated[1]),
        budget=request.budget or settings.budget,
        explain=request.explain,
        expand=request.expand,
        metadata_only=request.metadata_only or request.files_only,
        files_only=request.files_only,
        exact=request.exact,
        match=request.match,
        context=request.context,
        policy=policies.DEFAULT_POLICY if settings.rank_rules else policies.DEFAULT_POLICY.plain(),
        keep=result_filter(request) if request.filtered else None,
    )


def result_filter(request: SearchRequest) -> Callable[[Chunk], bool]:
    """Whether a chunk passes the request's path globs, exclude globs and languages."""
    wanted = [glob_to_regex(p) for p in request.paths]
    unwanted = [glob_to_regex(p) for p in request.exclude]
    languages = {name.lower() for name in request.language}

    def keep(chunk: Chunk) -> bool:
        if wanted and not matches_any(chunk.path, wanted):
            return False
        if unwanted and matches_any(chunk.path, unwanted):
            return False
        return not languages or (chunk.language or "").lower() in languages

    return keep


def search(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    count_tokens: Callable[[str], int],
    query: str,
    options: SearchOptions,
    is_stale: Callable[[str], bool] | None = None,
) -> SearchResponse:
    """Rank chunks of every source (docs, code) for `query`; see docs/agents.md for what each threshold does.

    `embed_query` is None when no source has a vector yet: the answer is then lexical only, and no model loads.
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
    depth = max(options.k * 3, CANDIDATE_FLOOR) * (FILTERED_DEPTH if options.keep is not None else 1)
    if embed_query is not None and embedded:
        vector, lexical = _embed_beside_lexical(sources, embed_query, query, depth)
    else:
        vector, lexical = None, [lexical_candidates(index, query, depth) for index in sources]
    pooled = [
        (candidate, index)
        for index, hits in zip(sources, lexical, strict=True)
        for candidate in retrieve(index, query, vector, depth, options.policy, hits)
    ]
    # Fused scores are rank-based, so lists from different stores merge on them directly. Code candidates then go
    # through the ranking rules, which need their chunks' names and paths.
    by_index: dict[int, dict[int, Chunk]] = {}
    mixed = {index.kind for index in sources} == {"code", "docs"}
    for index in sources:
        keys = [c.key for c, owner in pooled if owner is index]
        wanted = keys and (index.kind == "code" or mixed or options.keep is not None)
        by_index[id(index)] = index.store.chunks(keys) if wanted else {}
    if options.keep is not None:  # filters first: what they drop takes no place in the ranking
        keep = options.keep
        pooled = [(c, index) for c, index in pooled if (m := by_index[id(index)].get(c.key)) is not None and keep(m)]
    ranked = [(c, by_index[id(index)].get(c.key)) for c, index in pooled]
    fusion, rules = options.policy.fusion, options.policy.rules
    if any(index.kind != "code" for index in sources):  # doc sections cannot earn it: it would tilt a mixed answer
        rules = replace(rules, file_coherence=0.0)
    if not mixed:  # the docs' counterpart of the code rules, for mixed answers only: prose alone keeps its fusion
        rules = replace(rules, heading_words=0.0)
    apply_rules(ranked, query, fusion.dense_weight / (fusion.k + 1), rules)
    order = sorted(range(len(pooled)), key=lambda i: (-pooled[i][0].fused, pooled[i][0].dense_rank or 10**9))
    ranked = [ranked[i] for i in order]
    pooled = [pooled[i] for i in order]
    order = diversify(ranked, options.policy.rules)
    pooled = [pooled[i] for i in order]
    # An exact identifier match, and the definition of an asked name, stay even under the similarity threshold: names
    # are what dense vectors miss. A chunk with no vector yet cannot be judged by similarity: its lexical rank decides.
    bare_name = _BARE_NAME.fullmatch(query) is not None
    above = [
        (c, index)
        for c, index in pooled
        if c.exact or "defines" in c.rules or _relevant(c, options.threshold, fusion, bare_name)
    ]
    stale: dict[str, bool] = {}

    def stale_for(path: str) -> bool:
        if is_stale is None:
            return False
        if path not in stale:
            stale[path] = is_stale(path)
        return stale[path]

    if not options.files_only:
        above = _one_per_entity(above, by_index, options.k)
    if options.files_only:  # the best chunk of each file stands for it
        for index in sources:
            keys = [c.key for c, owner in above if owner is index and c.key not in by_index[id(index)]]
            if keys:
                by_index[id(index)].update(index.store.chunks(keys))
        seen_paths: set[str] = set()
        first_per_file = []
        for c, index in above:
            meta = by_index[id(index)].get(c.key)
            if meta is not None and meta.path not in seen_paths:
                seen_paths.add(meta.path)
                first_per_file.append((c, index))
        above = first_per_file
    chosen = above[: options.k]
    for index in sources:
        keys = [c.key for c, owner in chosen if owner is index and c.key not in by_index[id(index)]]
        if keys:
            by_index[id(index)].update(index.store.chunks(keys))
    hits = []
    spare_text: list[str | None] = []  # the text of results under full_threshold: theirs if the budget has room
    for candidate, index in chosen:
        chunk = by_index[id(index)].get(candidate.key)
        if chunk is None:  # removed by a writer since the candidates were read
            continue
        strong = (
            candidate.cosine >= options.full_threshold
            # the lexical side's first pick that also passes the similarity threshold carries its text too
            or (candidate.lexical_rank == 1 and candidate.cosine >= options.threshold)
            if candidate.cosine is not None
            else (candidate.lexical_rank or 10**9) <= LEXICAL_FULL_RANKS
        )
        full = strong and not options.metadata_only
        graph = index.call_graph() if chunk.kind == "code" else None
        hits.append(
            _hit(
                chunk,
                score=None if candidate.cosine is None else round(candidate.cosine, 4),
                relevance=relevance(candidate.final, fusion),
                content=chunk.content if full else None,
                stale=stale_for(chunk.path),
                explain=_explain(candidate) if options.explain else None,
                calls=graph.calls(chunk) if graph else None,
                called_by=graph.called_by(chunk) if graph else None,
            )
        )
        spare_text.append(None if full or options.metadata_only else chunk.content)
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
        omitted=left_out + max(0, len(above) - options.k),
        threshold=options.threshold,
        full_threshold=options.full_threshold,
        model=sources[0].store.manifest.model_id if sources else "",
        dense_coverage=1.0 if total == 0 else round(embedded / total, 4),
    )


def _embed_beside_lexical(
    sources: Sequence[KindIndex], embed_query: Callable[[str], np.ndarray], query: str, depth: int
) -> tuple[np.ndarray, list[list[tuple[int, float]]]]:
    """The query vector and every source's lexical candidates, the lexical searches running in a thread while the
    model embeds (both release the GIL: onnxruntime and SQLite do their work in C)."""
    lexical: list[list[tuple[int, float]]] = []
    failure: list[BaseException] = []

    def lexical_side() -> None:
        try:
            lexical.extend(lexical_candidates(index, query, depth) for index in sources)
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=lexical_side, name="knowledge-lexical")
    worker.start()
    try:
        vector = embed_query(query)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return vector, lexical


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


def _one_per_entity(
    above: list[tuple[Candidate, KindIndex]], by_index: dict[int, dict[int, Chunk]], k: int
) -> list[tuple[Candidate, KindIndex]]:
    """Parts of one entity or section among the first `k` results become one result at the best part's place, with
    the entity's whole text and line range (parts not ranked are read from the store)."""
    groups: dict[tuple[int, str], list[int]] = {}
    position = 0
    while position < len(above) and len(groups) < k:
        batch = above[position : position + 4 * k]
        for index in {id(owner): owner for _, owner in batch}.values():
            keys = [c.key for c, owner in batch if owner is index and c.key not in by_index[id(index)]]
            if keys:
                by_index[id(index)].update(index.store.chunks(keys))
        for offset, (candidate, index) in enumerate(batch):
            chunk = by_index[id(index)].get(candidate.key)
            key = (id(index), group_key(chunk.id) if chunk is not None else f"#{candidate.key}")
            if key in groups or len(groups) < k:
                groups.setdefault(key, []).append(position + offset)
        position += len(batch)
    dropped: set[int] = set()
    for (owner, entity), positions in groups.items():
        if len(positions) < 2:
            continue
        best, index = above[positions[0]]
        first = by_index[owner][best.key]
        parts = [chunk for chunk in index.store.chunks_of_path(first.path) if group_key(chunk.id) == entity]
        by_index[owner][best.key] = merge(parts or [first])
        cosines = [cosine for p in positions if (cosine := above[p][0].cosine) is not None]
        best.cosine = max(cosines) if cosines else best.cosine
        dropped.update(positions[1:])
    kept = [item for n, item in enumerate(above[:position]) if n not in dropped]
    return kept + above[position:]


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


def _lexical_only_kept(candidate: Candidate) -> bool:
    return candidate.lexical_rank is not None and candidate.lexical_rank <= LEXICAL_KEPT_RANKS


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
        "dense_rank": candidate.dense_rank,
        "lexical_score": None if candidate.lexical_score is None else round(candidate.lexical_score, 4),
        "lexical_rank": candidate.lexical_rank,
        "exact_identifier": candidate.exact,
        "fused_score": round(candidate.fused, 6),
    }
