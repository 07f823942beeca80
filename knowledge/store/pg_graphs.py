"""The static rows' graph of a large shared index: built once the index's rows are loaded (never grown row by row
through a first build), walked by its static search, dropped when its index is gone. Building and dropping go through
the owner's functions (schema 8), which check what the caller may see."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .pg_ddl import STATIC_GRAPH_PREFIX

if TYPE_CHECKING:
    from .pg_schema import Connection

# An exact scan of an index's static rows reads its chunk rows (~5 us each); a walk of its own graph costs ~1-3 ms
# whatever the size. The scan stays exact, and in the same order as the local engine's, below this many rows.
GRAPH_FROM_ROWS = 20_000
GRAPH_BYTES_PER_ROW = 1_200  # a halfvec of 256 and its links, what an in-memory build holds per row


def graph_name(index_id: int) -> str:
    return f"{STATIC_GRAPH_PREFIX}{int(index_id)}"


def has_graph(conn: Connection, index_id: int) -> bool:
    return bool(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (graph_name(index_id),)).fetchone()[0])


def ensure_static_graph(conn: Connection, index_id: int, from_rows: int | None = None) -> bool:
    """Build the index's graph if it holds `from_rows` static rows or more and has none yet; True when built."""
    from_rows = GRAPH_FROM_ROWS if from_rows is None else from_rows
    rows = conn.execute("SELECT static_count FROM knowledge_indexes WHERE id = %s", (index_id,)).fetchone()
    if not rows or int(rows[0]) < from_rows or has_graph(conn, index_id):
        return False
    dims = conn.execute(
        "SELECT vector_dims(static) FROM knowledge_chunks WHERE index_id = %s AND static IS NOT NULL LIMIT 1",
        (index_id,),
    ).fetchone()[0]
    memory_mb = int(rows[0]) * GRAPH_BYTES_PER_ROW // 1_000_000 + 64
    return bool(conn.execute("SELECT knowledge_static_graph(%s, %s, %s)", (index_id, dims, memory_mb)).fetchone()[0])


def tidy_static_graphs(conn: Connection) -> int:
    """Drop the graphs of indexes that are gone (replaced by a rebuild, or abandoned); how many were dropped."""
    return int(conn.execute("SELECT knowledge_static_graphs_tidy()").fetchone()[0])
