"""The secret detectors' cost on hostile text: linear in its size, whatever the text.

    python bench/secret_detectors.py [--sizes 0.1 1 2] [--cli] [--out bench/results/secret-detectors.json]

For each size (MB) and each hostile shape (a run that made a backtracking detector retry from every word boundary,
and texts that are nothing but secrets), the median of three `SecretRedactor().redact` times in this process. With
`--cli`, the whole path users run too: a repository holding one such doc, `knowledge reindex-all` (first stage,
KNOWLEDGE_FILL=0) and `knowledge show` of its first line, each a fresh process, wall time. Run it with
`PYTHONPATH=<worktree of main>` to measure main's detectors the same way (the CLI then runs main's too: the child
imports the package first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = {
    "jwt-run": "eyJ-",
    "key-run": "token:",
    "url-run": "https://a:",
    "bearer-run": "Authorization: Bearer ",
    "assignments": "password = 'aB3$xY9!zQ'\n",
    "commands": "PGPASSWORD=a1b2 psql\n",
}


def text_of(shape: str, megabytes: float) -> str:
    unit = SHAPES[shape]
    return unit * int(megabytes * 1_000_000 * 0.95 // len(unit))  # under max_file_bytes (2,000,000)


def redact_seconds(text: str) -> float:
    from knowledge.secrets import SecretRedactor

    redactor = SecretRedactor()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        redactor.redact(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cli_seconds(text: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        (root / "docs").mkdir()
        (root / "docs" / "hostile.md").write_text("---\ndescription: hostile\n---\n" + text, encoding="utf-8")
        env = {**os.environ, "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1"}
        timed = []
        for args in (["reindex-all", "--quiet"], ["show", "docs/hostile.md:4-4"]):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "knowledge", "-C", str(root), *args], env=env, capture_output=True, text=True
            )
            timed.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(args)}: {done.stderr.strip()}")
        return timed[0], timed[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.1, 1.0, 2.0])
    parser.add_argument("--cli", action="store_true", help="also time reindex-all and show through the CLI")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    for shape in SHAPES:
        for size in args.sizes:
            text = text_of(shape, size)
            row: dict[str, object] = {"shape": shape, "mb": size, "redact_s": round(redact_seconds(text), 3)}
            if args.cli:
                index_s, show_s = cli_seconds(text)
                row |= {"reindex_all_s": round(index_s, 2), "show_s": round(show_s, 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
