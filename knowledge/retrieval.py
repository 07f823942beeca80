"""Retrieval: each source's dense and lexical candidates read from its store and fused (ranking/fusion.py), with the
exact-identifier mark, the definitions of asked names joined, and the cosine of every candidate that has a vector."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .kind import KindIndex
from .ranking import Candidate, RankingPolicy, fuse
from .ranking.query import Query, scope_words

if TYPE_CHECKING:
    import numpy as np


def _exact_matches(query: Query, index: KindIndex, keys: Sequence[int], policy: RankingPolicy) -> set[int]:
    wanted = set(query.identifiers)
    # Code only: in prose, camelCase words are terms of art ("vCJD", "iPSC"), and boosting them lowered SciFact dev
    # nDCG@10 (0.7232 without, 0.7213 with); in code they are names.
    if not wanted or index.kind != "code":
        return set()
    bodies = {key: set(body.split()) for key, body in index.searched.lexical_terms(keys).items()}
    if len(bodies) >= policy.exact_common_min_pool:
        common = policy.exact_common_share * len(bodies)
        wanted = {name for name in wanted if sum(name in body for body in bodies.values()) <= common}
    return {key for key, body in bodies.items() if wanted & body}


def _definitions(index: KindIndex, query: Query, limit: int, qualified_depth: int) -> list[int]:
    """The chunks defining a name the query asks for, at most `limit`; for a qualified name (`Command.invoke`, where
    `invoke` may be defined a hundred times) those whose scope its qualifiers name come first."""
    qualified = query.qualified
    joined = index.searched.defining(sorted(query.names), limit * (qualified_depth if qualified else 1))
    if len(joined) <= limit:
        return joined
    chunks = index.searched.chunks(joined)
    asked = set().union(*(q for ways in qualified.values() for q in ways))

    def named(key: int) -> int:
        chunk = chunks.get(key)
        return 0 if chunk is None else len(asked & scope_words(chunk.path, chunk.parent))

    return sorted(joined, key=lambda key: -named(key))[:limit]


def lexical_candidates(index: KindIndex, query: Query, depth: int) -> list[tuple[int, float]]:
    return [(hit.key, hit.score) for hit in index.searched.lexical_search(list(query.terms), depth)]


def retrieve(
    index: KindIndex,
    query: Query,
    vector: np.ndarray | None,
    depth: int,
    policy: RankingPolicy,
    lexical_hits: list[tuple[int, float]] | None = None,
    static_hits: list[tuple[int, float]] | None = None,
) -> list[Candidate]:
    """Fused candidates with the cosine of every one that has a vector (None: lexical evidence only). The static
    stage's list (`static_hits`) ranks every chunk beside the transformer's: alone while no chunk has a vector, the only
    dense evidence of a chunk still waiting for one, a vote beside the transformer's for the others."""
    store = index.searched
    dense = [(hit.key, hit.score) for hit in store.dense_search(vector, depth)] if vector is not None else []
    static = static_hits or []
    if lexical_hits is None:
        lexical_hits = lexical_candidates(index, query, depth)
    pool = list(
        dict.fromkeys([key for key, _ in dense] + [key for key, _ in static] + [key for key, _ in lexical_hits])
    )
    exact = _exact_matches(query, index, pool, policy)
    candidates = fuse(dense, lexical_hits, policy.fusion, exact, len(set(query.terms)), static)
    if index.kind == "code" and policy.definitions_joined:  # definitions of asked names join, found or not
        known = {c.key for c in candidates}
        joined = _definitions(index, query, policy.definitions_joined, policy.qualified_depth)
        candidates += [Candidate(key) for key in joined if key not in known]
    missing = [c.key for c in candidates if c.dense_rank is None]
    found = store.similarities(missing, vector) if missing and vector is not None else {}
    return [  # a chunk the transformer's list did not find: its cosine if it has a vector, None while it waits
        candidate if candidate.dense_rank is not None else replace(candidate, cosine=found.get(candidate.key))
        for candidate in candidates
    ]


def static_candidates(index: KindIndex, vector: np.ndarray | None, depth: int) -> list[tuple[int, float]]:
    return [(hit.key, hit.score) for hit in index.searched.static_search(vector, depth)] if vector is not None else []


def models_beside_lexical(
    sources: Sequence[KindIndex],
    embed_query: Callable[[str], np.ndarray] | None,
    static_query: Callable[[str], np.ndarray] | None,
    query: Query,
    depth: int,
) -> tuple[np.ndarray | None, list[list[tuple[int, float]]], list[list[tuple[int, float]]]]:
    """The query's transformer vector, every source's static list and every source's lexical candidates. With a
    transformer, the lexical searches and the static lists (whose question vector is a sum of token rows) are read in
    a thread while it embeds (onnxruntime, numpy's product, SQLite and the network all wait without the GIL); at the
    first stage one after the other, as a thread there only contends with the static scan (a million rows: 54 against
    48 ms)."""
    static_vector = static_query(query.text) if static_query is not None else None
    if embed_query is None:
        lexical = [lexical_candidates(index, query, depth) for index in sources]
        return None, [static_candidates(index, static_vector, depth) for index in sources], lexical
    found: list[list[tuple[int, float]]] = []
    static: list[list[tuple[int, float]]] = []
    failure: list[BaseException] = []

    def beside_the_model() -> None:
        try:
            found.extend(lexical_candidates(index, query, depth) for index in sources)
            static.extend(static_candidates(index, static_vector, depth) for index in sources)
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=beside_the_model, name="knowledge-lexical")
    worker.start()
    try:
        vector = embed_query(query.text)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return vector, static, found
