"""The shared store's ranking queries: nearest vectors (an exact scan for a small index, a filtered HNSW scan for a
large one) and BM25 over the postings of the stemmed terms, scored with the same formula as the local engine's FTS5."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import ScoredKey, policy
from .pg_graphs import has_graph
from .pg_lexemes import lexeme_literal
from .pg_schema import Connection

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

RARE_SHARE, PRUNE_FROM_CHUNKS = 0.05, 20_000  # see bm25
CANDIDATE_ROWS = 5_000  # see bm25: about what one rare term may hold at 100k chunks
# An exact scan reads every vector of the index (~4 us each at 768 dims); a filtered HNSW walk costs ~1.5 ms plus
# ~1 ms per (vectors in the graph / vectors of this index), since it passes other indexes' vectors to find this one's.
# So the scan wins while count^2 < EXACT_SCAN_BALANCE x graph size (docs/benchmarks.md §9): a 2,500-vector index in
# a 52,500-vector graph scans in 10 ms (HNSW 18 ms); 10,000 vectors there take 39 ms scanned and 7 ms by the graph.
EXACT_SCAN_BALANCE = 250


def nearest(conn: Connection, index_id: int, dims: int, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
    """The `k` chunks of the index closest to `vector` (cosine), inside the caller's transaction."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    counts = conn.execute(
        "SELECT embedded_count, (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)) "
        "FROM knowledge_indexes WHERE id = %s",
        (f"knowledge_chunks_hnsw_{int(dims)}", index_id),
    ).fetchone()
    if not counts or not counts[0]:
        return []
    if scans_exactly(int(counts[0]), float(counts[1] if counts[1] is not None else -1)):
        # A small index, or a small share of a graph that holds every index's vectors: an exact scan of its own
        # rows (the cast-free expression keeps the planner off the HNSW index).
        sql = (
            "SELECT key, embedding <=> %s::vector AS distance FROM knowledge_chunks "
            "WHERE index_id = %s AND embedding IS NOT NULL ORDER BY distance LIMIT %s"
        )
        rows = conn.execute(sql, (query, index_id, k)).fetchall()
    else:
        # filtered HNSW scans keep going until `k` rows of this index are found (pgvector 0.8)
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * k))}")
        rows = conn.execute(
            f"SELECT key, embedding::vector({dims}) <=> %s::vector({dims}) AS distance FROM knowledge_chunks "
            f"WHERE index_id = %s AND dims = {dims} ORDER BY embedding::vector({dims}) <=> %s::vector({dims}) "
            "LIMIT %s",
            (query, index_id, query, k),
        ).fetchall()
    scored = [(int(key), 1.0 - float(distance)) for key, distance in rows]
    best = sorted(scored, key=lambda item: (-round(item[1], 6), item[0]))[:k]
    return [ScoredKey(key, score) for key, score in best]


def nearest_static(conn: Connection, index_id: int, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
    """The `k` chunks of the index closest to `vector` in the static stage's space: a walk of the index's own graph
    where it has one (a large index), else an exact scan of its rows; ordered as the local engine orders them."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    if has_graph(conn, index_id):
        # the index id as a literal: the graph is a partial index on it, which a generic plan's parameter cannot use
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * k))}")
        rows = conn.execute(static_walk_sql(index_id, int(query.shape[0])), (query, query, k)).fetchall()
    else:
        rows = conn.execute(
            "SELECT key, static <=> %s::vector AS distance FROM knowledge_chunks "
            "WHERE index_id = %s AND static IS NOT NULL ORDER BY distance LIMIT %s",
            (query, index_id, k),
        ).fetchall()
    scored = sorted(
        ((int(key), 1.0 - float(distance)) for key, distance in rows), key=lambda h: (-round(h[1], 6), h[0])
    )
    return [ScoredKey(key, score) for key, score in scored]


def static_walk_sql(index_id: int, dims: int) -> str:
    """The walk of an index's static graph: ordered by the graph's halfvec distance, scored by the exact one."""
    return (
        f"SELECT key, static <=> %s::vector AS distance FROM knowledge_chunks WHERE index_id = {int(index_id)} "
        f"ORDER BY static::halfvec({int(dims)}) <=> %s::halfvec({int(dims)}) LIMIT %s"
    )


def scans_exactly(embedded: int, graph: float) -> bool:
    """Whether an index of `embedded` vectors is searched by an exact scan rather than the HNSW graph, which holds
    `graph` vectors of its size (the index's reltuples: -1 until first analyzed, then the index counts as the whole
    graph)."""
    return embedded * embedded <= EXACT_SCAN_BALANCE * max(graph, embedded)


def bm25(conn: Connection, index_id: int, stems: Sequence[str], k: int) -> list[ScoredKey]:
    """The `k` chunks of the index with the highest BM25 score for the stemmed query terms, read from the chunks'
    tsvectors through the GIN index (schema 9's `knowledge_postings`, which keeps the caller to indexes it may see)."""
    if not stems:
        return []
    rows = conn.execute(
        "SELECT i.doc_count, i.total_len, t.lexeme, t.df FROM knowledge_indexes i LEFT JOIN knowledge_terms t "
        "ON t.index_id = i.id AND t.lexeme = ANY(%s) AND t.df > 0 WHERE i.id = %s",
        (list(stems), index_id),
    ).fetchall()
    frequencies = {lexeme: df for _, _, lexeme, df in rows if lexeme is not None}
    if not frequencies:
        return []
    n, total = rows[0][0], rows[0][1]
    idf = {lexeme: policy.idf(n, df) for lexeme, df in frequencies.items()}
    by_rarity = sorted(frequencies, key=lambda lexeme: frequencies[lexeme])
    chosen = _candidate_terms(by_rarity, frequencies, n) if n >= PRUNE_FROM_CHUNKS else by_rarity
    # every query term counts towards a candidate's score; only chunks holding a chosen term are candidates (the
    # GIN index finds them). Terms are summed in one order, so chunks of the same text tie exactly and their order is
    # by key: summed in scan order they differed in the last bit, and 19% of a top 10 at 100k chunks changed with
    # the candidate budget.
    scored = conn.execute(
        """
        SELECT p.key, sum((%(idf)s::float8[])[array_position(%(lexemes)s::text[], p.lexeme)] * (p.tf * (%(k1)s + 1))
                          / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.lex_len / %(avgdl)s)) ORDER BY p.lexeme) AS score
        FROM knowledge_postings(%(index)s, %(candidates)s::tsquery, %(lexemes)s::text[]) p
        GROUP BY p.key ORDER BY score DESC, p.key LIMIT %(limit)s
        """,
        {
            "index": index_id,
            "lexemes": list(idf),
            "idf": list(idf.values()),
            "candidates": " | ".join(lexeme_literal(lexeme) for lexeme in chosen),
            "avgdl": max(total / max(n, 1), 1.0),
            "k1": policy.BM25_K1,
            "b": policy.BM25_B,
            "limit": k,
        },
    ).fetchall()
    return [ScoredKey(int(key), float(score)) for key, score in scored]


def _candidate_terms(by_rarity: list[str], frequencies: dict[str, int], n: int) -> list[str]:
    """In a large index, the chunks holding the query's rarest terms are the candidates: a chunk that holds only
    terms found in 5%+ of all chunks scores too little to matter, and rare terms are taken rarest first only while
    the chunks they hold stay within `CANDIDATE_ROWS` (every candidate is scored over every query term: a long
    question with nine 3-5% terms had 14,000 candidates, 170 ms when each candidate's tsvector was read, and made the
    p95 tail). A query of common words only: its two rarest words pick the candidates."""
    rare = [lexeme for lexeme in by_rarity if frequencies[lexeme] <= RARE_SHARE * n]
    if not rare:
        return by_rarity[:2]
    chosen, rows = [rare[0]], frequencies[rare[0]]
    for lexeme in rare[1:]:
        rows += frequencies[lexeme]
        if rows > CANDIDATE_ROWS:
            break
        chosen.append(lexeme)
    return chosen


def vector_array(vector: Any) -> Any:  # noqa: ANN401 - pgvector returns a Vector or a numpy array by protocol
    return vector.to_numpy() if hasattr(vector, "to_numpy") else vector
