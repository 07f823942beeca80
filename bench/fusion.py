"""Tune reciprocal rank fusion (k, lexical weight) on the dev splits only: SciFact train and CoSQA dev.

    python bench/fusion.py --model all-mpnet-base-v2

Each query's dense and lexical top-100 are computed once through knowledge's own store and lexical index, then
fused for every grid point; the grid point with the best mean nDCG@10 over both sets wins.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir import TOP, model_index
from beir_data import SHARED, load
from metrics import evaluate

from knowledge.config import load_settings
from knowledge.lexical import terms
from knowledge.ranking import FusionParams, fuse

SPLITS = {"scifact": "train", "cosqa": "dev"}
GRID_K = (5, 10, 20, 60)
GRID_LEXICAL = (0.4, 0.6, 0.8, 1.0, 1.2)
GRID_FULL_TERMS = (1, 6, 8, 10, 12, 16)  # 1: a constant lexical weight


def ranked_lists(dataset: str, split: str, model: str, home: Path) -> tuple[dict, dict, dict]:
    data = load(SHARED / dataset, split)
    lists = {}
    with model_index(data, model, "fp32", home) as (embedder, store, lexical, _):
        ids = {key: chunk.id for key, chunk in store.chunks.items()}
        for qid, text in data.queries.items():
            lists[qid] = (
                store.search_keys(embedder.embed_query(text), TOP),
                lexical.search(text, TOP),
                len(set(terms(text))),
            )
    return lists, ids, data.qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {})
    sets = {name: ranked_lists(name, split, args.model, settings.home) for name, split in SPLITS.items()}
    rows = []
    for k, weight, full_terms in itertools.product(GRID_K, GRID_LEXICAL, GRID_FULL_TERMS):
        params = FusionParams(k=k, lexical_weight=weight, lexical_full_terms=full_terms)
        scores = {}
        for name, (lists, ids, qrels) in sets.items():
            runs = {
                qid: [ids[c.key] for c in fuse(dense, lexical, params, query_terms=n)][:TOP]
                for qid, (dense, lexical, n) in lists.items()
            }
            scores[name] = round(evaluate(runs, qrels)["ndcg@10"], 4)
        rows.append(
            {
                "k": k,
                "lexical_weight": weight,
                "lexical_full_terms": full_terms,
                **scores,
                "mean": round(sum(scores.values()) / len(scores), 4),
            }
        )
    baselines = {}
    for name, (lists, ids, qrels) in sets.items():
        baselines[name] = {
            "dense": round(
                evaluate({q: [ids[key] for key, _ in d] for q, (d, _, _) in lists.items()}, qrels)["ndcg@10"], 4
            ),
            "lexical": round(
                evaluate({q: [ids[key] for key, _ in x] for q, (_, x, _) in lists.items()}, qrels)["ndcg@10"], 4
            ),
        }
    best = max(rows, key=lambda row: row["mean"])
    print(
        json.dumps(
            {"model": args.model, "splits": SPLITS, "baselines": baselines, "best": best, "grid": rows}, indent=1
        )
    )


if __name__ == "__main__":
    main()
