"""What a snapshot costs: `knowledge export` of an indexed repository, its size, and `knowledge import` into a fresh
clone of it (the import itself, then the catch-up, which finds nothing to do at the same commit), medians of N runs.

    python bench/snapshot_speed.py                      # this repository (index it first: knowledge reindex-all)
    python bench/snapshot_speed.py /path/to/indexed/repo --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def knowledge(root: Path, *args: str) -> str:
    # no background fill after an import of an index with chunks still waiting (a first-stage one): the clone is
    # removed right after, and the fill is not what is measured
    env = {**os.environ, "KNOWLEDGE_FILL": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "knowledge", "-C", str(root), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, nargs="?", default=PROJECT)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    status = knowledge(args.root, "status")
    indexed = next((line for line in status.splitlines() if line.startswith("indexed:")), "indexed: ?")
    chunks = indexed.split(":", 1)[1].split("(")[0].strip()  # "5000 files, 100000 chunks"
    exports, imports, size = [], [], 0
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            snapshot = Path(folder) / f"index-{run}.snapshot"
            started = time.perf_counter()
            knowledge(args.root, "export", str(snapshot))
            exports.append(time.perf_counter() - started)
            size = snapshot.stat().st_size
            clone = Path(folder) / f"clone-{run}"
            subprocess.run(["git", "clone", "-q", "--shared", str(args.root), str(clone)], check=True)
            started = time.perf_counter()
            knowledge(clone, "import", str(snapshot))
            imports.append(time.perf_counter() - started)
    print(f"{args.root}: {chunks} indexed; snapshot {size / 1e6:.1f} MB")
    print(
        f"export median {statistics.median(exports):.2f} s, import median {statistics.median(imports):.2f} s "
        f"(each a fresh `python -m knowledge` process, {args.runs} runs)"
    )


if __name__ == "__main__":
    main()
