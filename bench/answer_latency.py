"""A warm answer's time, main and a tree side by side: the gate's semble-dev questions against indexes it built.

    python bench/answer_latency.py --base <worktree of main> --corpora /tmp/gate-m --model all-MiniLM-L6-v2 \
        --home /tmp/gate-m-home --out bench/results/answer-latency.json

Each side runs in its own process from its own source (`--base` and this tree), over the indexes the gate left under
CORPORA/base and CORPORA/tree (the same corpora, each side's own build), the sides alternating repository by
repository so that both see the same machine. Every question is asked once to warm up, then `--runs` times
(`KnowledgeBase.search`, the defaults as a user gets them: text within the budget); the median per question, then
the median and 95th percentile over questions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from knowledge.kb import KnowledgeBase
root, model, home, runs = Path(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
queries = json.loads(sys.argv[6])
kb = KnowledgeBase.open(root, overrides={"model": model, "home": home, "fill": False})
kb.keep_warm(wait=True)
times = []
for q in queries:
    kb.search(q, kind="code")
    one = []
    for _ in range(runs):
        started = time.perf_counter()
        kb.search(q, kind="code")
        one.append(time.perf_counter() - started)
    times.append(statistics.median(one) * 1000)
print(json.dumps(times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="a worktree of the revision to compare with")
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/gate-m"))
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--home", type=Path, default=Path("/tmp/gate-m-home"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spec = json.loads((args.corpora / "tree.spec.json").read_text())["benches"]["semble-dev"]
    sides = {"base": args.base.resolve(), "tree": HERE.parent}
    times: dict[str, list[float]] = {"base": [], "tree": []}
    for repo, (_, queries) in spec.items():
        asked = json.dumps([q["query"] for q in queries])
        for side, source in sides.items():
            root = args.corpora / side / "semble-dev" / repo
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PROBE,
                    str(source),
                    str(root),
                    args.model,
                    str(args.home),
                    str(args.runs),
                    asked,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            times[side].extend(json.loads(done.stdout.strip().splitlines()[-1]))
        base, tree = statistics.median(times["base"]), statistics.median(times["tree"])
        print(f"  {repo}: base {base:.1f} ms, tree {tree:.1f} ms", file=sys.stderr, flush=True)
    result = {
        side: {
            "questions": len(values),
            "p50_ms": round(statistics.median(values), 1),
            "p95_ms": round(statistics.quantiles(values, n=20)[-1], 1),
        }
        for side, values in times.items()
    }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, **result}, indent=1) + "\n")


if __name__ == "__main__":
    main()
