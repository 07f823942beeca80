"""The ranking policy: every constant of fusion, the ranking rules and the cut, in one record that can be injected.

`RankingPolicy.plain()` is reciprocal rank fusion of the dense and lexical lists and nothing else (`rank_rules =
false`). What each part is worth on every benchmark of the gate: docs/benchmarks.md §4c.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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
    # In units of a first-rank vote, for chunks holding an identifier from the query. 0 since the gate (§4c): worth
    # -0.002 on semble-dev, -0.004 on mixed, +0.002 on the function set. Such chunks still pass the threshold.
    exact_boost: float = 0.0
    # A hit of the static stage's list votes this share of a transformer hit: alone at the first stage, beside the
    # transformer's list once vectors exist. Decided on the first-stage gate (docs/benchmarks.md §0a) for the trained
    # table: 0.3 against main's 0.2 and distilled table +0.026 mean, SciFact -0.004 (0.35: SciFact -0.010; 0.5:
    # -0.026); beside the transformer (complete gate, MiniLM) 0.3 is also the best of 0.1-0.5.
    static_weight: float = 0.3

    @property
    def vote(self) -> float:
        """The fused worth of one first-rank vote: the unit every rule's share is counted in."""
        return self.dense_weight / (self.k + 1)


@dataclass(frozen=True, slots=True)
class RankingRules:
    """The knobs of the rules in rules.py's table (`RULES`): an added vote is off at 0, a factor or the decay at 1."""

    defines: float = 2.0  # first-rank votes for the chunk that defines a name the query asks for
    defines_in_named_file: float = 1.0  # more when the file or module is named like it too
    defines_other_case: float = 0.5  # factor for `from_request` when the query spells a type (`FromRequest`), and for a
    # constructor, whose name is its class's
    # more when the query qualifies the name (`Command.invoke`) and that names its scope: outweighs a file named like
    # the name (`adapter.rb` for `RackBuilder#adapter`)
    defines_qualified: float = 2.0
    file_words: float = 1.0  # query words that name the file or its folder …
    file_stem_coverage: float = 0.5  # … half of it by how much of the file's own name the query covers
    demote: float = 0.6  # factor for tests, examples, vendored and generated code, shims, `.d.ts`
    header: float = 0.8  # factor for a C/C++ header when its implementation (same path, .c/.cc/.cpp) is a candidate
    same_file_decay: float = 0.25  # the second chunk of one file counts ×0.25, the third ×0.06, …
    same_file_free: int = 1  # chunks of one file at full credit before the decay starts
    heading_words: float = 1.0  # votes for a doc section whose own heading spells the query's words (mixed answers)
    file_coherence: float = 0.5  # share of what the file's other candidates scored that a chunk gains …
    file_coherence_cap: float = 2.0  # … counted up to this many first-rank votes
    non_callable: float = 1.0  # factor for code that is no function or method (class shell, imports, module code)
    # A piece of a class or module with no name of its own (`attr_reader :x`, a DSL call), for a question naming that
    # class: at most this share of the class's score when the class is a candidate (0: no cap)
    fragment: float = 0.9
    enabled: bool = True


def _does_rules() -> RankingRules:
    """For a question that says what code does ("Returns the package name", "parse a cookie header"): the function
    that does it, wherever it is. Plain fusion, tests still demoted, functions and methods before the code around them,
    and no per-file credit or decay: several methods of one file may all be candidates (MiniLM, threshold 0: the
    function set 0.515 -> 0.613, mixed 0.881 -> 0.910, semble-dev 0.880 -> 0.879; docs/benchmarks.md §4c)."""
    return RankingRules(
        defines=0.0,
        file_words=0.0,
        file_coherence=0.0,
        same_file_decay=1.0,
        non_callable=0.6,
    )


@dataclass(frozen=True, slots=True)
class CutParams:
    """How the similarity threshold is read with the fused evidence (cut.py), and which results carry their text."""

    # Before a chunk has its vector, only its lexical rank speaks for it: keep the top ranks, show text for the first
    # few.
    lexical_kept_ranks: int = 10
    lexical_full_ranks: int = 3
    # A chunk in the lexical top 10 passes 0.15 under the similarity threshold (semble-dev with the defaults: 0.822
    # with the cut on cosine alone, 0.838 with top 3 / 0.10, 0.849 with top 10 / 0.15, 0.853 with 0.25; no cut: 0.860).
    lexical_vouch_ranks: int = 10
    lexical_vouch_margin: float = 0.15
    # A result both lists found, with relevance from 0.25 (about the top 20 of both), passes 0.13 under the threshold
    # (mpnet: down to cosine 0.25): semble-dev with the defaults 0.863 -> 0.869 (0.875 with no cut), and 40 SciFact
    # questions asked of four code repositories still get no result at all (0.36 results each at 0.18 under; 4.5-9.5
    # with no floor).
    relevance_pass: float = 0.25
    relevance_pass_margin: float = 0.13


@dataclass(frozen=True, slots=True)
class RankingPolicy:
    fusion: FusionParams = field(default_factory=FusionParams)
    rules: RankingRules = field(default_factory=RankingRules)
    does_rules: RankingRules = field(default_factory=_does_rules)  # the rules for "does X" questions
    cut: CutParams = field(default_factory=CutParams)
    candidate_floor: int = 50  # every list is read at least this deep (3 × k when k is larger)
    filtered_depth: int = 4  # with path or language filters, look this many times deeper before filtering
    definitions_joined: int = 20  # at most this many chunks defining an asked name join the candidates
    qualified_depth: int = 10  # a qualified name's definitions are read this many times deeper, then its scope's kept
    # An identifier held by more than this share of the candidates is the project's vocabulary ("tRPC", "WebSocket"
    # in a websocket library), not a name that singles out a chunk: it earns no exact-match boost.
    exact_common_share: float = 0.3
    exact_common_min_pool: int = 20

    def plain(self) -> RankingPolicy:
        """Reciprocal rank fusion of the two lists only: no rules, no exact-identifier boost, no definitions joining."""
        return replace(
            self,
            fusion=replace(self.fusion, exact_boost=0.0),
            rules=RankingRules(enabled=False),
            does_rules=RankingRules(enabled=False),
            definitions_joined=0,
        )

    def depth(self, k: int, filtered: bool) -> int:
        """How deep each list is read for an answer of `k` results."""
        return max(k * 3, self.candidate_floor) * (self.filtered_depth if filtered else 1)


DEFAULT_POLICY = RankingPolicy()
