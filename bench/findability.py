"""`knowledge eval` on a generated docs set with planted duplicates, with the real model: are the planted ones listed,
how many clean docs are flagged, and how long a cold and a warm (cached query vectors) run take.

Docs are SciFact abstracts (title as the doc's heading, the first sentence as its `description`); each planted
duplicate copies a doc's description onto a second doc about the same thing (its text reworded by truncation).

    python bench/findability.py --docs 200 --planted 10 --out bench/results/findability.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load

from knowledge.kb import KnowledgeBase


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:200]


def make_docs(root: Path, count: int, planted: int, seed: int = 0) -> set[str]:
    corpus = list(load(SHARED / "scifact").corpus.values())
    rng = random.Random(seed)
    picked = rng.sample(corpus, count)
    (root / "docs").mkdir(parents=True)
    for n, (title, text) in enumerate(picked):
        description = json.dumps(first_sentence(text))
        body = f"---\ndescription: {description}\n---\n# {title}\n\n{text}\n"
        (root / "docs" / f"doc{n:04d}.md").write_text(body)
    twins = set()
    for n in rng.sample(range(count), planted):
        title, text = picked[n]
        description = json.dumps(first_sentence(text))
        half = text[: max(200, len(text) // 2)]
        body = f"---\ndescription: {description}\n---\n# {title} (notes)\n\n{half}\n"
        (root / "docs" / f"dup{n:04d}.md").write_text(body)
        twins |= {f"docs/doc{n:04d}.md", f"docs/dup{n:04d}.md"}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return twins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--planted", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        twins = make_docs(root, args.docs, args.planted)
        kb = KnowledgeBase.open(root)
        started = time.monotonic()
        kb.reindex_all()
        index_seconds = time.monotonic() - started
        runs = []
        for _ in range(2):  # cold (query vectors embedded), then warm (from the cache)
            started = time.monotonic()
            report = kb.findability()
            runs.append(time.monotonic() - started)
        listed = {p.doc for p in report.lost}
        pairs_caught = sum(1 for n in {t[-7:-3] for t in twins} if {f"docs/doc{n}.md", f"docs/dup{n}.md"} & listed)
        out = {
            "docs": args.docs + args.planted,
            "planted_pairs": args.planted,
            "planted_pairs_listed": pairs_caught,
            "clean_docs_listed": len(listed - twins),
            "description_recall_at_1": report.description.recall_at_1,
            "description_recall_at_5": report.description.recall_at_5,
            "description_mrr": report.description.mrr,
            "title_recall_at_1": report.title.recall_at_1,
            "title_mrr": report.title.mrr,
            "queries": report.description.queries + report.title.queries,
            "index_seconds": round(index_seconds, 1),
            "eval_seconds_cold": round(runs[0], 2),
            "eval_seconds_warm": round(runs[1], 2),
            "model": kb.status().model,
        }
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
