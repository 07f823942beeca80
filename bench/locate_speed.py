"""How fast a warm process answers a 10 KB issue: `locate` of this tree beside `search` of the same text, on main and
on this tree, over one indexed repository (first stage unless it has vectors), each side in its own process.

    python bench/locate_speed.py /tmp/loc/sympy --base main --runs 15

The issue is the longest of ../shared/bench-data/swe-dev cut or repeated to `--chars`; each process opens the
knowledge base once, keeps it warm (as `serve`, `mcp` and the daemon do), asks once to load what loads lazily, then
`--runs` times; medians and p95 in ms.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
DATA = PROJECT.parent / "shared" / "bench-data" / "swe-dev" / "instances.jsonl"

WORKER = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from knowledge.kb import KnowledgeBase
root, home, runs, text = Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), open(sys.argv[5]).read()
kb = KnowledgeBase.open(root, overrides={"home": home})
kb.keep_warm(wait=True)
asks = {"search": lambda: kb.search(text, kind="all", files_only=True, k=10, threshold=0.0)}
if hasattr(kb, "locate"):
    asks["locate"] = lambda: kb.locate(text, k=10)
out = {}
for name, ask in asks.items():
    ask()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        ask()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    out[name] = [round(statistics.median(times)), round(times[int(0.95 * (len(times) - 1))])]
chunks = sum(index.coverage().chunks for index in kb.indexes())
print(json.dumps({"chunks": chunks, "asks": out}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--base", default="main")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--chars", type=int, default=10_000)
    parser.add_argument("--home", default=str(Path.home() / ".cache" / "knowledge"))
    args = parser.parse_args()
    issues = [json.loads(line)["problem_statement"] for line in DATA.read_text().splitlines() if line.strip()]
    longest = max(issues, key=len)
    text = (longest * (args.chars // len(longest) + 1))[: args.chars]
    with tempfile.TemporaryDirectory() as folder:
        issue = Path(folder) / "issue.txt"
        issue.write_text(text)
        base = Path(folder) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(base), args.base], cwd=PROJECT, check=True,
                       capture_output=True)  # fmt: skip
        try:
            for side, code in (("base", base), ("tree", PROJECT)):
                command = [
                    sys.executable,
                    "-c",
                    WORKER,
                    str(code),
                    str(args.root),
                    args.home,
                    str(args.runs),
                    str(issue),
                ]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                result = json.loads(done.stdout.strip().splitlines()[-1])
                asked = ", ".join(f"{name} p50 {p50} ms p95 {p95} ms" for name, (p50, p95) in result["asks"].items())
                print(f"{side}: {result['chunks']} chunks, a {len(text):,}-character issue: {asked}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=PROJECT, check=False)


if __name__ == "__main__":
    main()
