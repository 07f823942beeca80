"""A long-running process's in-memory copy of a local index's FTS5 lexical index.

FTS5 answers an OR query by scoring every row that holds any of its terms: 20-60 ms at 100k chunks, most of a warm
query. This copy holds the same postings as numpy arrays (stems made by FTS5's own tokenizer, in an in-memory FTS5
table) and scores them with FTS5's bm25() formula, so it returns FTS5's ranking in about a millisecond. FTS5 stays the
truth: the copy answers only while it reflects the store's current rows (its `chunks_version`), and catches up in
the background after every commit (rows added since it was built are a small second set of postings; rows removed
are masked; past a share of either it is rebuilt). Only warm processes (server, daemon, MCP) build it, and only for
indexes big enough for FTS5 to be slow.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from . import policy
from .local_derived import lexical_bodies

K1, B = policy.BM25_K1, policy.BM25_B
REBUILD_SHARE = 0.2  # rows added or removed since the build, past which it is rebuilt rather than patched


class Stemmer:
    """Each word's FTS5 tokens (porter stems) as the index makes them, by tokenizing through FTS5 itself."""

    def __init__(self, tokenizer: str) -> None:
        self._tokenizer = tokenizer
        self._known: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        db.execute(f'CREATE VIRTUAL TABLE words USING fts5(word, tokenize="{self._tokenizer}")')
        db.execute("CREATE VIRTUAL TABLE words_tokens USING fts5vocab(words, instance)")
        return db

    def tokens(self, words: Iterable[str]) -> dict[str, tuple[str, ...]]:
        wanted = list(dict.fromkeys(words))
        with self._lock:
            missing = [word for word in wanted if word not in self._known]
            if missing:
                self._db.execute("BEGIN")
                self._db.execute("DELETE FROM words")
                self._db.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(missing))
                found: dict[int, list[tuple[int, str]]] = {}
                for doc, term, offset in self._db.execute("SELECT doc, term, offset FROM words_tokens"):
                    found.setdefault(doc, []).append((offset, term))
                self._db.execute("COMMIT")
                for row, word in enumerate(missing):
                    self._known[word] = tuple(term for _, term in sorted(found.get(row, [])))
                if len(missing) > 1000:  # a build's vocabulary: a fresh database is faster and gives memory back
                    self._db.close()
                    self._db = self._connect()
            return {word: self._known[word] for word in wanted}


class Postings:
    """Term -> (row indexes, term frequencies) over a fixed set of rows, with each row's length in tokens."""

    def __init__(
        self,
        keys: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.float64],
        stems: list[str],
        bounds: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int32],
        freqs: npt.NDArray[np.uint16],
    ) -> None:
        self.keys = keys
        self.lengths = lengths
        self._where = {stem: index for index, stem in enumerate(stems)}
        self._bounds = bounds
        self._rows = rows
        self._freqs = freqs

    @classmethod
    def build(cls, rows: Iterable[tuple[int, str]], stemmer: Stemmer) -> Postings:
        """From (key, FTS5 body) pairs in key order; the bodies are the space-separated terms the store indexed."""
        word_ids: dict[str, int] = {}
        keys: list[int] = []
        tokens: list[npt.NDArray[np.int32]] = []
        for key, body in rows:
            keys.append(key)
            ids = [word_ids.setdefault(word, len(word_ids)) for word in body.split()]
            tokens.append(np.asarray(ids, dtype=np.int32))
        words = list(word_ids)
        stemmed = stemmer.tokens(words)
        stems = sorted({stem for word in words for stem in stemmed[word]})
        stem_id = {stem: index for index, stem in enumerate(stems)}
        # unicode61 with '_' as a token character keeps every stored term one token; a term that is not is skipped
        # here exactly as FTS5 would split it, by mapping it to each of its tokens in turn.
        lengths = np.zeros(len(keys), dtype=np.float64)
        flat_words: list[npt.NDArray[np.int64]] = []
        flat_docs: list[npt.NDArray[np.int64]] = []
        single = np.array([stem_id[stemmed[w][0]] if len(stemmed[w]) == 1 else -1 for w in words], dtype=np.int64)
        for doc, doc_words in enumerate(tokens):
            mapped = single[doc_words] if len(doc_words) else np.zeros(0, dtype=np.int64)
            if (mapped < 0).any():
                mapped = np.array([stem_id[t] for word in doc_words for t in stemmed[words[word]]], dtype=np.int64)
            lengths[doc] = len(mapped)
            flat_words.append(mapped)
            flat_docs.append(np.full(len(mapped), doc, dtype=np.int64))
        count = max(1, len(keys))
        pairs = np.concatenate(flat_words) * count + np.concatenate(flat_docs) if flat_words else np.zeros(0, np.int64)
        unique, freqs = np.unique(pairs, return_counts=True)
        stem_of = unique // count
        bounds = np.searchsorted(stem_of, np.arange(len(stems) + 1))
        return cls(
            np.asarray(keys, dtype=np.int64),
            lengths,
            stems,
            bounds.astype(np.int64),
            (unique % count).astype(np.int32),
            np.minimum(freqs, np.iinfo(np.uint16).max).astype(np.uint16),
        )

    def hits(self, stem: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint16]]:
        index = self._where.get(stem)
        if index is None:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint16)
        start, end = self._bounds[index], self._bounds[index + 1]
        return self._rows[start:end], self._freqs[start:end]


class MemoryLexicon:
    """FTS5's BM25 ranking of one local index from memory; `search` returns None whenever FTS5 must answer."""

    def __init__(self, db_path: Path, tokenizer: str) -> None:
        self._path = db_path
        self._stemmer = Stemmer(tokenizer)
        self._lock = threading.Lock()
        self._state: _State | None = None
        self._updating = False

    # ---- keeping up with the store ----------------------------------------------------------------------------
    def update_in_background(self) -> None:
        """Catch up with the store in a thread (one at a time); until then `search` for the new version is None."""
        with self._lock:
            if self._updating:
                return
            self._updating = True
        threading.Thread(target=self._update_quietly, name="knowledge-lexicon", daemon=True).start()

    def _update_quietly(self) -> None:
        try:
            self.update()
        except (sqlite3.Error, OSError, ValueError, MemoryError):
            pass  # FTS5 keeps answering; the next commit tries again
        finally:
            with self._lock:
                self._updating = False

    def update(self) -> None:
        db = sqlite3.connect(f"file:{self._path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        try:
            db.execute("BEGIN")  # one snapshot: the version and the rows read agree
            row = db.execute("SELECT value FROM meta WHERE name = 'chunks_version'").fetchone()
            version = row[0] if row else ""
            state = self._state
            if state is not None and state.version == version:
                return
            self._state = self._patched(db, state, version) if state is not None else None
            if self._state is None:
                self._state = _State(version, Postings.build(_bodies(db, None), self._stemmer), None)
            db.execute("COMMIT")
        finally:
            db.close()
        _give_back_freed_memory()

    def _patched(self, db: sqlite3.Connection, state: _State, version: str) -> _State | None:
        """The state with rows added since the build as a second posting set and removed rows masked; None when so
        much changed that a rebuild is cheaper to search."""
        base = state.base
        last = int(base.keys[-1]) if len(base.keys) else -1
        present = np.fromiter(
            (k for (k,) in db.execute("SELECT rowid FROM fts_docsize WHERE rowid <= ?", (last,))), dtype=np.int64
        )
        alive = np.isin(base.keys, present, assume_unique=True)
        added = db.execute("SELECT count(*) FROM fts_docsize WHERE rowid > ?", (last,)).fetchone()[0]
        changed = int((~alive).sum()) + added
        if changed > REBUILD_SHARE * max(1, len(base.keys)):
            return None
        extra = Postings.build(_bodies(db, last), self._stemmer) if added else None
        return _State(version, base, extra, None if alive.all() else alive)

    # ---- answering ------------------------------------------------------------------------------------------
    def search(self, words: Sequence[str], k: int, version: str) -> list[tuple[int, float]] | None:
        """FTS5's `bm25()` top k for the OR of `words` (each a phrase of one token), ties by key; None when the copy
        does not reflect `version` of the store (FTS5 answers, and the copy catches up)."""
        state = self._state
        if state is None or state.version != version:
            return None
        unique = list(dict.fromkeys(words))
        tokens = self._stemmer.tokens(unique)
        if any(len(tokens[word]) != 1 for word in unique):  # a phrase of several tokens: FTS5's phrase semantics
            return None
        return state.search([tokens[word][0] for word in unique], k)


class _State:
    def __init__(
        self, version: str, base: Postings, extra: Postings | None, alive: npt.NDArray[np.bool_] | None = None
    ) -> None:
        self.version = version
        self.base = base
        self.extra = extra
        self.alive = alive
        parts = [(base, alive), *([(extra, None)] if extra is not None else [])]
        self._parts = parts
        self.rows = sum(len(p.keys) if mask is None else int(mask.sum()) for p, mask in parts)
        self.tokens = sum(float(p.lengths.sum() if mask is None else p.lengths[mask].sum()) for p, mask in parts)

    def search(self, stems: list[str], k: int) -> list[tuple[int, float]]:
        if not stems or not self.rows:
            return []
        average = self.tokens / self.rows
        hits = [[self._live(part, mask, stem) for part, mask in self._parts] for stem in stems]
        scores = [np.zeros(len(part.keys), dtype=np.float64) for part, _ in self._parts]
        for per_part in hits:
            found = sum(len(rows) for rows, _ in per_part)
            idf = policy.idf(self.rows, found)
            for (part, _), (rows, freqs), total in zip(self._parts, per_part, scores, strict=True):
                if len(rows):
                    tf = freqs.astype(np.float64)
                    length = part.lengths[rows]
                    total[rows] += idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / average)))
        keys = np.concatenate([part.keys for part, _ in self._parts])
        score = np.concatenate(scores)
        matched = np.flatnonzero(score > 0.0)
        if len(matched) > k:  # everything tied with the k-th score stays in, so ties break by key as FTS5's do
            kth = np.partition(score[matched], len(matched) - k)[len(matched) - k]
            matched = matched[score[matched] >= kth]
        order = sorted(matched.tolist(), key=lambda row: policy.tie_key(float(score[row]), int(keys[row])))[:k]
        return [(int(keys[row]), float(score[row])) for row in order]

    @staticmethod
    def _live(part: Postings, mask: npt.NDArray[np.bool_] | None, stem: str) -> tuple[np.ndarray, np.ndarray]:
        rows, freqs = part.hits(stem)
        if mask is not None and len(rows):
            keep = mask[rows]
            rows, freqs = rows[keep], freqs[keep]
        return rows, freqs


def _bodies(db: sqlite3.Connection, after: int | None) -> Iterable[tuple[int, str]]:
    return lexical_bodies(db, after=-1 if after is None else after)


def _give_back_freed_memory() -> None:
    """A build frees ~2x what it keeps, in pieces that fragment glibc's heap; without a trim a server at 100k chunks
    keeps ~170 MB more resident than it uses."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the memory is reused by later allocations instead
        pass
