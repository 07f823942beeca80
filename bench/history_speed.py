"""What keeping the history costs (knowledge/history.py): the first read of 10,000 commits, a hook's step per commit,
and a rewrite (a branch switch back 200 commits), on a clone of a large repository's mirror.

    python bench/history_speed.py                          # sympy/sympy from /work/.mirror, 30 steps
    python bench/history_speed.py --mirror /path/to/repo.git --steps 50

Each step moves the clone's branch one commit forward along the first-parent line (what a commit or a pull's
post-merge hook sees) and runs `history.sync`; medians and p95 are printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge import history
from knowledge.secrets import SecretRedactor


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror/sympy+sympy/repo"))
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "clone"
        git(Path(folder), "clone", "-q", "--shared", "--no-checkout", str(args.mirror), str(root))
        line = git(root, "rev-list", "--first-parent", f"--max-count={args.steps + 201}", "HEAD").split()[::-1]
        (root / ".knowledge").mkdir()
        git(root, "update-ref", "HEAD", line[0])
        started = time.perf_counter()
        first = history.sync(root, SecretRedactor())
        first_s = time.perf_counter() - started
        steps = []
        for commit in line[1 : args.steps + 1]:
            git(root, "update-ref", "HEAD", commit)
            started = time.perf_counter()
            history.sync(root, SecretRedactor())
            steps.append((time.perf_counter() - started) * 1000)
        git(root, "update-ref", "HEAD", line[-1])
        history.sync(root, SecretRedactor())
        git(root, "update-ref", "HEAD", line[0])  # a switch back 200 commits: the history drops what it no longer sees
        started = time.perf_counter()
        back = history.sync(root, SecretRedactor())
        back_ms = (time.perf_counter() - started) * 1000
    steps.sort()
    print(f"first read: {first.commits if first else 0} commits in {first_s:.2f} s")
    p95 = steps[int(0.95 * (len(steps) - 1))]
    print(f"a commit's step: median {statistics.median(steps):.1f} ms, p95 {p95:.1f} ms")
    print(f"a switch back {len(line) - 1} commits: {back_ms:.0f} ms ({back.removed if back else 0} dropped)")


if __name__ == "__main__":
    main()
