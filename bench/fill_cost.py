"""What a chunk costs the fill: which count of its text tracks the model's time, so that the fill's ETA holds.

    python bench/fill_cost.py --repo . --out bench/results/fill-cost.json

Chunks a repository as indexing does (docs, then code: the fill's order), embeds them with the configured model in
the fill's batches of 256, and times every one of the model's own batches. For each way of counting a batch's work
(characters, the characters before the model's window ends, tokens it reads, texts) it reports the rate in docs and in
code, and how much the per-batch rate varies: the unit whose rate is the same in both phases makes an ETA that does
not drift when the fill moves from docs to code.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FILL_BATCH = 256
READ_CHARS = 768  # about what mpnet reads of a text before its 192-token window ends


def timed(embedder: object, batch: list[str]) -> tuple[list[float], list[int]]:
    """When each of the model's own batches ended, and how many texts were done by then."""
    marks, bounds = [time.perf_counter()], [0]

    def tick(count: int) -> None:
        marks.append(time.perf_counter())
        bounds.append(bounds[-1] + count)

    embedder.embed_documents(batch, on_batch=tick)  # type: ignore[attr-defined]
    return marks, bounds


def main() -> None:
    from knowledge.kb import KnowledgeBase
    from knowledge.tree_chunks import tree_chunks

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=Path("."))
    parser.add_argument("--limit", type=int, default=1024, help="chunks per kind, at most")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    kb = KnowledgeBase.open(args.repo)
    embedder = kb.model.embedder()
    chunks = tree_chunks(kb.root, kb.settings, kb.model.counter, None)
    rows = []
    for kind in ("docs", "code"):
        texts = [c.embed_text for c in chunks[kind].values()][: args.limit]
        for start in range(0, len(texts), FILL_BATCH):
            batch = texts[start : start + FILL_BATCH]
            ids = embedder.token_ids(batch)  # type: ignore[attr-defined]
            order = sorted(range(len(batch)), key=lambda i: len(ids[i]))  # as embed_documents batches them
            marks, bounds = timed(embedder, batch)
            for n in range(1, len(bounds)):
                part = [order[i] for i in range(bounds[n - 1], bounds[n])]
                rows.append(
                    {
                        "kind": kind,
                        "seconds": marks[n] - marks[n - 1],
                        "texts": len(part),
                        "chars": sum(len(batch[i]) for i in part),
                        "read_chars": sum(min(len(batch[i]), READ_CHARS) for i in part),
                        "tokens": sum(len(ids[i]) for i in part),
                    }
                )
    result: dict = {"model": kb.settings.model, "batches": len(rows)}
    for unit in ("chars", "read_chars", "tokens", "texts"):
        rates = {kind: [r[unit] / r["seconds"] for r in rows if r["kind"] == kind] for kind in ("docs", "code")}
        overall = {kind: sum(r[unit] for r in rows if r["kind"] == kind) / sum(r["seconds"] for r in rows
                   if r["kind"] == kind) for kind in ("docs", "code")}  # fmt: skip
        every = [rate for values in rates.values() for rate in values]
        result[unit] = {
            "docs_rate": round(overall["docs"], 1),
            "code_rate": round(overall["code"], 1),
            "code_over_docs": round(overall["code"] / overall["docs"], 3),
            "batch_rate_cv": round(statistics.pstdev(every) / statistics.fmean(every), 3),
        }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
