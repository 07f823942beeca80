"""The shared store's vector cache: what any clone or branch of the repository already embedded with a model, taken
by new chunks without a model call, and what this writer embedded, offered to the others."""

from __future__ import annotations

from collections.abc import Sequence

from .pg_schema import Connection


def take_cached(conn: Connection, index_id: int, repository: str, fingerprint: str, dims: int) -> None:
    """Chunks of the index still without an embedding take the cached one of their content, where there is one."""
    conn.execute(
        "UPDATE knowledge_chunks c SET embedding = v.embedding, dims = %s, embed_text = NULL "
        "FROM knowledge_vectors v WHERE c.index_id = %s AND c.embedding IS NULL "
        "AND v.repository = %s AND v.fingerprint = %s AND v.content_hash = c.content_hash",
        (dims, index_id, repository, fingerprint),
    )


def remember(conn: Connection, rows: Sequence[tuple[str, str, str, object]]) -> None:
    """(repository, fingerprint, content_hash, embedding) rows into the cache; a content's first vector stays."""
    if rows:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO knowledge_vectors (repository, fingerprint, content_hash, embedding) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )
