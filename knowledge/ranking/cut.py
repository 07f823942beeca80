"""The cut: which ranked candidates pass the similarity threshold, read with the fused evidence, and which carry their
text. `score` stays the cosine of query and chunk, so both thresholds keep one meaning with or without the lexical
side (docs/agents.md)."""

from __future__ import annotations

from .fusion import Candidate, Rule
from .policy import CutParams, FusionParams, RankingPolicy
from .query import is_bare_name

__all__ = ["carries_text", "is_bare_name", "passes", "relevance", "relevant"]


def passes(candidate: Candidate, threshold: float, policy: RankingPolicy, bare_name: bool = False) -> bool:
    """An exact identifier match, and the definition of an asked name, stay even under the threshold: names are what
    dense vectors miss. Otherwise the similarity cut, read with the fused evidence."""
    return candidate.exact or Rule.DEFINES in candidate.shares or relevant(candidate, threshold, policy, bare_name)


def relevant(candidate: Candidate, threshold: float, policy: RankingPolicy, bare_name: bool = False) -> bool:
    """A chunk the lexical side ranks near the top, or that the whole ranking puts near the top, passes a margin under
    the threshold (a cosine just short of it is often the answer itself, worded differently); far under it nothing
    passes, so an off-topic question still gets nothing. For a bare name query the lexical side's top matches pass at
    any cosine. A chunk with no vector yet cannot be judged by similarity: its lexical rank decides."""
    cut = policy.cut
    if candidate.cosine is None:
        return waiting_rank(candidate) <= cut.lexical_kept_ranks
    if candidate.cosine >= threshold:
        return True
    rank = candidate.lexical_rank
    vouched = rank is not None and rank <= cut.lexical_vouch_ranks
    if vouched and (bare_name or candidate.cosine >= threshold - cut.lexical_vouch_margin):
        return True
    # the ranking's word counts only where both sides found the chunk: a lone dense hit at a low cosine is what an
    # off-topic question gets too
    close = candidate.cosine >= threshold - cut.relevance_pass_margin and rank is not None
    return close and relevance(candidate.final, policy.fusion) >= cut.relevance_pass


def carries_text(candidate: Candidate, threshold: float, full_threshold: float, cut: CutParams) -> bool:
    """A strong match shows its text: a cosine over the full-content threshold, or the lexical side's first pick that
    also passes the similarity threshold; before its vector, one of the first few of the lists that could see it."""
    if candidate.cosine is None:
        return waiting_rank(candidate) <= cut.lexical_full_ranks
    return candidate.cosine >= full_threshold or (candidate.lexical_rank == 1 and candidate.cosine >= threshold)


def relevance(final: float, params: FusionParams) -> float:
    """The order's score in units of first place: 1.0 is first place in both the dense and the lexical list, and rule
    boosts (a definition of the asked name, the file's name) lift a result past it, uncapped, so results the evidence
    tells apart never show the same value; it never rises down a list of results, unlike the cosine beside it."""
    ideal = (params.dense_weight + params.lexical_weight) / (params.k + 1)
    return round(final / ideal, 3) if ideal > 0 else 0.0


def waiting_rank(candidate: Candidate) -> int:
    """For a chunk with no vector yet: its best rank in the lists that could see it (lexical, static stage)."""
    ranks = [candidate.lexical_rank, candidate.static_rank]
    return min((rank for rank in ranks if rank is not None), default=10**9)
