"""The ranking, in one room: the policy record (policy.py), fusion and the candidate (fusion.py), what a query asks
(query.py), the rules as one ordered table (rules.py) and the cut (cut.py). Retrieval reads the stores and hands
candidates in; search reads what comes out. Where a new rule goes: docs/architecture.md."""

from .cut import carries_text, is_bare_name, passes, relevance
from .fusion import Candidate, Rule, fuse
from .policy import DEFAULT_POLICY, CutParams, FusionParams, RankingPolicy, RankingRules
from .query import asked_names, asks_what_code_does
from .rules import RULE_NAMES, RULES, rank, rules_for, without

__all__ = [
    "DEFAULT_POLICY",
    "RULES",
    "RULE_NAMES",
    "Candidate",
    "CutParams",
    "FusionParams",
    "RankingPolicy",
    "RankingRules",
    "Rule",
    "asked_names",
    "asks_what_code_does",
    "carries_text",
    "fuse",
    "is_bare_name",
    "passes",
    "rank",
    "relevance",
    "rules_for",
    "without",
]
