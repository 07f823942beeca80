"""What a bounded head of each code chunk would save: the same repository's chunks embedded whole and as heads.

    python bench/embed_head.py --repo . --model all-mpnet-base-v2 --variant int8 --head 192 --runs 2 --every 2

Chunks each repository with the product's chunker, cuts each code chunk's embedded text to its head (the header
line, then the chunk's leading lines while they fit `--head` tokens with it: the variant the ranking gate measured,
docs/benchmarks.md §0a), counts the model's tokens of both forms and embeds both with the product's embedder (no
cache), alternating the two run by run so that a busy machine slows both alike; reports chunks/s and the ratio of
the medians. Writes JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.config import load_settings
from knowledge.embedding import load_embedder
from knowledge.git import head_commit
from knowledge.tree_chunks import tree_chunks


def head(embed_text: str, tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The header line, then the leading lines that fit `tokens` with it (the first line always)."""
    header, _, content = embed_text.partition("\n")
    body = content.split("\n")
    limit = tokens - count_tokens(header + "\n") - 2  # 2: the model's special tokens
    used = 0
    for end, line in enumerate(body):
        used += count_tokens(line) + 1
        if used > limit and end > 0:
            return header + "\n" + "\n".join(body[:end])
    return embed_text


def embed_texts(root: Path, embedder: Any, head_tokens: int | None) -> list[str]:
    chunks = tree_chunks(root, load_settings(root)[0], lambda: embedder, head_commit(root))
    return [
        head(chunk.embed_text, head_tokens, embedder.count_tokens)
        if head_tokens and kind == "code"
        else chunk.embed_text
        for kind in ("docs", "code")
        for chunk in chunks[kind].values()
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, nargs="+", default=[Path(".")])
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--variant", default="int8")
    parser.add_argument("--head", type=int, default=192, help="tokens of a code chunk's head")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--every", type=int, default=1, help="embed every Nth chunk only (the same ones both ways)")
    args = parser.parse_args()
    embedder = load_embedder(args.model, load_settings(args.repo[0])[0].home, args.variant)
    report = {"model": args.model, "variant": args.variant, "head_tokens": args.head, "repos": {}}
    for root in args.repo:
        forms = {
            name: embed_texts(root, embedder, cap)[:: args.every]
            for name, cap in (("whole", None), ("head", args.head))
        }
        seconds: dict[str, list[float]] = {name: [] for name in forms}
        for _ in range(args.runs):
            for name, texts in forms.items():
                started = time.perf_counter()
                embedder.embed_documents(texts)
                seconds[name].append(time.perf_counter() - started)
        row = {}
        for name, texts in forms.items():
            median = statistics.median(seconds[name])
            row[name] = {
                "chunks": len(texts),
                "tokens": sum(len(ids) for ids in embedder.token_ids(texts)),
                "seconds": [round(s, 1) for s in seconds[name]],
                "chunks_per_s": round(len(texts) / median, 2),
            }
        row["speedup"] = round(row["head"]["chunks_per_s"] / row["whole"]["chunks_per_s"], 3)
        row["minutes_for_10k_chunks"] = {name: round(10_000 / row[name]["chunks_per_s"] / 60, 1) for name in forms}
        report["repos"][str(root.resolve().name)] = row
        print(json.dumps(row), file=sys.stderr)
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
