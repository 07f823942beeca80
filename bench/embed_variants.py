"""Throughput of the model's built variants on the same texts: what a fill would take with each.

    python bench/embed_variants.py --repo . --variants int8 int8-dynamic --runs 3 --every 3

Chunks each repository with the product's chunker (the texts the model reads, code heads included), embeds them
with each variant's product embedder (no cache), alternating the variants run by run so that a busy machine slows
all alike, and reports chunks/s, the ratio of the medians to the first variant, and how close each variant's
vectors are to the first's (mean and minimum cosine). Writes JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from embed_head import embed_texts

from knowledge.config import load_settings
from knowledge.embedding import load_embedder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, nargs="+", default=[Path(".")])
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--variants", nargs="+", default=["int8", "int8-dynamic"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--every", type=int, default=1, help="embed every Nth chunk only (the same ones each way)")
    args = parser.parse_args()
    home = load_settings(args.repo[0])[0].home
    embedders = {variant: load_embedder(args.model, home, variant) for variant in args.variants}
    first = args.variants[0]
    report: dict = {"model": args.model, "variants": args.variants, "repos": {}}
    for root in args.repo:
        texts = embed_texts(root, embedders[first], None)[:: args.every]
        seconds: dict[str, list[float]] = {variant: [] for variant in args.variants}
        vectors = {}
        for _ in range(args.runs):
            for variant, embedder in embedders.items():
                started = time.perf_counter()
                vectors[variant] = embedder.embed_documents(texts)
                seconds[variant].append(time.perf_counter() - started)
        row: dict = {"chunks": len(texts), "tokens": sum(len(ids) for ids in embedders[first].token_ids(texts))}
        for variant in args.variants:
            rate = len(texts) / statistics.median(seconds[variant])
            cosines = np.sum(vectors[variant] * vectors[first], axis=1)
            row[variant] = {
                "seconds": [round(s, 1) for s in seconds[variant]],
                "chunks_per_s": round(rate, 2),
                "minutes_for_10k_chunks": round(10_000 / rate / 60, 1),
                f"cosine_to_{first}": {"mean": round(float(cosines.mean()), 4), "min": round(float(cosines.min()), 4)},
            }
        for variant in args.variants[1:]:
            row[f"{variant}_speedup"] = round(row[variant]["chunks_per_s"] / row[first]["chunks_per_s"], 3)
        report["repos"][root.resolve().name] = row
        print(json.dumps(row), file=sys.stderr)
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
