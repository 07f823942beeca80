"""The local engine at a million chunks: build, a one-file commit, warm queries, memory and disk.

    python bench/million.py --files 50000 --sections 20 --out bench/results/million-local.json

The repository is bench/seconds.py's generated docs (SciFact text, 20 sections a file) at ten times its 100k size.
Its vectors are clustered random unit vectors seeded into a private embedding cache (no model runs for the
documents; the queries are embedded by the real default model), so the figures are the engine's: `reindex-all` from
a full cache in a fresh process as a user runs it (time, peak RSS), a one-file commit, 100 SciFact queries through
a warm `KnowledgeBase` as `serve`/`daemon`/`mcp` hold it (p50/p95, RSS), and the index's size on disk.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
sys.path.insert(0, str(HERE))

from seconds import big_docs_repo, fresh_home, knowledge, median, one_file_commits, warm_queries  # noqa: E402

SEED_BATCH = 50_000


def seed_cache(repo: Path, home: Path) -> dict[str, float]:
    """seconds.seed_cache, streamed: a million vectors do not fit in memory as float64 at once."""
    import numpy as np

    from knowledge.embedding.cache import EmbeddingCache
    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(repo, {"home": str(home)})
    started = time.monotonic()
    kb.reindex_all(embed=False)
    phase_one = time.monotonic() - started
    pending = [p.content_hash for index in kb.indexes() for p in index.store.pending(10**9)]
    identity = kb.model.identity()
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(500, identity.dims)).astype(np.float32)
    cache = EmbeddingCache(home / "embeddings" / f"{identity.fingerprint}.sqlite", identity.dims)
    for start in range(0, len(pending), SEED_BATCH):
        part = pending[start : start + SEED_BATCH]
        vectors = centers[rng.integers(0, 500, len(part))] + rng.normal(scale=0.6, size=(len(part), identity.dims))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cache.put_many({digest: vectors[i].astype(np.float32) for i, digest in enumerate(part)})
    cache.close()
    shutil.rmtree(repo / ".knowledge")
    return {"chunks": len(pending), "phase_one_seconds": round(phase_one, 1)}


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="knowledge-million-"))
    result: dict[str, object] = {"files": args.files, "sections": args.sections}
    try:
        home = fresh_home(args.home, work / "home")
        started = time.monotonic()
        repo = big_docs_repo(work / "big", args.files, args.sections)
        result["generate_seconds"] = round(time.monotonic() - started, 1)
        result["seed"] = seed_cache(repo, home)
        print(json.dumps(result), file=sys.stderr, flush=True)
        built, seconds, peak_mb = knowledge(HERE, home, repo, "reindex-all", "--quiet", "--json")
        assert built.returncode == 0, built.stderr
        report = json.loads(built.stdout)
        result["build_from_cache"] = {
            "seconds": round(seconds, 1),
            "peak_rss_mb": round(peak_mb),
            "chunks": report["chunks_total"],
            "dense_coverage": report["dense_coverage"],
        }
        result["disk_mb"] = disk_mb(repo / ".knowledge")
        print(json.dumps(result), file=sys.stderr, flush=True)
        seconds = one_file_commits(HERE, repo, home)
        result["one_file_commit"] = {"seconds": [round(s, 2) for s in seconds], "median_seconds": median(seconds)}
        result["warm_query"] = warm_queries(HERE, repo, home)
        result["du"] = subprocess.run(["du", "-sh", str(repo / ".knowledge")], capture_output=True, text=True).stdout
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
