"""A build's peak memory: this checkout and another one (today's main) side by side, alternately, in one run.

    git worktree add /tmp/baseline main
    python bench/build_memory.py --baseline /tmp/baseline --files 5000 --rounds 2 --out bench/results/build-memory.json

The repository is bench/seconds.py's generated docs (SciFact text, 20 sections a file: 5,000 files are 100k chunks)
with their vectors seeded into a private embedding cache (bench/million.py), so a build needs no model and measures
the engine. Each round runs, for each side, `reindex-all --quiet --json` as a user runs it (a fresh process) twice:
with no index yet (`fresh`: the index goes live after its first batch and fills in place) and again over that index
(`beside`: built beside the live one and swapped in). Peak memory is the process's VmHWM; times are shown but are
only comparable within one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
sys.path.insert(0, str(HERE))

from million import seed_cache  # noqa: E402
from seconds import big_docs_repo, fresh_home, knowledge  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout (e.g. a worktree of main)")
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="knowledge-build-memory-"))
    sides = {"main": args.baseline.resolve(), "this": HERE}
    runs: list[dict[str, object]] = []
    try:
        home = fresh_home(args.home, work / "home")
        repo = big_docs_repo(work / "big", args.files, 20)
        seeded = seed_cache(repo, home)
        for number in range(args.rounds):
            order = list(sides.items()) if number % 2 == 0 else list(reversed(sides.items()))
            for side, code in order:
                for mode in ("fresh", "beside"):
                    if mode == "fresh":
                        shutil.rmtree(repo / ".knowledge", ignore_errors=True)
                    built, seconds, peak_mb = knowledge(code, home, repo, "reindex-all", "--quiet", "--json")
                    assert built.returncode == 0, built.stderr[-2000:]
                    report = json.loads(built.stdout)
                    run = {"side": side, "mode": mode, "seconds": round(seconds, 1), "peak_rss_mb": round(peak_mb)}
                    run |= {"chunks": report["chunks_total"], "dense_coverage": report["dense_coverage"]}
                    print(json.dumps(run), file=sys.stderr, flush=True)
                    runs.append(run)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    medians = {
        f"{side} {mode}": {
            key: statistics.median(r[key] for r in runs if r["side"] == side and r["mode"] == mode)  # type: ignore[misc]
            for key in ("peak_rss_mb", "seconds")
        }
        for side in sides
        for mode in ("fresh", "beside")
    }
    result = {"files": args.files, "chunks": seeded["chunks"], "runs": runs, "medians": medians}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
