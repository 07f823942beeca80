"""Train the static first stage for retrieval: token vectors that make a question's mean land near its code's.

    python training/mine.py                    # the pairs, from the sources training/manifest.json names
    python training/train_static.py            # trains, writes knowledge/embedding/data/code-static.*

Start: the token vectors distilled from all-mpnet-base-v2 without data (model2vec's way: every vocabulary token
through the model alone, PCA to 256, SIF weights), its tokenizer. Training: sentence-transformers' StaticEmbedding
(a mean of token rows, exactly what knowledge computes at run time) under MultipleNegativesRankingLoss (each batch's
other positives are the negatives), one pass over the mined pairs in a seeded order. The table ships as int8 rows
with one scale per row; the run records its recipe, seed, pair counts and held-out score beside it.
Needs the training extra (`pip install -e '.[train]'`: torch, sentence-transformers); knowledge itself never does.
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
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(HERE))

from knowledge.embedding.static import SHIPPED, save_table  # noqa: E402

PAIRS = Path.home() / ".cache" / "knowledge" / "training" / "pairs.jsonl"
TEACHER = "all-mpnet-base-v2"
MAX_TOKENS = 512  # knowledge reads a chunk's first 512 tokens; training sees the same
HELD_OUT = 1000  # pairs kept out of training: the run's own check (questions find their code among these)


def load_pairs(path: Path, seed: int) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(seed).shuffle(pairs)
    return pairs


def initial_table(home: Path | None) -> tuple[np.ndarray, Path]:
    """The distilled start and the tokenizer it goes with, from the installed teacher (built if not yet there)."""
    from distill import distilled_table

    return distilled_table(TEACHER, home)


def batched(pairs: list[dict[str, str]], size: int, epochs: float, seed: int, by: str) -> list[list[dict[str, str]]]:
    """The training order: `epochs` passes in batches of `size`, reshuffled each pass; with `by` "source" every batch
    holds one source's pairs (its negatives share the source's vocabulary: harder than a random batch's)."""
    shuffle = random.Random(seed)
    out: list[list[dict[str, str]]] = []
    for _ in range(max(1, round(epochs))):
        groups: dict[str, list[dict[str, str]]] = {}
        for pair in pairs:
            groups.setdefault(pair["source"] if by == "source" else "", []).append(pair)
        one_pass = []
        for group in groups.values():
            shuffle.shuffle(group)
            one_pass += [group[n : n + size] for n in range(0, len(group) - size + 1, size)]
        shuffle.shuffle(one_pass)
        out += one_pass
    return out


def held_out_mrr(model: object, pairs: list[dict[str, str]]) -> float:
    queries = model.encode([p["query"] for p in pairs], normalize_embeddings=True)  # type: ignore[attr-defined]
    codes = model.encode([p["positive"] for p in pairs], normalize_embeddings=True)  # type: ignore[attr-defined]
    scores = queries @ codes.T
    ranks = (scores > scores.diagonal()[:, None]).sum(axis=1) + 1
    return float((1.0 / ranks).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--out", type=Path, default=SHIPPED)
    parser.add_argument("--home", type=Path, default=None, help="where the teacher is installed (the user's cache)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--scale", type=float, default=20.0, help="MultipleNegativesRankingLoss' similarity scale")
    parser.add_argument(
        "--batching", choices=["random", "source"], default="random", help="source: each batch from one source"
    )
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    torch.manual_seed(args.seed)
    started = time.monotonic()
    pairs = load_pairs(args.pairs, args.seed)
    held, train = pairs[:HELD_OUT], pairs[HELD_OUT:]
    table, tokenizer_path = initial_table(args.home)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(MAX_TOKENS)
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=table.copy())], device="cpu")
    before = held_out_mrr(model, held)
    print(f"held-out MRR before training: {before:.4f} ({len(train)} training pairs)", flush=True)

    loss = MultipleNegativesRankingLoss(model, scale=args.scale)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    batches = batched(train, args.batch, args.epochs, args.seed, args.batching)
    steps = len(batches)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / max(1, steps))
    model.train()
    for step in range(steps):
        batch = batches[step]
        features = [
            model.preprocess([pair["query"] for pair in batch]),
            model.preprocess([pair["positive"] for pair in batch]),
        ]
        value = loss(features, torch.empty(0))
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        schedule.step()
        if step % 20 == 0 or step == steps - 1:
            print(f"step {step + 1}/{steps}: loss {value.item():.4f} ({time.monotonic() - started:.0f} s)", flush=True)
    model.eval()
    after = held_out_mrr(model, held)
    print(f"held-out MRR after training: {after:.4f}", flush=True)

    trained = model[0].embedding.weight.detach().cpu().numpy().astype(np.float32)
    counts: dict[str, int] = {}
    for pair in train:
        counts[pair["source"]] = counts.get(pair["source"], 0) + 1
    recipe = {
        "start": f"{TEACHER} token vectors distilled without data (training/distill.py)",
        "loss": f"MultipleNegativesRankingLoss, scale {args.scale}, in-batch negatives",
        "optimizer": f"Adam, lr {args.lr}, linear decay to 0",
        "batch": args.batch,
        "batching": args.batching,
        "epochs": args.epochs,
        "seed": args.seed,
        "max_tokens": MAX_TOKENS,
        "pairs": counts,
        "pairs_sha256": hashlib.sha256(args.pairs.read_bytes()).hexdigest(),
        "held_out_mrr": {"before": round(before, 4), "after": round(after, 4), "pairs": len(held)},
        "command": "python training/mine.py && python training/train_static.py",
    }
    save_table(args.out, trained, tokenizer_path, recipe)
    print(f"wrote {args.out} in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
