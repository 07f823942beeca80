"""semble-dev: the public code-search benchmark's development split, scored exactly as its README says.

    python bench/semble_dev.py --stage lexical          # searchable-first stage: no vector yet
    python bench/semble_dev.py --stage complete         # every chunk embedded (default model)
    python bench/semble_dev.py --stage ripgrep          # the file-level ripgrep baseline (checks the scorer)

Reads `../shared/bench-data/semble-dev/` in place. Each repository's `benchmark_root` is taken at the pinned revision
(or `revision_used` when a snapshot lacks it) from a local copy of the public repository (`--mirror`, bare git
directories named `owner+name/repo`, as `fetch` leaves them) into `--work`, outside this project's tree; nothing of
it is committed here. Each tree becomes a git repository and is indexed with the product's defaults; every query runs
through `KnowledgeBase.search` (`--kind code` by default, as an agent asks a code question; no similarity cut, budget
off) and the top 10 chunks are scored.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.kb import KnowledgeBase

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-data" / "semble-dev"
PUBLISHED = {  # nDCG@10 from the README: semble, CodeRankEmbed hybrid, ripgrep
    "aiohttp": (0.852, 0.851, 0.135),
    "flask": (0.913, 0.909, 0.212),
    "httpx": (0.860, 0.893, 0.262),
    "model2vec": (0.693, 0.730, 0.206),
    "requests": (0.965, 0.992, 0.232),
    "starlette": (0.945, 0.954, 0.187),
    "express": (0.964, 0.930, 0.106),
    "redux": (0.914, 0.914, 0.200),
    "trpc": (0.811, 0.880, 0.206),
    "chi": (0.867, 0.834, 0.139),
    "gin": (0.860, 0.839, 0.181),
    "axum": (0.801, 0.780, 0.082),
    "gson": (0.917, 0.907, 0.141),
    "libuv": (0.615, 0.720, 0.000),
    "fmtlib": (0.935, 0.895, 0.121),
}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def checkout(repo: dict[str, str], mirror: Path, work: Path) -> Path:
    """The benchmark root at the pinned revision, as a fresh git repository (paths relative to the repo root)."""
    dest = work / repo["name"]
    if (dest / ".git").exists():
        return dest
    owner, name = repo["url"].removesuffix(".git").split("/")[-2:]
    gitdir = mirror / f"{owner}+{name}" / "repo"
    revision = repo["revision"]
    try:
        git("--git-dir", str(gitdir), "cat-file", "-e", f"{revision}^{{commit}}")
    except subprocess.CalledProcessError:
        revision = repo["revision_used"]
    dest.mkdir(parents=True)
    root = repo.get("benchmark_root", "")
    archive = subprocess.run(
        ["git", "--git-dir", str(gitdir), "archive", revision, *([root] if root else [])],
        check=True,
        capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", revision, cwd=dest)
    return dest


def empty_cache_home(work: Path) -> Path:
    """A KNOWLEDGE_HOME with the user's built models and no vector cache."""
    from knowledge.fs import user_cache_dir

    home = work / ".lexical-home"
    if not home.exists():
        home.mkdir(parents=True)
        (home / "models").symlink_to(user_cache_dir() / "models")
    shutil.rmtree(home / "embeddings", ignore_errors=True)
    return home


def target_rank(results: list[tuple[str, int, int]], target: str | dict) -> int | None:
    path = target if isinstance(target, str) else target["path"]
    span = None if isinstance(target, str) else (target["start_line"], target["end_line"])
    for rank, (found, start, end) in enumerate(results[:10], start=1):
        if found != path and not found.endswith("/" + path):
            continue
        if span is None or (start <= span[1] and end >= span[0]):
            return rank
    return None


def ndcg(results: list[tuple[str, int, int]], targets: list[str | dict]) -> float:
    ranks = {target_rank(results, t) for t in targets} - {None}
    dcg = sum(1 / math.log2(rank + 1) for rank in ranks if rank is not None)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(10, len(targets)) + 1))
    return dcg / ideal if ideal else 0.0


def ripgrep(root: Path, query: str) -> list[tuple[str, int, int]]:
    """Files holding the query as a fixed string (case-insensitive), most matches first: a file-level baseline."""
    out = subprocess.run(
        ["rg", "--count-matches", "--fixed-strings", "--ignore-case", "--no-messages", "--", query, "."],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout
    counts = []
    for line in out.splitlines():
        path, _, count = line.rpartition(":")
        counts.append((-int(count), path.removeprefix("./")))
    return [(path, 1, 10**9) for _, path in sorted(counts)[:10]]


def run(
    stage: str,
    repos: list[dict[str, str]],
    mirror: Path,
    work: Path,
    rules: bool = True,
    kind: str = "code",
    defaults: bool = False,
) -> dict[str, object]:
    per_repo: dict[str, dict[str, object]] = {}
    by_category: dict[str, list[float]] = defaultdict(list)
    for repo in repos:
        root = checkout(repo, mirror, work)
        queries = json.loads((SHARED / "annotations" / f"{repo['name']}.json").read_text())
        info: dict[str, object] = {}
        if stage != "ripgrep":
            if stage == "lexical" or not (root / ".knowledge").exists():
                shutil.rmtree(root / ".knowledge", ignore_errors=True)
            overrides: dict[str, object] = {"rank_rules": rules}
            if stage == "lexical":  # an empty vector cache: cached vectors would fill the index in phase one
                overrides["home"] = str(empty_cache_home(work))
            kb = KnowledgeBase.open(root, overrides)
            started = time.monotonic()
            report = kb.reindex_all(embed=False) if stage == "lexical" else kb.reindex_changes()
            if stage == "complete":
                kb.embed_pending()
            info = {
                "chunks": kb.status().chunks,
                "index_seconds": round(time.monotonic() - started, 1),
                "dense_coverage": kb.status().dense_coverage,
            }
            del report
        scores, times = [], []
        for item in queries:
            started = time.perf_counter()
            if stage == "ripgrep":
                results = ripgrep(root, item["query"])
            else:
                if defaults:  # what a user sees: k, thresholds and budget as configured by default
                    answer = kb.search(item["query"], kind=kind)
                else:
                    answer = kb.search(
                        item["query"], k=10, threshold=-1.0, budget=50_000, metadata_only=True, kind=kind
                    )
                results = [(hit.path, hit.line_start, hit.line_end) for hit in answer.results]
            times.append((time.perf_counter() - started) * 1000)
            score = ndcg(results, [*item["relevant"], *item.get("secondary", [])])
            scores.append(score)
            by_category[item["category"]].append(score)
        published = PUBLISHED[repo["name"]]
        per_repo[repo["name"]] = {
            "ndcg@10": round(statistics.mean(scores), 3),
            "queries": len(scores),
            "query_ms_p50": round(statistics.median(times), 1),
            "published_semble": published[0],
            "published_coderankembed_hybrid": published[1],
            "published_ripgrep": published[2],
            **info,
        }
        print(json.dumps({repo["name"]: per_repo[repo["name"]]}), file=sys.stderr, flush=True)
    return {
        "stage": stage,
        "rules": rules,
        "kind": kind,
        "settings": "defaults" if defaults else "threshold off, budget off, metadata only",
        "mean_ndcg@10": round(statistics.mean(r["ndcg@10"] for r in per_repo.values()), 3),
        "published_mean": {"semble": 0.861, "coderankembed_hybrid": 0.868, "ripgrep": 0.161},
        "by_category": {c: round(statistics.mean(v), 3) for c, v in sorted(by_category.items())},
        "repos": per_repo,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=["lexical", "complete", "ripgrep"], default="complete")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/semble-dev"))
    parser.add_argument("--repos", nargs="*", help="only these repositories")
    parser.add_argument("--kind", choices=["code", "all"], default="code", help="what is searched (targets are code)")
    parser.add_argument("--no-rules", action="store_true", help="fusion only: the code ranking rules off")
    parser.add_argument(
        "--defaults", action="store_true", help="search with the product's defaults (threshold, budget, content)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    repos = json.loads((SHARED / "repos.json").read_text())
    if args.repos:
        repos = [r for r in repos if r["name"] in args.repos]
    result = run(
        args.stage, repos, args.mirror, args.work, rules=not args.no_rules, kind=args.kind, defaults=args.defaults
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
