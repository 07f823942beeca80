"""A big repository as users have them: a monorepo assembled from fetched projects (≥ 12, many languages, ~150k+
chunks), indexed and asked by main and this work side by side in one run, each command a new process.

    # the projects: bare git directories (the `fetch` tool puts them under /work/.mirror/OWNER+NAME/repo)
    git worktree add /tmp/baseline main
    python bench/big_repo.py --mirrors /work/.mirror --base /tmp/baseline --work /tmp/big \\
        --out bench/results/big-repo.json

Per side: `reindex-all` (first stage, `KNOWLEDGE_FILL=0`) with its time and peak RSS; the index's bytes over the
indexed source's; cold `search` (`--metadata-only -k 3`) and cold `locate -` p50/p95 (a new process each, no
daemon), warm p50/p95 of both in one process; `daemon start`, its first answer and its RSS after it, then answers
and RSS a minute later (its background work done); the same cold search on a 20k-chunk repository (one of the
projects alone) for the "answer costs what it returns" ratio. Sides take turns query by query, so the machine's load
falls on both alike. Nothing here is ranking: answers are not scored.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTIONS = [
    "parse a duration string with units",
    "retry a request with exponential backoff",
    "compact the write ahead log segments",
    "render a template with liquid tags",
    "resolve the dependency versions of a package",
    "install a wheel file into site-packages",
    "derive command line arguments from a struct",
    "deep clone an object with circular references",
    "rotating file sink for a logger",
    "shell completion script for a command",
    "load a yaml inventory of hosts",
    "schedule an allocation on a client node",
    "fuzzy match score of a pattern",
    "plugin configuration schema validation",
    "write a batch of key value pairs atomically",
    "map properties of one type onto another",
    "quote a word for the shell",
    "autoload classes from the vendor folder",
    "debounce a function call",
    "evaluate a PromQL range query",
]
SETTLE_SECONDS = 60
PROJECTS = [  # fetched with the `fetch` tool; none is in ../shared/do-not-train.txt's held-out lists
    "AutoMapper+AutoMapper", "Kong+kong", "ansible+ansible", "apple+swift-argument-parser", "clap-rs+clap",
    "composer+composer", "gabime+spdlog", "google+leveldb", "hashicorp+nomad", "jekyll+jekyll", "junegunn+fzf",
    "koalaman+shellcheck", "lodash+lodash", "ohmyzsh+ohmyzsh", "prometheus+prometheus", "pypa+pip",
    "python-poetry+poetry",
]  # fmt: skip
ISSUES = [
    "Duration parsing rejects '1h30m' in the query API\n\nparseDuration returns an error for compound durations.",
    "pip install fails with a wheel whose RECORD lists a missing file\n\n```\nTraceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/pip/_internal/operations/install/wheel.py", line 612, in install_wheel\n'
    "    raise InstallationError(msg)\npip._internal.exceptions.InstallationError: RECORD is wrong\n```",
    "leveldb: a corrupted block in a table makes Get crash instead of returning Corruption",
    "jekyll serve does not pick up changes to _config.yml while watching",
    "clap: a required argument in a subcommand group is reported as missing when given by its alias",
]


def side_env(code: Path | None) -> dict[str, str]:
    env = {**os.environ, "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def knowledge(root: Path, code: Path | None, *args: str, stdin: str | None = None, env: dict | None = None):
    """One `python -P -m knowledge` process from a folder of neither checkout (so `-m` finds the side's code)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "knowledge", "-C", str(root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or side_env(code),
        cwd="/",
    )
    return time.monotonic() - started, done


def build_monorepo(mirrors: Path, where: Path, only: str | None = None) -> Path:
    """Every project's tree at its snapshot's HEAD under `where/<name>/`, one commit; blobs a snapshot left out (its
    largest files) are skipped."""
    if (where / ".git").exists():
        return where
    where.mkdir(parents=True)
    for bare in sorted(mirrors / project / "repo" for project in PROJECTS):
        name = bare.parent.name.split("+", 1)[1]
        if only is not None and name != only:
            continue
        listing = subprocess.run(
            ["git", "--git-dir", str(bare), "ls-tree", "-r", "-z", "HEAD"], capture_output=True, check=True
        ).stdout
        entries = [rec.split(b"\t", 1) for rec in listing.split(b"\0") if rec]
        blobs = [
            (meta.split()[2], path) for meta, path in entries if meta.split()[1] == b"blob" and meta[:6] != b"120000"
        ]
        batch = subprocess.run(
            ["git", "--git-dir", str(bare), "cat-file", "--batch"],
            input=b"".join(sha + b"\n" for sha, _ in blobs),
            capture_output=True,
        ).stdout
        position = 0
        for _, path in blobs:
            end = batch.index(b"\n", position)
            header = batch[position:end].split()
            position = end + 1
            if header[-1] == b"missing":
                continue
            size = int(header[2])
            target = where / name / path.decode("utf-8", "replace")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(batch[position : position + size])
            position += size + 1
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=b@b", "-c", "user.name=bench", "commit", "-qm", "mono"],
    ):
        subprocess.run(["git", *args], cwd=where, check=True, capture_output=True)
    return where


def clone(source: Path, target: Path) -> Path:
    if not target.exists():
        subprocess.run(["git", "clone", "-q", "--shared", str(source), str(target)], check=True)
    return target


def peak_rss_mb(before: int) -> float:
    """The largest RSS of the children waited for since `before` (ru_maxrss of children is a running maximum)."""
    return max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def indexed_source_bytes(root: Path) -> int:
    import sqlite3

    total = 0
    for kind in ("docs", "code"):
        with sqlite3.connect(root / ".knowledge" / f"{kind}.sqlite") as db:
            total += db.execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0]
    return total


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "n": len(ordered),
    }


def daemon_pid(root: Path) -> int:
    """The process serving `root`'s daemon (`knowledge -C ROOT daemon run`), found by its command line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"daemon" in argv and b"run" in argv and str(root).encode() in argv:
            return int(entry.name)
    return 0


def rss_of(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def warm(root: Path, code: Path | None) -> dict[str, object]:
    """Warm p50/p95 of search and locate in one process (each question asked once before it is timed)."""
    script = (
        "import json, sys, time, statistics\n"
        "from pathlib import Path\n"
        "from knowledge.kb import KnowledgeBase\n"
        "from knowledge.api.request import LocateRequest, SearchRequest\n"
        f"kb = KnowledgeBase.open(Path({str(root)!r}))\n"
        f"qs, issues = {QUESTIONS!r}, {ISSUES!r}\n"
        "for q in qs[:3]: kb.search(SearchRequest(q, k=3, metadata_only=True))\n"
        "s = []\n"
        "for q in qs:\n"
        "    t = time.monotonic()\n"
        "    kb.search(SearchRequest(q, k=3, metadata_only=True))\n"
        "    s.append(time.monotonic() - t)\n"
        "l = []\n"
        "for i in issues * 2:\n"
        "    t = time.monotonic(); kb.locate(LocateRequest(i)); l.append(time.monotonic() - t)\n"
        "print(json.dumps({'search': s, 'locate': l}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", script], capture_output=True, text=True, env=side_env(code), cwd="/"
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    times = json.loads(done.stdout)
    return {"search": quantiles(times["search"]), "locate": quantiles(times["locate"])}


def daemon(root: Path, code: Path | None) -> dict[str, object]:
    env = {**side_env(code)}
    env.pop("KNOWLEDGE_NO_DAEMON")
    started = time.monotonic()
    _, done = knowledge(root, code, "daemon", "start", env=env)
    start_seconds = time.monotonic() - started
    first, answered = knowledge(root, code, "search", QUESTIONS[0], "--metadata-only", "-k", "3", env=env)
    later = [knowledge(root, code, "search", q, "--metadata-only", "-k", "3", env=env)[0] for q in QUESTIONS[1:6]]
    pid = daemon_pid(root)
    rss = rss_of(pid) if pid else 0.0
    time.sleep(SETTLE_SECONDS)  # what it keeps once its background work (the in-memory lexical copy) is done
    settled = [knowledge(root, code, "search", q, "--metadata-only", "-k", "3", env=env)[0] for q in QUESTIONS[6:11]]
    settled_rss = rss_of(pid) if pid else 0.0
    knowledge(root, code, "daemon", "stop", env=env)
    return {
        "start_s": round(start_seconds, 2),
        "first_answer_s": round(first, 3),
        "later_p50_s": round(statistics.median(later), 3),
        "rss_mb": round(rss, 1),
        "settled_p50_s": round(statistics.median(settled), 3),
        "settled_rss_mb": round(settled_rss, 1),
        "ok": done.returncode == 0 and answered.returncode == 0,
    }


def hook_rounds(work: Path, sides: dict[str, Path | None], rounds: int) -> dict[str, list[float]]:
    """A one-file commit's `reindex-from-changes` (what the hooks run), sides in turns, on the indexes built above:
    each round appends a line to one Python file of pip, commits it, and times the reindex."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for number in range(rounds):
        for name, code in sides.items():
            root = work / f"mono-{name}"
            target = root / "pip" / "src" / "pip" / "_internal" / "utils" / "misc.py"
            with target.open("a", encoding="utf-8") as out:
                out.write(f"\n\ndef bench_round_{number}():\n    return {number}\n")
            committer = ["-c", "user.email=b@b", "-c", "user.name=bench"]
            subprocess.run(["git", *committer, "commit", "-qam", f"round {number}"], cwd=root, check=True)
            seconds, done = knowledge(root, code, "reindex-from-changes", "--quiet")
            assert done.returncode == 0, done.stderr
            times[name].append(round(seconds, 2))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the code to compare with (main)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/big"))
    parser.add_argument("--tree", type=Path, help="a checkout of this work to run (default: the installed one)")
    parser.add_argument("--small", default="prometheus", help="the project asked alone (~20k chunks)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--hook", type=int, default=0, help="only N rounds of a one-file commit's reindex, in turns")
    args = parser.parse_args()
    if args.hook:
        sides_only = {"main": args.base.resolve(), "work": args.tree.resolve() if args.tree else None}
        print(json.dumps(hook_rounds(args.work, sides_only, args.hook)))
        return
    mono = build_monorepo(args.mirrors, args.work / "mono")
    small = build_monorepo(args.mirrors, args.work / "small", only=args.small)
    sides = {"main": args.base.resolve(), "work": args.tree.resolve() if args.tree else None}
    report: dict[str, dict[str, object]] = {name: {} for name in sides}
    for name, code in sides.items():  # the builds one after the other: each has the cores to itself
        for label, source in (("mono", mono), ("small", small)):
            root = clone(source, args.work / f"{label}-{name}")
            if (root / ".knowledge").exists():
                shutil.rmtree(root / ".knowledge")
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            seconds, done = knowledge(root, code, "reindex-all", "--quiet")
            assert done.returncode in (0, 1), done.stderr
            if label == "mono":
                index, source_bytes = folder_bytes(root / ".knowledge"), indexed_source_bytes(root)
                report[name]["reindex_all_s"] = round(seconds, 1)
                report[name]["reindex_peak_rss_mb"] = round(peak_rss_mb(before), 1)
                report[name]["index_mb"] = round(index / 1e6, 1)
                report[name]["source_mb"] = round(source_bytes / 1e6, 1)
                report[name]["index_over_source"] = round(index / max(1, source_bytes), 2)
            print(f"{name} {label}: reindex-all {seconds:.1f}s", file=sys.stderr, flush=True)
    cold: dict[str, dict[str, list[float]]] = {n: {"search": [], "locate": [], "search_small": []} for n in sides}
    for question in QUESTIONS:  # sides in turns
        for name, code in sides.items():
            cold[name]["search"].append(knowledge(args.work / f"mono-{name}", code, "search", question,
                                                  "--metadata-only", "-k", "3")[0])  # fmt: skip
            cold[name]["search_small"].append(knowledge(args.work / f"small-{name}", code, "search", question,
                                                        "--metadata-only", "-k", "3")[0])  # fmt: skip
    for issue in ISSUES:
        for name, code in sides.items():
            cold[name]["locate"].append(knowledge(args.work / f"mono-{name}", code, "locate", "-", stdin=issue)[0])
    for name, code in sides.items():
        report[name]["cold"] = {what: quantiles(times) for what, times in cold[name].items()}
        report[name]["cold_search_over_small"] = round(
            statistics.median(cold[name]["search"]) / statistics.median(cold[name]["search_small"]), 2
        )
        report[name]["warm"] = warm(args.work / f"mono-{name}", code)
        report[name]["daemon"] = daemon(args.work / f"mono-{name}", code)
        print(f"{name}: {json.dumps(report[name])}", file=sys.stderr, flush=True)
    chunks = {}
    for label in ("mono", "small"):
        import sqlite3

        total = 0
        for kind in ("docs", "code"):
            with sqlite3.connect(args.work / f"{label}-work" / ".knowledge" / f"{kind}.sqlite") as db:
                total += db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        chunks[label] = total
    result = {"chunks": chunks, "projects": PROJECTS, **report}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
