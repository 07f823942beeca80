"""Whether a shared server's buffer holds what a search reads: its `shared_buffers` beside the relations every search
walks (the chunk rows, their text index and the vector graphs). Sized below them, a search waits on reads: a complete
index of 100k chunks answered at p50 73-76 ms with PostgreSQL's default 128 MB and 41-48 ms with 1 GB, nothing else
changed (docs/benchmarks.md §9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pg_schema import Connection

# the chunk table's heap and the indexes a search walks on it: the GIN over the tsvectors and every HNSW graph
# (the transformer's, and each large index's static graph); sizes need no privilege on the relations
SEARCHED = """
SELECT current_setting('shared_buffers'),
       (SELECT setting::bigint * current_setting('block_size')::bigint FROM pg_settings
        WHERE name = 'shared_buffers'),
       coalesce(pg_relation_size(to_regclass('knowledge_chunks')), 0)
       + coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i
                   JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                   WHERE i.indrelid = to_regclass('knowledge_chunks') AND a.amname IN ('gin', 'hnsw')), 0)
"""


@dataclass(frozen=True, slots=True)
class ServerMemory:
    shared_buffers: str  # as the server says it ("128MB")
    buffer_bytes: int
    searched_bytes: int  # the chunk rows, their text index and the vector graphs, all indexes of the database

    @property
    def holds_searches(self) -> bool:
        return self.buffer_bytes >= self.searched_bytes


def server_memory(conn: Connection) -> ServerMemory:
    setting, buffer_bytes, searched = conn.execute(SEARCHED).fetchone()
    return ServerMemory(str(setting), int(buffer_bytes), int(searched))
