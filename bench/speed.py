"""Speed and memory of knowledge on this machine: embedding throughput, cold CLI query, warm query, peak memory.

    python bench/speed.py --docs 100 --runs 3 > bench/results/speed.json

Throughput embeds the first N SciFact documents (title + text, realistic 200-384 token lengths) with the cache
off. Cold query runs `knowledge search` in a fresh process against an index of this repository's docs. Every figure
is the median of --runs runs.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load, mteb_text

from knowledge.config import load_settings
from knowledge.embedding import load_embedder
from knowledge.kb import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent
QUERIES = [
    "how are the model weights verified",
    "crash safety of the index",
    "which settings win",
    "token budget for agents",
    "what does status show",
]
CONFIGS = [
    ("all-mpnet-base-v2", "fp32"),
    ("all-mpnet-base-v2", "int8"),
    ("all-MiniLM-L6-v2", "fp32"),
    ("all-MiniLM-L6-v2", "int8"),
]
MAXRSS = """
import runpy, sys
sys.argv = ["knowledge", *sys.argv[1:]]
try:
    runpy.run_module("knowledge", run_name="__main__")
finally:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork+exec from the (large) benchmark process.
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
    print(int(hwm.split()[1]), file=sys.stderr)
"""


def throughput(model: str, variant: str, texts: list[str], runs: int, home: Path) -> dict:
    embedder = load_embedder(model, home, variant)
    tokens = sum(len(ids) for ids in embedder.token_ids(texts))
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed_documents(texts)
        seconds.append(time.perf_counter() - started)
    median = statistics.median(seconds)
    return {
        "chunks_per_s": round(len(texts) / median, 1),
        "tokens_per_s": round(tokens / median),
        "mean_tokens": round(tokens / len(texts)),
    }


def cli(args: list[str], root: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", MAXRSS, "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    elapsed = time.perf_counter() - started
    return elapsed, int(result.stderr.strip().splitlines()[-1]), result.stdout


def query_speed(model: str, variant: str, runs: int, home: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "docs", root / "docs")
        shutil.copy(REPO / "README.md", root / "README.md")
        flags = ["--model", model, "--variant", variant]
        _, index_rss, _ = cli([*flags, "reindex-all", "-q"], root)
        cold = [cli([*flags, "search", QUERIES[n % len(QUERIES)], "--json"], root) for n in range(runs)]
        settings, _ = load_settings(root, {"model": model, "model_variant": variant, "home": str(home)})
        kb = KnowledgeBase(root, settings)
        kb.search(QUERIES[0])
        warm = []
        for n in range(max(20, runs)):
            started = time.perf_counter()
            kb.search(QUERIES[n % len(QUERIES)])
            warm.append(time.perf_counter() - started)
    return {
        "cold_cli_query_ms": round(1000 * statistics.median(c[0] for c in cold)),
        "cold_cli_query_peak_rss_mb": round(statistics.median(c[1] for c in cold) / 1024),
        "reindex_peak_rss_mb": round(index_rss / 1024),
        "warm_query_ms": round(1000 * statistics.median(warm), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    settings, _ = load_settings(REPO, {})
    data = load(SHARED / "scifact")
    texts = [mteb_text(*doc) for doc in list(data.corpus.values())[: args.docs]]
    rows = []
    for model, variant in CONFIGS:
        row = {
            "model": model,
            "variant": variant,
            **throughput(model, variant, texts, args.runs, settings.home),
            **query_speed(model, variant, args.runs, settings.home),
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "docs": args.docs,
                "runs": args.runs,
                "bench_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
