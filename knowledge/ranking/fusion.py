"""Fusion: each list's hits (the transformer's, the static stage's beside it, the lexical side's) become candidates by
reciprocal rank. A `Candidate` is a value: the rules and the cut return new ones, never change one."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from .policy import FusionParams

Item = TypeVar("Item", bound=Hashable)


def reciprocal_rank(ranked: Iterable[tuple[Mapping[Item, int], float]], rank_constant: float) -> dict[Item, float]:
    """Reciprocal-rank fusion, the one every answer uses (search's lists of chunks, locate's signals over files and
    over a file's entities): in each list an item at rank r (from 1) is worth weight / (rank_constant + r); an item's
    score is its sum over the lists, in the order they first name it."""
    fused: dict[Item, float] = {}
    for ranks, weight in ranked:
        for item, rank in ranks.items():
            fused[item] = fused.get(item, 0.0) + weight / (rank_constant + rank)
    return fused


def rank_and_margin(
    lists: Iterable[Mapping[Item, float]], rank_constant: float, margin_share: float
) -> dict[Item, float]:
    """Fusion of lists that carry votes, not only an order (locate's signals): in each list an item at rank r is worth
    (1 - margin_share) / (rank_constant + r) for its place, plus margin_share / (rank_constant + 1) times its votes
    over the list's first item's: the first item is worth 1 / (rank_constant + 1) either way, and an item whose votes
    come near the first's keeps what its place alone would lose (a decisive first stays first; a near tie is read as
    one). An item's score is its sum over the lists."""
    fused: dict[Item, float] = {}
    for votes in lists:
        ranks = ranks_by_votes(votes)
        top = max(votes.values(), default=0.0)
        for item, rank in ranks.items():
            margin = votes[item] / top if top > 0 else 0.0
            value = (1 - margin_share) / (rank_constant + rank) + margin_share * margin / (rank_constant + 1)
            fused[item] = fused.get(item, 0.0) + value
    return fused


def ranks_by_votes(votes: Mapping[Item, float]) -> dict[Item, int]:
    """Items ranked by their votes, most first (equal votes by the item's text): item -> its rank, from 1."""
    return {item: rank for rank, item in enumerate(sorted(votes, key=lambda i: (-votes[i], str(i))), start=1)}


class Rule(Enum):
    """A ranking rule, as `RULES` (rules.py) lists them in the order they apply; its value is its `--explain` name."""

    DEFINES = "defines"
    FILE_WORDS = "file_words"
    HEADING_WORDS = "heading_words"
    FILE_COHERENCE = "file_coherence"
    HEADER = "header"
    DEMOTE = "demoted"
    NON_CALLABLE = "non_callable"
    FRAGMENT = "fragment"
    SAME_FILE = "same_file"


@dataclass(frozen=True, slots=True)
class Candidate:
    key: int
    cosine: float | None = 0.0  # its similarity to the query in the model's space (None: not known yet)
    dense_rank: int | None = None
    lexical_score: float | None = None
    lexical_rank: int | None = None
    exact: bool = False  # holds an identifier the query names
    fused: float = 0.0  # reciprocal rank fusion of its lists
    static: float | None = None  # its similarity in the static stage's space, when that list found it
    static_rank: int | None = None
    ruled: float = 0.0  # `fused` with what the rules added or scaled (rules.py)
    final: float = 0.0  # what the results are ordered by: `ruled` after the same-file decay
    shares: Mapping[Rule, float] = field(default_factory=dict)  # what each rule moved it by, for --explain

    @property
    def dense_order(self) -> int:
        """Its place among the dense hits, for ties: the transformer's rank, else the static stage's."""
        return self.dense_rank or self.static_rank or 10**9


def fuse(
    dense: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    params: FusionParams,
    exact_keys: Set[int] = frozenset(),
    query_terms: int | None = None,
    static: Sequence[tuple[int, float]] = (),
) -> list[Candidate]:
    """Candidates from the lists ranked by fused score (ties: better dense rank first). The static stage's list ranks
    every chunk it holds, with or without a transformer vector, and votes `static_weight` of the transformer's."""
    lexical_weight = params.lexical_weight * lexical_scale(query_terms, params)
    static_weight = params.dense_weight * params.static_weight
    dense_of = {key: (rank, cosine) for rank, (key, cosine) in enumerate(dense, start=1)}
    static_of = {key: (rank, score) for rank, (key, score) in enumerate(static, start=1)}
    lexical_of = {key: (rank, score) for rank, (key, score) in enumerate(lexical, start=1)}
    lists = ((dense_of, params.dense_weight), (static_of, static_weight), (lexical_of, lexical_weight))
    fused = reciprocal_rank((({key: rank for key, (rank, _) in of.items()}, weight) for of, weight in lists), params.k)
    exact = exact_keys & fused.keys()
    for key in exact:
        fused[key] += params.exact_boost / (params.k + 1)
    found = [
        Candidate(
            key,
            cosine=dense_of[key][1] if key in dense_of else 0.0,
            dense_rank=dense_of[key][0] if key in dense_of else None,
            lexical_score=lexical_of[key][1] if key in lexical_of else None,
            lexical_rank=lexical_of[key][0] if key in lexical_of else None,
            static=static_of[key][1] if key in static_of else None,
            static_rank=static_of[key][0] if key in static_of else None,
            exact=key in exact,
            fused=total,
            ruled=total,
            final=total,
        )
        for key, total in fused.items()
    ]
    return sorted(found, key=lambda c: (-c.fused, c.dense_order))


def lexical_scale(query_terms: int | None, params: FusionParams) -> float:
    """1.0 for queries with at least `lexical_full_terms` distinct terms, proportionally less for shorter ones."""
    if query_terms is None:
        return 1.0
    return min(1.0, query_terms / max(1, params.lexical_full_terms))
