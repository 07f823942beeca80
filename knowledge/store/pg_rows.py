"""A chunk's row as the shared store writes it, and what an index row counts of such rows (chunks, embedded, terms,
static rows, static rows waiting for their embedding), moved by each write's own rows rather than recounted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import chunk_to_compact_json
from .pg_lexemes import symbol_key, tsvector_text, words_of

if TYPE_CHECKING:
    from . import NewChunk

# one aggregate over the rows a write is about to delete or has just added; the caller appends its condition
COUNTED = (
    "SELECT count(*), count(embedding), coalesce(sum(lex_len), 0), count(static), "
    "count(static) FILTER (WHERE embedding IS NULL) FROM knowledge_chunks WHERE index_id = %s AND "
)


@dataclass(slots=True)
class Counts:
    """Deltas of an index row's `doc_count, embedded_count, total_len, static_count, static_waiting`."""

    chunks: int = 0
    embedded: int = 0
    length: int = 0
    static: int = 0
    waiting: int = 0

    def add(self, row: tuple[int, int, int, int, int], sign: int = 1) -> None:
        self.chunks += sign * int(row[0])
        self.embedded += sign * int(row[1])
        self.length += sign * int(row[2])
        self.static += sign * int(row[3])
        self.waiting += sign * int(row[4])

    def subtract(self, row: tuple[int, int, int, int, int]) -> None:
        self.add(row, -1)

    def values(self) -> tuple[int, int, int, int, int]:
        return self.chunks, self.embedded, self.length, self.static, self.waiting


def chunk_row(index_id: int, repository: str, item: NewChunk, dims: int) -> tuple[object, ...]:
    """The values of a `knowledge_chunks` row, in the insert's column order."""
    import numpy as np

    chunk = item.chunk
    words = words_of(item)
    lex, length = tsvector_text(words)
    vector = None if item.vector is None else np.asarray(item.vector, dtype=np.float32)
    static = None if item.static is None else np.asarray(item.static, dtype=np.float32)
    return (
        index_id,
        repository,
        chunk.id,
        chunk.path,
        chunk.content_hash,
        chunk_to_compact_json(chunk),
        None if vector is not None else chunk.embed_text,
        len(chunk.embed_text),
        symbol_key(chunk),
        " ".join(words) if chunk.kind == "code" else "",  # read only by code's exact-name rule (see lexical_terms)
        lex,
        length,
        dims if vector is not None else None,
        vector,
        static,
    )
