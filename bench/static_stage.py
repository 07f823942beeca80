"""How soon every chunk has a dense vector of some stage: phase one of `reindex-all` (chunks, lexical index, and the
static first stage's vector for every chunk) on the 15 semble-dev repositories, from an empty vector cache, in fresh
processes. Also the static stage alone (its share of phase one) and the model's throughput for comparison.

    python bench/static_stage.py --model all-mpnet-base-v2 --out bench/results/static-stage.json
    python bench/static_stage.py --source /tmp/main-worktree …      # the same on another checkout (main)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent

PROBE = r"""
import json, sys, time
from pathlib import Path
started = time.monotonic()
from knowledge.kb import KnowledgeBase
kb = KnowledgeBase.open(Path(sys.argv[1]), overrides={"model": sys.argv[2]})
timings = {}
stage = kb.model.static()
real = stage.embed_documents
def timed(texts):
    began = time.monotonic()
    try:
        return real(texts)
    finally:
        timings["static_seconds"] = timings.get("static_seconds", 0.0) + time.monotonic() - began
        timings["static_chunks"] = timings.get("static_chunks", 0) + len(texts)
stage.embed_documents = timed
report = kb.reindex_all(embed=False)
coverage = [index.coverage() for index in kb.indexes()]
print(json.dumps({
    "seconds": round(time.monotonic() - started, 2),
    "chunks": report.chunks_total,
    "with_static": sum(c.static for c in coverage),
    **{k: round(v, 3) if isinstance(v, float) else v for k, v in timings.items()},
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/gateS/tree/semble-dev"))
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--source", type=Path, default=PROJECT, help="the knowledge to run (e.g. a worktree of main)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        (home / "models").symlink_to(args.home / "models")  # the models, no cached vector
        for source in sorted(p for p in args.corpora.iterdir() if p.is_dir()):
            repo = Path(scratch) / source.name
            shutil.copytree(source, repo, symlinks=True, ignore=shutil.ignore_patterns(".knowledge"))
            env = {
                **os.environ,
                "KNOWLEDGE_HOME": str(home),
                "KNOWLEDGE_NO_DAEMON": "1",
                "PYTHONPATH": str(args.source),
            }
            done = subprocess.run(
                [sys.executable, "-c", PROBE, str(repo), args.model], env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            rows[source.name] = json.loads(done.stdout.strip().splitlines()[-1])
            print(source.name, rows[source.name], flush=True)
            shutil.rmtree(repo)
            shutil.rmtree(home / "embeddings", ignore_errors=True)
    chunks = sum(r["chunks"] for r in rows.values())
    static_seconds = sum(r.get("static_seconds", 0.0) for r in rows.values())
    result = {
        "model": args.model,
        "repositories": rows,
        "chunks": chunks,
        "seconds_median": statistics.median(r["seconds"] for r in rows.values()),
        "seconds_max": max(r["seconds"] for r in rows.values()),
        "static_chunks_per_second": round(chunks / static_seconds) if static_seconds else None,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "repositories"}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
