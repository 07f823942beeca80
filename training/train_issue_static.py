"""Train the issue side of the static stage: token rows for the question `knowledge locate` asks (an issue's title and
prose), so that its mean lands near the code a fix changes, while the code side stays the shipped table (every index
keeps its vectors: only the question is embedded otherwise).

    python training/commit_pairs.py                 # (commit message, the code it changed) pairs
    python training/train_issue_static.py           # writes knowledge/embedding/data/issue-static.*

Start: the shipped code table for both sides. Training: the question side only, a sum of token rows (what knowledge
computes, then normalises) under MultipleNegativesRankingLoss against the frozen code side (each batch's other
positives are the negatives). Only the rows that moved past the int8 step ship (ids, int8 rows, a scale each), with
the code table's fingerprint they were trained against: the issue side is used only beside that table.
Needs the training extra (torch); knowledge itself never does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from knowledge.embedding.static import MAX_STATIC_TOKENS, SHIPPED, load_static, save_issue_rows  # noqa: E402

PAIRS = Path.home() / ".cache" / "knowledge" / "training" / "commit-pairs.jsonl"
HELD_OUT = 500  # pairs kept out of training, chosen by a hash of the commit: the run's own check


def held(pair: dict[str, str]) -> bool:
    return int(hashlib.sha256(pair["commit"].encode()).hexdigest()[:8], 16) % 1000 < 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--out", type=Path, default=SHIPPED)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scale", type=float, default=20.0, help="MultipleNegativesRankingLoss' similarity scale")
    args = parser.parse_args()

    import torch

    torch.manual_seed(args.seed)
    started = time.monotonic()
    code = load_static(SHIPPED)
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(args.seed).shuffle(pairs)
    check, train = [p for p in pairs if held(p)][:HELD_OUT], [p for p in pairs if not held(p)]
    tokenizer = code._tokenizer

    def ids(texts: list[str]) -> list[list[int]]:
        return [e.ids[:MAX_STATIC_TOKENS] for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def bag(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        flat = torch.tensor([t for row in rows for t in row], dtype=torch.long)
        offsets = torch.tensor([0, *np.cumsum([len(r) for r in rows])[:-1]], dtype=torch.long)
        return flat, offsets

    start = torch.tensor(code.table)
    question = torch.nn.EmbeddingBag.from_pretrained(start.clone(), freeze=False, mode="sum")
    answer = torch.nn.EmbeddingBag.from_pretrained(start.clone(), freeze=True, mode="sum")

    def mrr(side: torch.nn.EmbeddingBag) -> float:
        with torch.no_grad():
            q = torch.nn.functional.normalize(side(*bag(ids([p["query"] for p in check]))), dim=1)
            a = torch.nn.functional.normalize(answer(*bag(ids([p["positive"] for p in check]))), dim=1)
            scores = q @ a.T
            ranks = (scores > scores.diagonal()[:, None]).sum(dim=1) + 1
            return float((1.0 / ranks).mean())

    before = mrr(question)
    print(f"held-out MRR before: {before:.4f} ({len(train)} training pairs, {len(check)} held out)", flush=True)
    optimizer = torch.optim.Adam(question.parameters(), lr=args.lr)
    order = random.Random(args.seed)
    batches = []
    for _ in range(args.epochs):
        order.shuffle(train)
        batches += [train[n : n + args.batch] for n in range(0, len(train) - args.batch + 1, args.batch)]
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / max(1, len(batches)))
    for step, batch in enumerate(batches):
        q = torch.nn.functional.normalize(question(*bag(ids([p["query"] for p in batch]))), dim=1)
        with torch.no_grad():
            a = torch.nn.functional.normalize(answer(*bag(ids([p["positive"] for p in batch]))), dim=1)
        loss = torch.nn.functional.cross_entropy(args.scale * q @ a.T, torch.arange(len(batch)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 20 == 0 or step == len(batches) - 1:
            print(f"step {step + 1}/{len(batches)}: loss {loss.item():.4f} ({time.monotonic() - started:.0f} s)")
    after = mrr(question)
    print(f"held-out MRR after: {after:.4f}", flush=True)

    trained = question.weight.detach().numpy().astype(np.float32)
    counts: dict[str, int] = {}
    for pair in train:
        counts[pair["source"]] = counts.get(pair["source"], 0) + 1
    recipe = {
        "start": "the shipped code table (knowledge/embedding/data/code-static.*), both sides",
        "trained": "the question side only; the code side frozen",
        "loss": f"MultipleNegativesRankingLoss, scale {args.scale}, in-batch negatives",
        "optimizer": f"Adam, lr {args.lr}, linear decay to 0",
        "batch": args.batch,
        "epochs": args.epochs,
        "seed": args.seed,
        "pairs": counts,
        "pairs_sha256": hashlib.sha256(args.pairs.read_bytes()).hexdigest(),
        "held_out_mrr": {"before": round(before, 4), "after": round(after, 4), "pairs": len(check)},
        "command": "python training/commit_pairs.py && python training/train_issue_static.py",
    }
    moved = save_issue_rows(args.out, trained, code, recipe)
    print(f"wrote {args.out} ({moved} rows moved) in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
