"""The shared store's dense side when one index is a share of a bigger HNSW graph: exact scan against the graph.

    python bench/pg_dense.py --big 2000 --small 125 500 --out bench/results/pg-dense.json

Builds generated docs repositories (bench/seconds.py's, 20 sections a file, clustered vectors seeded in the cache)
into one real PostgreSQL 18 + pgvector database, so every index's vectors share one HNSW graph, then times both
statements `pg_queries.nearest` chooses between, for each index and 100 SciFact query vectors: the exact scan of the
index's own rows and the filtered HNSW walk (iterative, relaxed order). What the store's rule (`scans_exactly`)
picks for each is in the JSON beside the times. The vectors are synthetic clusters, so the two lists' overlap here
says nothing of recall on real text: SciFact through the store (bench/teams.py --parts quality) does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load
from pg_tail import percentile

from tests.pgserver import start_postgres

EXACT = (
    "SELECT key, embedding <=> %s::vector AS d FROM knowledge_chunks "
    "WHERE index_id = %s AND embedding IS NOT NULL ORDER BY d LIMIT 50"
)
HNSW = (
    "SELECT key, embedding::vector(768) <=> %s::vector(768) AS d FROM knowledge_chunks "
    "WHERE index_id = %s AND dims = 768 ORDER BY embedding::vector(768) <=> %s::vector(768) LIMIT 50"
)


def timed(conn: object, sql: str, args: tuple, hnsw: bool) -> tuple[float, int]:
    with conn.transaction():  # type: ignore[attr-defined]
        if hnsw:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # type: ignore[attr-defined]
            conn.execute("SET LOCAL hnsw.ef_search = 100")  # type: ignore[attr-defined]
        started = time.perf_counter()
        rows = conn.execute(sql, args).fetchall()  # type: ignore[attr-defined]
        return (time.perf_counter() - started) * 1000, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--big", type=int, default=2000, help="files of the big repository (20 chunks each)")
    parser.add_argument("--small", type=int, nargs="*", default=[125, 500], help="files of each smaller one")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from seconds import big_docs_repo, seed_cache

    from knowledge.kb import KnowledgeBase
    from knowledge.store.pg_queries import scans_exactly
    from knowledge.store.pg_schema import connect

    work = Path(tempfile.mkdtemp(prefix="knowledge-pg-dense-"))
    home = work / "home"
    home.mkdir()
    (home / "models").symlink_to(args.home / "models")
    server = start_postgres()
    url = server.url()
    result: dict[str, object] = {"cores": os.cpu_count(), "indexes": []}
    try:
        os.environ["KNOWLEDGE_STORE"] = url
        queries = list(load(SHARED / "scifact").queries.values())[:100]
        kb = None
        for n, files in enumerate([args.big, *args.small]):
            repo = big_docs_repo(work / f"repo{n}", files, 20)
            seed_cache(repo, home)
            kb = KnowledgeBase.open(repo, {"home": str(home)})
            kb.reindex_all()
        assert kb is not None
        embedder = kb.model.embedder()
        vectors = [embedder.embed_query(q) for q in queries]
        conn = connect(url)
        conn.execute("VACUUM ANALYZE")
        graph = float(
            conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'knowledge_chunks_hnsw_768'").fetchone()[0]
        )
        result["graph_vectors"] = graph
        indexes = conn.execute(
            "SELECT id, embedded_count FROM knowledge_indexes WHERE kind = 'docs' AND live ORDER BY embedded_count"
        ).fetchall()
        for index_id, count in indexes:
            row: dict[str, object] = {"vectors": count, "share": round(count / graph, 3)}
            for name, sql, hnsw in (("exact", EXACT, False), ("hnsw", HNSW, True)):
                times, returned = [], []
                for vector in vectors:
                    spent, got = timed(conn, sql, (vector, index_id, vector) if hnsw else (vector, index_id), hnsw)
                    times.append(spent)
                    returned.append(got)
                row[name] = {"p50_ms": round(statistics.median(times), 1), "p95_ms": percentile(times, 0.95)}
                row[name]["returned_mean"] = statistics.fmean(returned)  # type: ignore[index]
            row["rule_scans_exactly"] = scans_exactly(int(count), graph)
            result["indexes"].append(row)  # type: ignore[union-attr]
            print(json.dumps(row), file=sys.stderr, flush=True)
        conn.close()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
