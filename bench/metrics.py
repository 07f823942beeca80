"""IR metrics with binary gains, as BEIR/MTEB compute them (nDCG@10, Recall@k, MRR@10)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    for rank, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (rank + 1)
    return 0.0


def evaluate(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]]) -> dict[str, float]:
    """Mean metrics over the queries in `qrels` (a query with no run scores zero)."""
    ids = sorted(qrels)
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for qid in ids:
        ranked, relevant = runs.get(qid, []), qrels[qid]
        totals["ndcg@10"] += ndcg_at_k(ranked, relevant)
        totals["recall@10"] += recall_at_k(ranked, relevant, 10)
        totals["recall@100"] += recall_at_k(ranked, relevant, 100)
        totals["mrr@10"] += mrr_at_k(ranked, relevant)
    return {name: value / len(ids) for name, value in totals.items()}
