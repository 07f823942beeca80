"""Retrieval: each source's dense and lexical candidates, fused by reciprocal rank (weights from the policy), with the
exact-identifier mark, the definitions of asked names joined, and the cosine of every candidate that has a vector."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .kind import KindIndex
from .lexical import identifiers, terms
from .policy import FusionParams, RankingPolicy
from .ranking import asked_names
from .store import Coverage

if TYPE_CHECKING:
    import numpy as np


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
    static: float | None = None  # its similarity in the static stage's space, while it waits for its vector


def fuse(
    dense: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    params: FusionParams,
    exact_keys: Set[int] = frozenset(),
    query_terms: int | None = None,
    static_keys: Set[int] = frozenset(),
) -> list[Candidate]:
    """Candidates from both lists ranked by fused score (ties: better dense rank first)."""
    lexical_weight = params.lexical_weight * lexical_scale(query_terms, params)
    found: dict[int, Candidate] = {}
    for rank, (key, cosine) in enumerate(dense, start=1):
        weight = params.dense_weight * (params.static_weight if key in static_keys else 1.0)
        found[key] = Candidate(key, cosine=cosine, dense_rank=rank, fused=weight / (params.k + rank))
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
    static_vector: np.ndarray | None = None,
) -> list[Candidate]:
    """Fused candidates with the cosine of every one that has a vector (None: lexical evidence only). Chunks still
    waiting for their vector take part through the static stage, never twice (its rows go when the vector comes)."""
    store = index.store
    dense = [(hit.key, hit.score) for hit in store.dense_search(vector, depth)] if vector is not None else []
    static: dict[int, float] = {}
    if static_vector is not None:
        static = {hit.key: hit.score for hit in store.static_search(static_vector, depth)}
        dense = merge_stages(dense, list(static.items()), index.coverage())
    query_terms = terms(query)
    if lexical_hits is None:
        lexical_hits = lexical_candidates(index, query, depth)
    pool = list(dict.fromkeys([key for key, _ in dense] + [key for key, _ in lexical_hits]))
    exact = _exact_matches(query, index, pool, policy)
    candidates = fuse(dense, lexical_hits, policy.fusion, exact, len(set(query_terms)), static.keys())
    if index.kind == "code" and policy.definitions_joined:  # definitions of asked names join, found or not
        known = {c.key for c in candidates}
        names = sorted(asked_names(query))
        joined = index.store.defining(names, policy.definitions_joined)
        candidates += [Candidate(key) for key in joined if key not in known]
    for candidate in candidates:
        if candidate.key in static:  # its cosine in the model's space is not known yet
            candidate.static, candidate.cosine = static[candidate.key], None
    missing = [c.key for c in candidates if c.dense_rank is None]
    found = store.similarities(missing, vector) if missing and vector is not None else {}
    for candidate in candidates:
        if candidate.dense_rank is None:
            candidate.cosine = found.get(candidate.key)
    return candidates


def merge_stages(
    model: list[tuple[int, float]], static: list[tuple[int, float]], coverage: Coverage
) -> list[tuple[int, float]]:
    """One dense list from the transformer's list (over the chunks it has embedded) and the static stage's (over the
    rest): each hit placed where its rank would fall in a ranking of all chunks, its list standing for its share."""
    if not static:
        return model
    if not model:
        return static
    total = max(1, coverage.embedded + coverage.static)
    placed = [((rank - 0.5) * total / max(1, coverage.embedded), 0, rank, hit) for rank, hit in enumerate(model, 1)]
    placed += [((rank - 0.5) * total / max(1, coverage.static), 1, rank, hit) for rank, hit in enumerate(static, 1)]
    return [hit for *_, hit in sorted(placed)]


def embed_beside_lexical(
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
