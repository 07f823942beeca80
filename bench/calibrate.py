"""Calibrate a model's two search thresholds on the bench sets' train/dev splits (never the test splits).

similarity threshold: the score that keeps 95% of relevant (query, document) pairs (also printed for each set alone);
full-content threshold: the median score of relevant pairs: a result at or above it scores like a typical right
answer. (Also printed, for reference: the lowest score at which at least half of the pooled top-10 results scoring
that high are relevant; it keeps text for too few results on these one-answer sets to serve as the default.)

  python bench/calibrate.py --model all-mpnet-base-v2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load, mteb_text

from knowledge.config import load_settings
from knowledge.embedding import load_embedder
from knowledge.embedding.cache import EmbeddingCache, embed_with_cache

SPLITS = {"scifact": "train", "cosqa": "dev"}
KEEP_RELEVANT = 0.95
KEEP_RELEVANT_WITH_TEXT = 0.75
PRECISION = 0.5


def scored_pairs(dataset: str, split: str, model: str, variant: str, home: Path) -> tuple[list, list]:
    """(scores of relevant pairs, (score, is_relevant) of every top-10 result)."""
    data = load(SHARED / dataset, split)
    embedder = load_embedder(model, home, variant)
    ids = list(data.corpus)
    cache = EmbeddingCache(home / "embeddings" / f"{embedder.fingerprint}.sqlite", embedder.dims)
    docs, _ = embed_with_cache(
        [mteb_text(*data.corpus[i]) for i in ids], embedder.embed_documents, cache, embedder.dims
    )
    position = {doc_id: n for n, doc_id in enumerate(ids)}
    relevant_scores: list[float] = []
    top: list[tuple[float, bool]] = []
    for qid, text in data.queries.items():
        scores = docs @ embedder.embed_query(text)
        relevant = data.qrels[qid]
        relevant_scores.extend(float(scores[position[d]]) for d in relevant if d in position)
        for n in np.argsort(-scores)[:10]:
            top.append((float(scores[n]), ids[n] in relevant))
    return relevant_scores, top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--variant", default="fp32")
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {})
    relevant: list[float] = []
    top: list[tuple[float, bool]] = []
    per_set = {}  # each set's own threshold: prose (SciFact) against code (CoSQA)
    for dataset, split in SPLITS.items():
        r, t = scored_pairs(dataset, split, args.model, args.variant, settings.home)
        relevant += r
        top += t
        per_set[dataset] = round(float(np.quantile(r, 1 - KEEP_RELEVANT)), 2)
    threshold = float(np.quantile(relevant, 1 - KEEP_RELEVANT))
    top.sort(key=lambda pair: -pair[0])
    hits = np.cumsum([is_rel for _, is_rel in top])
    precision = hits / np.arange(1, len(top) + 1)
    above = [top[n][0] for n in range(len(top)) if precision[n] >= PRECISION]
    full_threshold = float(min(above)) if above else 1.0
    print(
        json.dumps(
            {
                "model": args.model,
                "variant": args.variant,
                "splits": SPLITS,
                "relevant_pairs": len(relevant),
                "threshold": round(threshold, 2),
                "threshold_per_set": per_set,
                "full_threshold": round(float(np.quantile(relevant, 1 - KEEP_RELEVANT_WITH_TEXT)), 2),
                "median_relevant": round(float(np.median(relevant)), 2),
                "precision_half_threshold": round(max(full_threshold, threshold), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
