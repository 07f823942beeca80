"""The shared store's vector cache: what any clone or branch of the repository already embedded with a model, taken
by new chunks without a model call, and what this writer embedded, offered to the others."""

from __future__ import annotations

from collections.abc import Sequence

from .pg_schema import Connection


def take_cached(conn: Connection, index_id: int, repository: str, fingerprint: str, dims: int, after_key: int) -> None:
    """Chunks just added (keys past `after_key`) take the cached embedding of their content, where there is one.

    Only the new rows: older rows waiting for theirs are the fill's, and looking at all of them on every write read
    every pending row of a first build each time (a million chunks, 1,562 writes)."""
    conn.execute(
        "UPDATE knowledge_chunks c SET embedding = v.embedding, dims = %s, embed_text = NULL "
        "FROM knowledge_vectors v WHERE c.index_id = %s AND c.key > %s AND c.embedding IS NULL "
        "AND v.repository = %s AND v.fingerprint = %s AND v.content_hash = c.content_hash",
        (dims, index_id, after_key, repository, fingerprint),
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
