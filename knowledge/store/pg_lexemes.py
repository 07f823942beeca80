"""The lexical side of the shared store: the same terms the local engine indexes, Porter-stemmed as SQLite FTS5's
`porter` tokenizer stems them, written as a tsvector literal with positions."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..records import Chunk

MAX_POSITION = 16383  # tsvector positions stop here

_stemmer_lock = threading.Lock()


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
    with _porter() as porter:
        return [porter.stemWord(t) if 3 <= len(t) <= 64 else t for t in terms]


def stems(terms: Sequence[str]) -> list[str]:
    return [stem for stem in dict.fromkeys(_stem_all(terms)) if stem]


def symbol_key(chunk: Chunk) -> str | None:
    """The name a chunk defines as the ranking rules compare names: lower case, no underscores."""
    return chunk.symbol.replace("_", "").lower() or None
