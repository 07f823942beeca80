"""LexicalIndex: BM25 over chunks with SQLite FTS5, identifier-aware terms. The only module that uses sqlite FTS.

The index is a derived cache of a store generation (`<kind>.lexical.sqlite` beside it): `sync` brings it to the
store's chunks by (key, content hash), so an interrupted write only costs a re-sync, never a wrong answer.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

from .errors import IndexCorruptError
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
    for match in _WORD.finditer(text):
        token = match.group()
        parts = [word.lower() for piece in _SEPARATORS.split(token) for word in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out.append(_SEPARATORS.sub("_", token.lower()).strip("_"))
        out.extend(part for part in parts if part not in STOPWORDS)
    return out


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


class LexicalIndex:
    """FTS5 BM25 (k1 1.2, b 0.75) over one kind's chunks, rowid = the store key."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, tokenize=\"porter unicode61 tokenchars '_'\")"
            )
            self._db.execute("CREATE TABLE IF NOT EXISTS rows (key INTEGER PRIMARY KEY, hash TEXT NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(f"{path}: unreadable lexical index ({exc}); run `knowledge reindex-all`") from exc
        self.path = path
        self._lock = threading.Lock()  # one connection shared by a server's threads

    def generation(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()
        return row[0] if row else None

    def sync(self, chunks: dict[int, Chunk], generation: str) -> int:
        """Make the index hold exactly `chunks`; returns how many rows were (re)written."""
        if self.generation() == generation:
            return 0
        have = dict(self._db.execute("SELECT key, hash FROM rows").fetchall())
        stale = [key for key, digest in have.items() if chunks.get(key) is None or chunks[key].content_hash != digest]
        missing = [key for key, chunk in chunks.items() if have.get(key) != chunk.content_hash]
        with self._db:
            self._db.executemany("DELETE FROM fts WHERE rowid = ?", [(key,) for key in stale])
            self._db.executemany("DELETE FROM rows WHERE key = ?", [(key,) for key in stale])
            self._db.executemany(
                "INSERT INTO fts (rowid, body) VALUES (?, ?)",
                [(key, " ".join(terms(chunk_text(chunks[key])))) for key in missing],
            )
            self._db.executemany(
                "INSERT INTO rows (key, hash) VALUES (?, ?)", [(key, chunks[key].content_hash) for key in missing]
            )
            self._db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('generation', ?)", (generation,))
        return len(missing)

    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """(key, BM25 score) best first; a higher score is a better match."""
        unique = list(dict.fromkeys(terms(query)))
        if not unique:
            return []
        expression = " OR ".join(f'"{term}"' for term in unique)
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (expression, limit)
                ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [(int(key), -float(score)) for key, score in rows]

    def close(self) -> None:
        self._db.close()


def lexical_path(index_folder: Path, kind: str) -> Path:
    return index_folder / f"{kind}.lexical.sqlite"


def sync_all(index_folder: Path, kind: str, chunks: dict[int, Chunk], generation: str) -> int:
    index = LexicalIndex(lexical_path(index_folder, kind))
    try:
        return index.sync(chunks, generation)
    finally:
        index.close()
