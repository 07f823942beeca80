"""The lexical side of a LocalStore: the FTS5 index (BM25) and the symbol index in its SQLite file and, for a warm
process with a big index, an in-memory copy that answers faster. Each call takes the store's lock for SQLite."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import IndexCorruptError
from . import ScoredKey
from .local_derived import lexical_bodies
from .local_files import FTS_TOKENIZER, SYMBOL_KEY, read_meta

if TYPE_CHECKING:
    from .memory_lexicon import MemoryLexicon

# A warm process keeps the lexical index in memory from this many chunks on (FTS5 takes ~5 ms below it, 30+ at 100k).
MEMORY_LEXICON_MIN_CHUNKS = 20_000
# ... built from this long after the first question: its answer (~0.5 s cold at 200k chunks) goes out first; on two
# cores a build beside it made a daemon's first answer take 4 s
BUILD_AFTER_FIRST_QUESTION_S = 2.0


class LocalLexical:
    def __init__(self, db_path: Path, lock: threading.RLock) -> None:
        self.db_path = db_path
        self._lock = lock
        self._lexicon: MemoryLexicon | None = None
        self._build_after_answer = False

    def keep_warm(self, db: sqlite3.Connection, wait: bool = False) -> None:
        """Keep an in-memory copy once the index is big enough for FTS5 to be slow (built in the background after the
        first question unless `wait`; FTS5 answers until it is ready)."""
        if self._lexicon is None:
            with self._lock:
                rows = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            if rows < MEMORY_LEXICON_MIN_CHUNKS:
                return
            from .memory_lexicon import MemoryLexicon

            self._lexicon = MemoryLexicon(self.db_path, FTS_TOKENIZER)
        if wait:
            self._lexicon.update()
        else:
            self._build_after_answer = True

    def search(self, db: sqlite3.Connection, terms: Sequence[str], k: int) -> list[ScoredKey]:
        unique = list(dict.fromkeys(terms))
        if not unique:
            return []
        if self._lexicon is not None:
            with self._lock:
                version = read_meta(db, "chunks_version") or ""
            found = self._lexicon.search(unique, k, version)
            if found is not None:
                return [ScoredKey(key, score) for key, score in found]
            self._lexicon.update_in_background()
        expression = " OR ".join('"' + term.replace('"', '""') + '"' for term in unique)  # FTS5 string quoting
        try:
            with self._lock:
                rows = db.execute(
                    "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?",
                    (expression, k),
                ).fetchall()
        except sqlite3.DatabaseError as exc:  # never an empty answer that hides a broken lexical index
            raise IndexCorruptError(
                f"{self.db_path}: the lexical index cannot be read ({exc}); run `knowledge reindex-all`"
            ) from exc
        if self._build_after_answer and self._lexicon is not None:
            self._build_after_answer = False
            later = threading.Timer(BUILD_AFTER_FIRST_QUESTION_S, self._lexicon.update_in_background)
            later.daemon = True
            later.start()
        return [ScoredKey(int(key), -float(score)) for key, score in rows]

    def defining(self, db: sqlite3.Connection, names: Sequence[str], limit: int) -> list[int]:
        if not names:
            return []
        marks = ",".join("?" * len(names))
        with self._lock:
            # an index from before `symbol_key` has the names of its older rows in their JSON, and their own index
            older = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_by_symbol'").fetchone() is not None
            rows = db.execute(
                f"SELECT key FROM chunks WHERE symbol_key IN ({marks})"
                + (f" UNION SELECT key FROM chunks WHERE {SYMBOL_KEY} IN ({marks})" if older else "")
                + " ORDER BY key LIMIT ?",
                (*names, *(names if older else ()), limit),
            ).fetchall()
        return [int(row[0]) for row in rows]

    def terms_of(self, db: sqlite3.Connection, keys: Sequence[int]) -> dict[int, str]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        with self._lock:
            return dict(lexical_bodies(db, unique))
