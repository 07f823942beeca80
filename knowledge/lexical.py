"""Identifier-aware lexical terms: what the lexical index of every engine stores and what queries ask it for."""

from __future__ import annotations

import functools
import re

from .records import Chunk

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[.\-/:_]+")
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "so",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    }
)


def terms(text: str) -> list[str]:
    """Lower-cased search terms: words, identifier parts (camelCase, snake_case, kebab-case, dotted), whole identifiers.

    `reindexChanges` gives `reindexchanges reindex changes`; `knowledge.kb.search` gives `knowledge_kb_search
    knowledge kb search`; English stopwords are dropped (whole identifiers are kept).
    """
    out: list[str] = []
    for token in _WORD.findall(text):
        out.extend(_token_terms(token))
    return out


@functools.lru_cache(maxsize=4096)  # a code base repeats its identifiers: a 216k-chunk index's terms in a third
def _token_terms(token: str) -> tuple[str, ...]:
    parts = name_words(token)
    whole = (_SEPARATORS.sub("_", token.lower()).strip("_"),) if len(parts) > 1 else ()
    return whole + tuple(part for part in parts if part not in STOPWORDS)


def name_words(name: str) -> list[str]:
    """An identifier's words, lower-cased: `appendChildren` gives `append children`, `get_json` `get json`."""
    return [word.lower() for piece in _SEPARATORS.split(name) for word in _CAMEL.findall(piece)]


def identifiers(text: str) -> set[str]:
    """Code-shaped tokens (snake_case, camelCase, dotted names), normalised as `terms` writes them.

    Hyphenated words are left out on purpose: in prose ("T-cell", "well-known") they are not names, and boosting
    them hurt SciFact on its dev split.
    """
    found = set()
    for match in _WORD.finditer(text):
        token = match.group()
        if re.search(r"^_\w|\w_\w|[a-z][A-Z]|[A-Za-z_]\w+\.[A-Za-z_]\w", token):
            found.add(_SEPARATORS.sub("_", token.lower()).strip("_"))
    return found


def chunk_text(chunk: Chunk) -> str:
    """What the lexical index sees of a chunk: path, title, section, description and content."""
    return "\n".join((chunk.path, chunk.title, chunk.section, chunk.description, chunk.content))
