"""LocalStore: the default engine, one kind's index under `.knowledge/`.

- `<kind>.meta.json`: the manifest (model, dims, fingerprint, thresholds), for people and other tools.
- `<kind>.sqlite`: chunks, per-file facts, problems, the FTS5 lexical index, vectors not yet folded into the HNSW
  snapshot ("delta"), keys removed from it ("tombstones"), the commit and the authoritative manifest. Every write is
  one SQLite transaction, so a one-file commit writes work proportional to that file.
- `<kind>.usearch`: the HNSW snapshot (see vectors.py), rebuilt only when the delta grows past a share of it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from ..fs import atomic_write, create_private_file, private_dir
from ..records import Chunk, FileProblem
from . import (
    FORMAT_VERSION,
    Change,
    Coverage,
    EmbedProgress,
    FileFacts,
    Manifest,
    Pending,
    ScoredKey,
    StoreSummary,
    chunk_from_dict,
    chunk_to_json,
    index_dir,
)
from .vectors import Snapshot, SnapshotIdentity, new_index, remove_stale_temp_files, write_snapshot

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .memory_lexicon import MemoryLexicon

# Fold the delta into the snapshot once it holds this many vectors, or a quarter of the snapshot if that is more.
COMPACT_MIN = 4096
FTS_TOKENIZER = "porter unicode61 tokenchars '_'"
# A warm process keeps the lexical index in memory from this many chunks on (FTS5 takes ~5 ms below it, 30+ at 100k).
MEMORY_LEXICON_MIN_CHUNKS = 20_000
# The name a code chunk defines, as the ranking rules compare names: lower case, no underscores.
_SYMBOL_KEY = "lower(replace(json_extract(data, '$.symbol'), '_', ''))"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    key INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL, data TEXT NOT NULL,
    embed_text TEXT, chars INTEGER NOT NULL DEFAULT 0, embedded INTEGER NOT NULL DEFAULT 0,
    in_snapshot INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_id ON chunks(chunk_id);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(key) WHERE embedded = 0;
CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks({symbol});
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ns INTEGER, size INTEGER);
CREATE TABLE IF NOT EXISTS problems (path TEXT NOT NULL, problem TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS problems_by_path ON problems(path);
CREATE TABLE IF NOT EXISTS delta (seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER UNIQUE NOT NULL, vector BLOB);
CREATE TABLE IF NOT EXISTS tombstones (key INTEGER PRIMARY KEY);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, tokenize="{tokenizer}");
""".replace("{symbol}", _SYMBOL_KEY).replace("{tokenizer}", FTS_TOKENIZER)


def store_paths(root: Path, kind: str) -> tuple[Path, Path, Path]:
    """(`<kind>.usearch`, `<kind>.meta.json`, `<kind>.sqlite`)."""
    folder = index_dir(root)
    return folder / f"{kind}.usearch", folder / f"{kind}.meta.json", folder / f"{kind}.sqlite"


def _chunk_from_json(text: str) -> Chunk:
    return chunk_from_dict(json.loads(text))


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def remove_leftovers(folder: Path) -> None:
    """What killed writers left: half-built stores and snapshot temp files (the caller holds the writer lock)."""
    remove_stale_temp_files(folder)
    for building in folder.glob(".*.sqlite.building*"):
        with contextlib.suppress(OSError):
            building.unlink()


class LocalStore:
    """One kind's index in SQLite + USearch. Safe to share between a server's threads (one lock)."""

    def __init__(self, root: Path, kind: str, db: sqlite3.Connection, manifest: Manifest) -> None:
        self.root = root
        self.kind = kind
        self.manifest = manifest
        self._db = db
        self._lock = threading.RLock()
        self._data_version: int | None = None
        self._snapshot: Snapshot | None = None
        self._snapshot_identity: SnapshotIdentity | None = None
        self._tombstones: set[int] = set()
        self._delta_epoch = ""
        self._delta_seq = 0
        self._delta_keys: list[int] = []
        self._delta_rows: dict[int, int] = {}
        self._delta_matrix: npt.NDArray[np.float32] | None = None  # numpy loads only when vectors are read
        self._coverage: tuple[int, Coverage] | None = None
        self._own_writes = False
        self._lexicon: MemoryLexicon | None = None

    # ---- opening and creating --------------------------------------------------------------------------------
    @staticmethod
    def exists(root: Path, kind: str) -> bool:
        return store_paths(root, kind)[2].is_file()

    @classmethod
    def open(cls, root: Path, kind: str = "docs") -> LocalStore:
        """The kind's index; IndexNotFoundError, IndexIncompatibleError (old format) or IndexCorruptError."""
        _, meta_path, db_path = store_paths(root, kind)
        if not db_path.is_file():
            if meta_path.is_file():
                raise IndexIncompatibleError(
                    f"{meta_path}: index format 1 from an earlier knowledge; run `knowledge reindex-all` "
                    "(cached vectors make it quick)"
                )
            raise IndexNotFoundError(f"{meta_path}: no index yet; run `knowledge reindex-all`")
        try:
            db = _connect(db_path)
            with contextlib.suppress(sqlite3.OperationalError):  # an index from before it, or a read-only folder
                db.execute(f"CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks({_SYMBOL_KEY})")
            row = db.execute("SELECT value FROM meta WHERE name = 'manifest'").fetchone()
            manifest = Manifest(**json.loads(row[0]))
        except (sqlite3.DatabaseError, TypeError, ValueError, KeyError) as exc:
            raise IndexCorruptError(f"{db_path}: unreadable index ({exc}); run `knowledge reindex-all`") from exc
        if manifest.format_version != FORMAT_VERSION:
            raise IndexIncompatibleError(
                f"{db_path}: index format {manifest.format_version}, this knowledge reads {FORMAT_VERSION}; "
                "run `knowledge reindex-all`"
            )
        return cls(root, kind, db, manifest)

    @classmethod
    def create(cls, root: Path, kind: str, manifest: Manifest) -> LocalStore:
        """A new, empty index built beside the live one; `publish()` swaps it in. The caller holds the lock."""
        folder = index_dir(root)
        private_dir(folder)
        remove_stale_temp_files(folder)
        building = folder / f".{kind}.sqlite.building"
        for leftover in (building, Path(f"{building}-wal"), Path(f"{building}-shm")):
            leftover.unlink(missing_ok=True)
        create_private_file(building)
        db = _connect(building)
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # compaction frees the delta's pages: give them back
        db.executescript(_SCHEMA)
        with _Transaction(db):
            db.execute("INSERT INTO meta VALUES ('manifest', ?)", (json.dumps(asdict(manifest)),))
            db.execute("INSERT INTO meta VALUES ('next_key', '0')")
        store = cls(root, kind, db, manifest)
        store._building = building
        return store

    _building: Path | None = None

    def publish(self) -> None:
        """Swap a store made by `create` into place (atomic rename) and describe it in `<kind>.meta.json`."""
        if self._building is None:
            self.write_meta_json()
            return
        _, _, db_path = store_paths(self.root, self.kind)
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()
        self._building.replace(db_path)
        for suffix in ("-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        self._building = None
        self._db = _connect(db_path)
        self._data_version = None
        self._coverage = None
        self.write_meta_json()
        legacy = index_dir(self.root) / f"{self.kind}.lexical.sqlite"  # format 1's lexical index
        for path in (legacy, Path(f"{legacy}-wal"), Path(f"{legacy}-shm")):
            path.unlink(missing_ok=True)

    def write_meta_json(self) -> None:
        _, meta_path, _ = store_paths(self.root, self.kind)
        summary = self.summary()
        atomic_write(
            meta_path,
            json.dumps(
                {
                    "format_version": FORMAT_VERSION,
                    "manifest": asdict(self.manifest),
                    "store": f"{self.kind}.sqlite",
                    "vectors": f"{self.kind}.usearch",
                    "files": summary.files,
                    "chunks": summary.chunks,
                },
                indent=2,
            ),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- reading ---------------------------------------------------------------------------------------------
    def _meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def commit(self) -> str | None:
        with self._lock:
            return self._meta("commit") or None

    def files(self) -> dict[str, FileFacts]:
        with self._lock:
            rows = self._db.execute("SELECT path, hash, mtime_ns, size FROM files").fetchall()
        return {path: FileFacts(path, digest, mtime or 0, size or 0) for path, digest, mtime, size in rows}

    def problems(self) -> list[FileProblem]:
        with self._lock:
            rows = self._db.execute("SELECT path, problem FROM problems ORDER BY rowid").fetchall()
        return [FileProblem(path, problem) for path, problem in rows]

    def summary(self) -> StoreSummary:
        with self._lock:
            files = self._db.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return StoreSummary(files=files, chunks=chunks, commit=self.commit(), problems=tuple(self.problems()))

    def chunks(self, keys: Sequence[int]) -> dict[int, Chunk]:
        out: dict[int, Chunk] = {}
        unique = list(dict.fromkeys(int(k) for k in keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, data FROM chunks WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                out.update((key, _chunk_from_json(data)) for key, data in rows)
        return out

    def all_chunks(self) -> dict[int, Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT key, data FROM chunks ORDER BY key").fetchall()
        return {key: _chunk_from_json(data) for key, data in rows}

    def version(self) -> str:
        """Changes whenever chunks are added or removed (not when vectors arrive)."""
        with self._lock:
            return self._meta("chunks_version") or ""

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        with self._lock:
            row = self._db.execute("SELECT data FROM chunks WHERE chunk_id = ?", (chunk_id,)).fetchone()
        return _chunk_from_json(row[0]) if row else None

    def chunks_of_path(self, path: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM chunks WHERE path = ? ORDER BY key", (path,)).fetchall()
        return [_chunk_from_json(data) for (data,) in rows]

    def keep_warm(self, wait: bool = False) -> None:
        """This store serves a long-running process: keep an in-memory copy of the lexical index once it is big
        enough for FTS5 to be slow (built in the background unless `wait`; FTS5 answers until it is ready)."""
        if self._building is not None:
            return
        if self._lexicon is None:
            with self._lock:
                rows = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            if rows < MEMORY_LEXICON_MIN_CHUNKS:
                return
            from .memory_lexicon import MemoryLexicon

            self._lexicon = MemoryLexicon(store_paths(self.root, self.kind)[2], FTS_TOKENIZER)
        if wait:
            self._lexicon.update()
        else:
            self._lexicon.update_in_background()

    def lexical_search(self, terms: Sequence[str], k: int) -> list[ScoredKey]:
        unique = list(dict.fromkeys(terms))
        if not unique:
            return []
        if self._lexicon is not None:
            with self._lock:
                version = self._meta("chunks_version") or ""
            found = self._lexicon.search(unique, k, version)
            if found is not None:
                return [ScoredKey(key, score) for key, score in found]
            self._lexicon.update_in_background()
        expression = " OR ".join('"' + term.replace('"', '""') + '"' for term in unique)  # FTS5 string quoting
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?",
                    (expression, k),
                ).fetchall()
        except sqlite3.DatabaseError as exc:  # never an empty answer that hides a broken lexical index
            where = store_paths(self.root, self.kind)[2]
            raise IndexCorruptError(
                f"{where}: the lexical index cannot be read ({exc}); run `knowledge reindex-all`"
            ) from exc
        return [ScoredKey(int(key), -float(score)) for key, score in rows]

    def defining(self, names: Sequence[str], limit: int) -> list[int]:
        if not names:
            return []
        with self._lock:
            rows = self._db.execute(
                f"SELECT key FROM chunks WHERE {_SYMBOL_KEY} IN ({','.join('?' * len(names))}) ORDER BY key LIMIT ?",
                (*names, limit),
            ).fetchall()
        return [int(row[0]) for row in rows]

    def lexical_terms(self, keys: Sequence[int]) -> dict[int, str]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        with self._lock:
            rows = self._db.execute(
                f"SELECT rowid, body FROM fts WHERE rowid IN ({','.join('?' * len(unique))})", unique
            ).fetchall()
        return dict(rows)

    def _deltas(self) -> npt.NDArray[np.float32]:
        """The vectors added since the snapshot (rows of `_delta_rows`); empty until the first refresh reads them."""
        if self._delta_matrix is None:
            import numpy as np

            self._delta_matrix = np.zeros((0, self.manifest.dims), dtype=np.float32)
        return self._delta_matrix

    def _refresh(self) -> None:
        """Pick up what other processes committed since the last call: one PRAGMA when nothing changed."""
        import numpy as np

        if self._delta_matrix is None:
            self._delta_matrix = np.zeros((0, self.manifest.dims), dtype=np.float32)
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        self._data_version = version
        identity = SnapshotIdentity.from_json(json.loads(self._meta("snapshot") or "null"))
        if identity != self._snapshot_identity:
            vectors_path = store_paths(self.root, self.kind)[0]
            self._snapshot = (
                Snapshot.open(vectors_path, identity, self.manifest.dims) if identity and identity.count else None
            )
            self._snapshot_identity = identity
        epoch = self._meta("delta_epoch") or ""
        if epoch != self._delta_epoch:
            self._delta_epoch, self._delta_seq = epoch, 0
            self._delta_keys, self._delta_rows = [], {}
            self._delta_matrix = np.zeros((0, self.manifest.dims), dtype=np.float32)
            self._tombstones = {key for (key,) in self._db.execute("SELECT key FROM tombstones")}
        rows = self._db.execute(
            "SELECT seq, key, vector FROM delta WHERE seq > ? ORDER BY seq", (self._delta_seq,)
        ).fetchall()
        if rows:
            fresh = np.frombuffer(b"".join(blob for _, _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
            for offset, (_, key, _) in enumerate(rows):
                self._delta_rows[int(key)] = len(self._delta_keys) + offset
            self._delta_keys.extend(int(key) for _, key, _ in rows)
            self._delta_matrix = np.concatenate([self._delta_matrix, fresh])
            self._delta_seq = rows[-1][0]

    def _invalidate(self) -> None:
        """After our own commits (data_version only moves for other connections' commits)."""
        self._data_version = None
        self._own_writes = True

    def dense_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        import numpy as np

        with self._lock:
            self._refresh()
            scored: dict[int, float] = {}
            if self._snapshot is not None:
                depth = k + len(self._tombstones)
                for key, score in self._snapshot.search(vector, depth):
                    if key not in self._tombstones:
                        scored[key] = score
            if len(self._delta_keys):
                scores = self._deltas() @ np.asarray(vector, dtype=np.float32)
                top = np.argpartition(-scores, min(k, len(scores)) - 1)[:k] if len(scores) > k else range(len(scores))
                for row in top:
                    scored[self._delta_keys[int(row)]] = float(scores[int(row)])
        best = sorted(scored.items(), key=lambda item: (-round(item[1], 6), item[0]))[:k]
        return [ScoredKey(key, score) for key, score in best]

    def vectors(self, keys: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        out: dict[int, npt.NDArray[np.float32]] = {}
        if not unique:
            return out
        with self._lock:
            self._refresh()
            rows = self._db.execute(
                f"SELECT key, in_snapshot FROM chunks WHERE embedded = 1 AND key IN ({','.join('?' * len(unique))})",
                unique,
            ).fetchall()
            in_snapshot = [key for key, flag in rows if flag and key not in self._delta_rows]
            for key, _ in rows:
                row = self._delta_rows.get(key)
                if row is not None:
                    out[key] = self._deltas()[row]
            if in_snapshot and self._snapshot is not None:
                for key, vector in zip(in_snapshot, self._snapshot.get(in_snapshot), strict=True):
                    out[key] = vector
        return out

    def coverage(self) -> Coverage:
        """Counts, recomputed only when some process has committed since the last call (one PRAGMA otherwise)."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if self._coverage is not None and self._coverage[0] == version and not self._own_writes:
                return self._coverage[1]
            total = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            pending = self._db.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0]
            raw = self._meta("embed_progress")
            progress = EmbedProgress(**json.loads(raw)) if raw else None
            coverage = Coverage(chunks=total, embedded=total - pending, progress=progress)
            self._coverage, self._own_writes = (version, coverage), False
        return coverage

    def file(self, path: str) -> FileFacts | None:
        with self._lock:
            row = self._db.execute("SELECT hash, mtime_ns, size FROM files WHERE path = ?", (path,)).fetchone()
        return FileFacts(path, row[0], row[1] or 0, row[2] or 0) if row else None

    def pending(self, limit: int) -> list[Pending]:
        with self._lock:
            rows = self._db.execute(
                "SELECT key, content_hash, embed_text FROM chunks WHERE embedded = 0 ORDER BY key LIMIT ?",
                (limit,),
            ).fetchall()
        return [Pending(key, digest, text or "") for key, digest, text in rows]

    def pending_size(self) -> tuple[int, int]:
        """(chunks, characters of embedding input) still waiting for vectors."""
        with self._lock:
            count, chars = self._db.execute(
                "SELECT count(*), coalesce(sum(chars), 0) FROM chunks WHERE embedded = 0"
            ).fetchone()
        return int(count), int(chars)

    # ---- writing (the caller holds the writer lock) ------------------------------------------------------------
    def apply(self, change: Change) -> None:
        import numpy as np

        with self._lock, _Transaction(self._db) as db:
            next_key = int(self._meta("next_key") or 0)
            removed_delta = False
            for path in change.remove_paths:
                rows = db.execute("SELECT key, in_snapshot FROM chunks WHERE path = ?", (path,)).fetchall()
                if rows:
                    keys = [(key,) for key, _ in rows]
                    db.executemany("INSERT OR IGNORE INTO tombstones (key) VALUES (?)", [(k,) for k, s in rows if s])
                    deleted = db.executemany("DELETE FROM delta WHERE key = ?", keys).rowcount
                    removed_delta = removed_delta or deleted > 0 or any(s for _, s in rows)
                    db.executemany("DELETE FROM fts WHERE rowid = ?", keys)
                    db.executemany("DELETE FROM chunks WHERE key = ?", keys)
                db.execute("DELETE FROM files WHERE path = ?", (path,))
                db.execute("DELETE FROM problems WHERE path = ?", (path,))
            from ..lexical import chunk_text, terms  # a leaf; imported here to keep the store's import cheap

            for item in change.chunks:
                chunk, key = item.chunk, next_key
                next_key += 1
                embedded = item.vector is not None
                db.execute(
                    "INSERT INTO chunks (key, chunk_id, path, content_hash, data, embed_text, chars, embedded) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        chunk.id,
                        chunk.path,
                        chunk.content_hash,
                        chunk_to_json(chunk),
                        None if embedded else chunk.embed_text,
                        len(chunk.embed_text),
                        int(embedded),
                    ),
                )
                body = item.lexical if item.lexical is not None else " ".join(terms(chunk_text(chunk)))
                db.execute("INSERT INTO fts (rowid, body) VALUES (?, ?)", (key, body))
                if embedded:
                    db.execute(
                        "INSERT INTO delta (key, vector) VALUES (?, ?)",
                        (key, np.asarray(item.vector, dtype=np.float32).tobytes()),
                    )
            db.executemany(
                "INSERT OR REPLACE INTO files (path, hash, mtime_ns, size) VALUES (?, ?, ?, ?)",
                [(f.path, f.content_hash, f.mtime_ns, f.size) for f in change.files],
            )
            db.executemany(
                "INSERT INTO problems (path, problem) VALUES (?, ?)", [(p.path, p.problem) for p in change.problems]
            )
            db.execute("INSERT OR REPLACE INTO meta VALUES ('next_key', ?)", (str(next_key),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('chunks_version', ?)", (f"{time.time_ns()}",))
            if change.set_commit:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('commit', ?)", (change.commit or "",))
            if removed_delta:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('delta_epoch', ?)", (f"{time.time_ns()}",))
        self._invalidate()

    def set_commit(self, commit: str | None) -> None:
        with self._lock, _Transaction(self._db) as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('commit', ?)", (commit or "",))
        self._invalidate()

    def add_vectors(self, vectors: dict[int, npt.NDArray[np.float32]]) -> int:
        import numpy as np

        stored = 0
        with self._lock, _Transaction(self._db) as db:
            for key, vector in vectors.items():
                updated = db.execute(
                    "UPDATE chunks SET embedded = 1, embed_text = NULL WHERE key = ? AND embedded = 0", (int(key),)
                ).rowcount
                if updated:
                    db.execute(
                        "INSERT INTO delta (key, vector) VALUES (?, ?)",
                        (int(key), np.asarray(vector, dtype=np.float32).tobytes()),
                    )
                    stored += 1
        self._invalidate()
        return stored

    def record_progress(self, progress: EmbedProgress | None) -> None:
        with self._lock, _Transaction(self._db) as db:
            if progress is None:
                db.execute("DELETE FROM meta WHERE name = 'embed_progress'")
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('embed_progress', ?)", (json.dumps(asdict(progress)),))
        self._invalidate()

    def compact(self, force: bool = False) -> bool:
        import numpy as np

        with self._lock:
            self._refresh()
            base = len(self._snapshot) if self._snapshot is not None else 0
            changes = len(self._delta_keys) + len(self._tombstones)
            if changes == 0 or (not force and changes < max(COMPACT_MIN, base // 4)):
                return False
            delta_keys = list(self._delta_keys)
            delta_matrix = self._deltas().copy()
            tombstones = sorted(self._tombstones)
            if self._snapshot is not None and len(tombstones) <= base // 4:
                index = self._snapshot.writable_copy()
                present = [key for key in tombstones if index.contains(key)]
                if present:
                    index.remove(np.array(present, dtype=np.uint64))
            else:  # many removals: a fresh graph from the live vectors beats a graph full of holes
                index = new_index(self.manifest.dims)
                if self._snapshot is not None:
                    live = [
                        key
                        for (key,) in self._db.execute("SELECT key FROM chunks WHERE in_snapshot = 1 ORDER BY key")
                        if key not in self._delta_rows
                    ]
                    for start in range(0, len(live), 8192):
                        part = live[start : start + 8192]
                        index.add(np.array(part, dtype=np.uint64), self._snapshot.get(part))
            fresh = [i for i, key in enumerate(delta_keys) if not index.contains(key)]
            if fresh:
                index.add(np.array([delta_keys[i] for i in fresh], dtype=np.uint64), delta_matrix[fresh])
            vectors_path = store_paths(self.root, self.kind)[0]
            identity = write_snapshot(vectors_path, index, self._snapshot_identity)
            with _Transaction(self._db) as db:
                db.executemany("UPDATE chunks SET in_snapshot = 1 WHERE key = ?", [(k,) for k in delta_keys])
                db.execute("DELETE FROM delta WHERE seq <= ?", (self._delta_seq,))
                db.executemany("DELETE FROM tombstones WHERE key = ?", [(k,) for k in tombstones])
                db.execute("INSERT OR REPLACE INTO meta VALUES ('snapshot', ?)", (json.dumps(identity.to_json()),))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('delta_epoch', ?)", (f"{time.time_ns()}",))
            self._db.execute("PRAGMA incremental_vacuum")
            self._invalidate()
            return True

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file (cheap; keeps the -wal file small)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")


def read_manifest_json(root: Path, kind: str) -> dict[str, Any] | None:
    """The manifest as `<kind>.meta.json` describes it, without opening SQLite (None when absent or unreadable)."""
    try:
        return json.loads(store_paths(root, kind)[1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
