"""The lexical side of the shared store: the same terms the local engine indexes, Porter-stemmed as SQLite FTS5's
`porter` tokenizer stems them, written as a tsvector literal with positions."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..records import Chunk

if TYPE_CHECKING:
    from . import NewChunk
    from .pg_schema import Connection

MAX_POSITION = 16383  # tsvector positions stop here
# Words are Zipf-distributed: a build stems the same few thousand words millions of times, and the stemmer is pure
# Python (two thirds of a PostgreSQL build's own time went to it before the memo; docs/benchmarks.md §9)
STEM_MEMO_WORDS = 500_000

_stemmer_lock = threading.Lock()
_stem_memo: dict[str, str] = {}


@contextmanager
def _porter() -> Iterator[Any]:
    import snowballstemmer

    with _stemmer_lock:
        if not hasattr(_porter, "stemmer"):
            _porter.stemmer = snowballstemmer.stemmer("porter")  # type: ignore[attr-defined]
        yield _porter.stemmer  # type: ignore[attr-defined]


def lexeme_literal(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(terms: Sequence[str]) -> tuple[str, int]:
    """A tsvector literal of the stemmed terms with their positions, and how many terms there were."""
    if not terms:
        return "", 0
    stems = _stem_all(terms)
    positions: dict[str, list[int]] = {}
    for offset, stem in enumerate(stems):
        if not stem:
            continue
        places = positions.setdefault(stem, [])
        if len(places) < 256:
            places.append(min(offset + 1, MAX_POSITION))
    literal = " ".join(f"{lexeme_literal(stem)}:{','.join(map(str, sorted(set(p))))}" for stem, p in positions.items())
    return literal, len(stems)


def _stem_all(terms: Sequence[str]) -> list[str]:
    """Porter stems as SQLite FTS5's `porter` tokenizer makes them: tokens under 3 or over 64 characters pass as is."""
    memo = _stem_memo
    out = []
    for term in terms:
        stem = memo.get(term)
        out.append(_stem_new(term) if stem is None else stem)
    return out


def _stem_new(term: str) -> str:
    stem = term
    with _porter() as porter:
        if 3 <= len(term) <= 64:
            stem = porter.stemWord(term)
        if len(_stem_memo) >= STEM_MEMO_WORDS:
            _stem_memo.clear()
        _stem_memo[term] = stem
    return stem


def stems(terms: Sequence[str]) -> list[str]:
    return [stem for stem in dict.fromkeys(_stem_all(terms)) if stem]


def words_of(item: NewChunk) -> list[str]:
    """A new chunk's lexical terms: those the chunker computed, or computed here."""
    if item.lexical is not None:
        return item.lexical.split()
    from ..lexical import chunk_text, terms  # a leaf; imported here to keep the store's import cheap

    return terms(chunk_text(item.chunk))


def symbol_key(chunk: Chunk) -> str | None:
    """The name a chunk defines as the ranking rules compare names: lower case, no underscores."""
    return chunk.symbol.replace("_", "").lower() or None


def forget_terms(conn: Connection, index_id: int, paths: list[str]) -> None:
    """Take the chunks of `paths` out of the index's document frequencies (before they are deleted)."""
    conn.execute(
        "WITH gone AS (SELECT u.lexeme, count(*) AS n FROM knowledge_chunks c, "
        "unnest(tsvector_to_array(c.lex)) AS u(lexeme) WHERE c.index_id = %s AND c.path = ANY(%s) "
        "GROUP BY u.lexeme) "
        "UPDATE knowledge_terms t SET df = t.df - gone.n FROM gone "
        "WHERE t.index_id = %s AND t.lexeme = gone.lexeme",
        (index_id, paths, index_id),
    )


def add_terms(conn: Connection, index_id: int, repository: str, after_key: int) -> None:
    """Count the chunks inserted past `after_key` into the index's document frequencies."""
    conn.execute(
        "INSERT INTO knowledge_terms (index_id, repository, lexeme, df) "
        "SELECT %s, %s, u.lexeme, count(*) FROM knowledge_chunks c, "
        "unnest(tsvector_to_array(c.lex)) AS u(lexeme) WHERE c.index_id = %s AND c.key > %s "
        "GROUP BY u.lexeme ON CONFLICT (index_id, lexeme) "
        "DO UPDATE SET df = knowledge_terms.df + excluded.df",
        (index_id, repository, index_id, after_key),
    )
