"""Answer in seconds: this checkout and another one (today's main) measured side by side in one run.

    git worktree add /tmp/baseline main      # the code to compare with
    python bench/seconds.py --baseline /tmp/baseline --repo /tmp/Django-5.1.4 > bench/results/seconds.json

Every command runs as a user runs it (`python -m knowledge ...` in a fresh process, each side's default model: main
all-mpnet-base-v2 fp32, this round int8), with the code of each checkout put first on PYTHONPATH (and `python -P`, so
a repository that holds a `knowledge/` folder, like this one, does not shadow it). Scenarios:

- first answer: copy `--repo` into a new git repository, start `reindex-all` with an empty embedding cache, and try
  `knowledge search` every half second until one answers (or `--first-answer-limit` seconds pass);
- embedding throughput: `reindex-all` of this repository (code and docs) from an empty vector cache, chunks/s;
- hook cost: a commit that touches no indexed file, then `reindex-from-changes` as the hook runs it: seconds and the
  process's peak memory (VmHWM), median of 5;
- a one-file commit in an index of 100k chunks (5,000 docs of 20 SciFact-text sections; vectors seeded into the
  embedding cache, clustered random unit vectors, so building needs no model): `reindex-from-changes`, median of 3;
- warm queries at 100k chunks in one process (100 SciFact queries, real query embeddings): p50 / p95, and RSS;
- CLI queries on this repository: cold (no daemon) for both, and through `knowledge daemon` for this checkout.
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from beir_data import SHARED, load

HERE = Path(__file__).resolve().parent.parent
PROBE = """
import sys
sys.argv = ["knowledge", *sys.argv[1:]]
from knowledge.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM"))
print("PEAK_KB", peak, file=sys.stderr)
"""


def env_for(code: Path, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(code),
        "KNOWLEDGE_HOME": str(home),
        "KNOWLEDGE_NO_DAEMON": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }


def wait_flag(code: Path) -> list[str]:
    """`--wait` where this side's `reindex-all` embeds in the background by default (this round on), else nothing."""
    index_module = code / "knowledge" / "cli" / "index.py"
    return ["--wait"] if index_module.is_file() and "--wait" in index_module.read_text() else []


def knowledge(code: Path, home: Path, cwd: Path, *args: str, timeout: float = 3600, daemon: bool = False):
    env = env_for(code, home)
    if args and args[0] == "reindex-all":
        args = (args[0], *wait_flag(code), *args[1:])
    if daemon:
        env.pop("KNOWLEDGE_NO_DAEMON")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-P", "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    seconds = time.monotonic() - started
    peak = next((int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("PEAK_KB")), 0)
    return result, seconds, peak / 1024


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env_for(HERE, Path()))


def new_repo(source: Path, where: Path) -> Path:
    shutil.copytree(source, where, ignore=shutil.ignore_patterns(".git", ".knowledge", ".venv", "__pycache__"))
    git(where, "init", "-q")
    git(where, "add", "-A")
    git(where, "commit", "-qm", "import")
    return where


def fresh_home(models_from: Path, where: Path) -> Path:
    """A KNOWLEDGE_HOME with the built models but an empty embedding cache."""
    where.mkdir(parents=True)
    (where / "models").symlink_to(models_from / "models")
    return where


def first_answer(code: Path, source: Path, models_from: Path, work: Path, limit: float) -> dict[str, object]:
    repo = new_repo(source, work / "repo")
    home = fresh_home(models_from, work / "home")
    env = env_for(code, home)
    started = time.monotonic()
    indexer = subprocess.Popen(
        [sys.executable, "-P", "-m", "knowledge", "reindex-all", *wait_flag(code)],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "reindex.log").open("w"),
    )
    answered = None
    while time.monotonic() - started < limit:
        # --kind code: an answer from the code index, not from a handful of docs indexed first
        query = ("search", "how is a database query compiled to SQL", "-k", "3", "--kind", "code")
        result, _, _ = knowledge(code, home, repo, *query)
        if result.returncode == 0 and result.stdout.strip():
            answered = round(time.monotonic() - started, 2)
            break
        time.sleep(0.5)
    indexer.kill()
    indexer.wait()
    subprocess.run(["pkill", "-f", "--", f"-C {repo} embed"], check=False)
    log = (work / "reindex.log").read_text(errors="replace").splitlines()
    return {"first_answer_seconds": answered, "limit_seconds": limit, "log_tail": log[-2:]}


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def hook_cost(code: Path, repo: Path, home: Path, runs: int = 5) -> dict[str, object]:
    seconds, peaks = [], []
    for n in range(runs):
        (repo / f"notes-{n}.bin").write_bytes(b"\0not indexed")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"binary {n}")
        result, took, peak = knowledge(code, home, repo, "reindex-from-changes", "--quiet")
        assert result.returncode == 0, result.stderr
        seconds.append(took)
        peaks.append(peak)
    return {"seconds_median": median(seconds), "peak_rss_mb_median": median(peaks)}


def big_docs_repo(where: Path, files: int, sections: int) -> Path:
    corpus = load(SHARED / "scifact").corpus
    texts = [f"{title}. {text[:320]}" for title, text in corpus.values()]
    where.mkdir(parents=True)
    n = 0
    for f in range(files):
        parts = [f"---\ndescription: Generated document {f} for the 100k-chunk benchmark.\n---\n# Document {f}\n"]
        for s in range(sections):
            parts.append(f"## Section {f}.{s}\n\n{texts[n % len(texts)]}\n")
            n += 1
        folder = where / "docs" / f"{f // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{f}.md").write_text("\n".join(parts))
    git(where, "init", "-q")
    git(where, "add", "-A")
    git(where, "commit", "-qm", "generated")
    return where


def seed_cache(repo: Path, home: Path) -> int:
    """Clustered random unit vectors for every chunk text of `repo`, put in the embedding cache (this checkout's
    chunker, which both checkouts share), so neither build needs the model."""
    import numpy as np

    from knowledge.embedding.cache import EmbeddingCache
    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(repo, {"home": str(home)})
    kb.reindex_all(embed=False)
    pending = [p for index in kb.indexes() for p in index.store.pending(10**9)]
    dims = kb.model.identity().dims
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(500, dims))
    vectors = centers[rng.integers(0, 500, len(pending))] + rng.normal(scale=0.6, size=(len(pending), dims))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for variant in ("fp32", "int8"):  # the default differs between the sides: both find their vectors cached
        identity = KnowledgeBase.open(repo, {"home": str(home), "model_variant": variant}).model.identity()
        cache = EmbeddingCache(home / "embeddings" / f"{identity.fingerprint}.sqlite", identity.dims)
        cache.put_many({p.content_hash: vectors[i].astype(np.float32) for i, p in enumerate(pending)})
        cache.close()
    shutil.rmtree(repo / ".knowledge")
    return len(pending)


def one_file_commits(code: Path, repo: Path, home: Path, runs: int = 3) -> list[float]:
    """Seconds of `reindex-from-changes` after each of `runs` commits that add a section to one file."""
    seconds = []
    target = repo / "docs" / "00" / "doc7.md"
    for n in range(runs):
        target.write_text(target.read_text() + f"\n## Added {n}\n\nA new section about run {n} of this benchmark.\n")
        git(repo, "commit", "-qam", f"edit {n}")
        result, took, _ = knowledge(code, home, repo, "reindex-from-changes", "--quiet")
        assert result.returncode == 0, result.stderr
        seconds.append(took)
    return seconds


def one_file_commit(code: Path, repo: Path, home: Path, runs: int = 3) -> dict[str, object]:
    result, build, _ = knowledge(code, home, repo, "reindex-all", "--quiet")
    assert result.returncode == 0, result.stderr
    seconds = one_file_commits(code, repo, home, runs)
    return {"build_from_cache_seconds": round(build, 1), "reindex_one_file_seconds_median": median(seconds)}


def warm_queries(code: Path, repo: Path, home: Path) -> dict[str, object]:
    script = f"""
import json, statistics, sys, time
sys.path.insert(0, {str(HERE / "bench")!r})
from beir_data import SHARED, load
from knowledge.kb import KnowledgeBase
queries = list(load(SHARED / "scifact").queries.values())[:100]
kb = KnowledgeBase.open(__import__("pathlib").Path({str(repo)!r}))
if hasattr(kb, "keep_warm"):  # what `knowledge serve`, the daemon and MCP do (in the background there)
    kb.keep_warm(wait=True)
kb.search(queries[0])
times = []
for q in queries:
    t = time.perf_counter(); kb.search(q); times.append((time.perf_counter() - t) * 1000)
times.sort()
rss = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS"))
print(json.dumps({{"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[94], 1),
                  "rss_mb": round(int(rss) / 1024)}}))
"""
    result = subprocess.run(
        [sys.executable, "-P", "-c", script], env=env_for(code, home), capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def cli_queries(code: Path, repo: Path, home: Path, daemon: bool, runs: int = 5) -> dict[str, object]:
    seconds = []
    for _ in range(runs):
        result, took, _ = knowledge(code, home, repo, "search", "how are the model weights verified", daemon=daemon)
        assert result.returncode == 0, result.stderr
        seconds.append(took)
    return {"seconds_median": median(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of the code to compare with")
    parser.add_argument("--repo", type=Path, required=True, help="a real repository for the first-answer test")
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--first-answer-limit", type=float, default=180.0)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--skip", nargs="*", default=[], help="first, small, big")
    args = parser.parse_args()
    sides = {"main": args.baseline.resolve(), "new": HERE}
    out: dict[str, object] = {"repo": str(args.repo)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "first" not in args.skip:
            out["first_answer"] = {
                side: first_answer(code, args.repo, args.home, work / f"first-{side}", args.first_answer_limit)
                for side, code in sides.items()
            }
            print(json.dumps(out["first_answer"]), file=sys.stderr)
        if "small" not in args.skip:  # throughput, hook and CLI costs on this repository
            small = {side: new_repo(HERE, work / f"self-{side}") for side in sides}
            out["embedding_throughput"] = {}
            for side, code in sides.items():
                # Each side's defaults from an empty vector cache: the realistic code and doc texts of this repository.
                home = fresh_home(args.home, work / f"self-home-{side}")
                result, took, _ = knowledge(code, home, small[side], "reindex-all", "--quiet", "--json")
                assert result.returncode == 0, result.stderr
                report = json.loads(result.stdout)
                embedded = report["chunks_embedded"]
                out["embedding_throughput"][side] = {
                    "chunks": report["chunks_total"],
                    "embedded": embedded,
                    "seconds": round(took, 1),
                    "chunks_per_second": round(embedded / took, 2),
                }
                print(json.dumps(out["embedding_throughput"]), file=sys.stderr)
            out["hook_noop_commit"] = {side: hook_cost(code, small[side], args.home) for side, code in sides.items()}
            out["cli_query_cold"] = {
                side: cli_queries(code, small[side], args.home, False) for side, code in sides.items()
            }
            daemon_env = {k: v for k, v in env_for(HERE, args.home).items() if k != "KNOWLEDGE_NO_DAEMON"}
            started = subprocess.run(
                [sys.executable, "-m", "knowledge", "daemon", "start"], cwd=small["new"], env=daemon_env
            )
            if started.returncode == 0:
                out["cli_query_daemon"] = {"new": cli_queries(HERE, small["new"], args.home, True)}
                subprocess.run([sys.executable, "-m", "knowledge", "daemon", "stop"], cwd=small["new"], env=daemon_env)
        print(json.dumps(out), file=sys.stderr)
        if "big" not in args.skip:
            home = fresh_home(args.home, work / "big-home")
            big = {side: big_docs_repo(work / f"big-{side}", args.files, args.sections) for side in sides}
            out["chunks_seeded"] = seed_cache(big["new"], home)
            out["one_file_commit_100k"] = {side: one_file_commit(code, big[side], home) for side, code in sides.items()}
            print(json.dumps(out), file=sys.stderr)
            out["warm_query_100k"] = {side: warm_queries(code, big[side], home) for side, code in sides.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
