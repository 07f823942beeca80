"""LocalStore: the default engine, one kind's index under `.knowledge/`.

- `<kind>.meta.json`: the manifest (model, dims, fingerprint, thresholds), for people and other tools.
- `<kind>.sqlite`: chunks, per-file facts, problems, the FTS5 lexical index, the static rows, vectors not yet in the
  HNSW snapshot ("delta"), keys removed from it ("tombstones"), the commit and the manifest. Every write is one
  SQLite transaction, so a one-file commit writes work proportional to that file.
- `<kind>.usearch`: the HNSW snapshot (see vectors.py), rebuilt only when the delta grows past a share of it.

The files and schema are in `local_files`, what is derived from each chunk (its terms, its calls) in `local_derived`,
the dense side (snapshot, delta, tombstones) in `local_vectors`, the lexical side (FTS5, the in-memory copy) in
`local_lexical`; this module is the store those make together.
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
from typing import TYPE_CHECKING

from ..errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from ..fs import create_private_file, private_dir
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
    index_dir,
    recent_first,
    static_blocks,
)
from .local_derived import CALLS_KEPT, add_calls, add_lexical, callers_of, forget_path, mark_new, upgrade
from .local_files import (
    CHUNK_COLUMNS,
    SCHEMA,
    WRITTEN_COLUMNS,
    Transaction,
    add_later_tables,
    chunk_by_id,
    chunk_from_row,
    chunk_row,
    connect,
    packed_embed_text,
    pending_rows,
    read_meta,
    store_paths,
    write_meta_json,
)
from .local_lexical import LocalLexical
from .local_static import LocalStatic
from .local_vectors import LocalVectors
from .vectors import remove_stale_temp_files

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class LocalStore:
    """One kind's index in SQLite + USearch. Safe to share between a server's threads (one lock)."""

    keeps_static = True

    def __init__(self, root: Path, kind: str, db: sqlite3.Connection, manifest: Manifest) -> None:
        self.root = root
        self.kind = kind
        self.manifest = manifest
        self._db = db
        self._lock = threading.RLock()
        self._dense = LocalVectors(store_paths(root, kind)[0], manifest.dims)
        self._static = LocalStatic()
        self._coverage: tuple[int, Coverage] | None = None
        self._own_writes = False
        self._lexical = LocalLexical(store_paths(root, kind)[2], self._lock)

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
            db = connect(db_path)
            with contextlib.suppress(sqlite3.OperationalError):  # an index from before them, or a read-only folder
                add_later_tables(db)
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
        db = connect(building)
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # compaction frees the delta's pages: give them back
        db.executescript(SCHEMA)
        with Transaction(db):
            db.execute("INSERT INTO meta VALUES ('manifest', ?)", (json.dumps(asdict(manifest)),))
            db.execute("INSERT INTO meta VALUES ('next_key', '0')")
            mark_new(db)
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
        self._db = connect(db_path)
        self._dense.invalidate()
        self._coverage = None
        self.write_meta_json()
        legacy = index_dir(self.root) / f"{self.kind}.lexical.sqlite"  # format 1's lexical index
        for path in (legacy, Path(f"{legacy}-wal"), Path(f"{legacy}-shm")):
            path.unlink(missing_ok=True)

    def write_meta_json(self) -> None:
        write_meta_json(self.root, self.kind, self.manifest, self.summary())

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- reading ---------------------------------------------------------------------------------------------
    def _meta(self, name: str) -> str | None:
        return read_meta(self._db, name)

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
            commit = self._meta("commit") or None
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, {CHUNK_COLUMNS} FROM chunks WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                out.update((row[0], chunk_from_row(*row[1:], commit=commit)) for row in rows)
        return out

    def all_chunks(self) -> dict[int, Chunk]:
        with self._lock:
            rows = self._db.execute(f"SELECT key, {CHUNK_COLUMNS} FROM chunks ORDER BY key").fetchall()
        return {row[0]: chunk_from_row(*row[1:], commit=self.commit()) for row in rows}

    def version(self) -> str:
        """Changes whenever chunks are added or removed (not when vectors arrive)."""
        with self._lock:
            return self._meta("chunks_version") or ""

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        with self._lock:
            return chunk_by_id(self._db, chunk_id, self.commit())

    def chunks_of_path(self, path: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE path = ? ORDER BY key", (path,)
            ).fetchall()
        return [chunk_from_row(*row, commit=self.commit()) for row in rows]

    def keeps_calls(self) -> bool:
        """Whether `callers` answers for every chunk (an index from before the calls table: after its next write)."""
        with self._lock:
            return self._meta(CALLS_KEPT) is not None

    def callers(self, calls: Sequence[str]) -> list[tuple[str, int]]:
        with self._lock:
            return callers_of(self._db, calls)

    def keep_warm(self, wait: bool = False) -> None:
        """This store serves a long-running process: keep in memory what makes its queries faster."""
        if self._building is None:
            self._lexical.keep_warm(self._db, wait)

    def lexical_search(self, terms: Sequence[str], k: int) -> list[ScoredKey]:
        return self._lexical.search(self._db, terms, k)

    def defining(self, names: Sequence[str], limit: int) -> list[int]:
        return self._lexical.defining(self._db, names, limit)

    def lexical_terms(self, keys: Sequence[int]) -> dict[int, str]:
        return self._lexical.terms_of(self._db, keys)

    def _invalidate(self) -> None:
        """After our own commits (data_version only moves for other connections' commits)."""
        self._dense.invalidate()
        self._static.invalidate()
        self._own_writes = True

    def dense_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        with self._lock:
            return self._dense.search(self._db, vector, k)

    def vectors(self, keys: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        with self._lock:
            return self._dense.get(self._db, keys)

    def similarities(self, keys: Sequence[int], vector: npt.NDArray[np.float32]) -> dict[int, float]:
        return {key: float(stored @ vector) for key, stored in self.vectors(keys).items()}

    def static_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        with self._lock:
            rows = self._static.current(self._db)
        return rows.nearest(vector, k) if rows is not None else []  # the lock free for the lexical side meanwhile

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
            static_rows, static = self._static.counts(self._db)
            coverage = Coverage(total, total - pending, progress, static=static, static_rows=static_rows)
            self._coverage, self._own_writes = (version, coverage), False
        return coverage

    def file(self, path: str) -> FileFacts | None:
        with self._lock:
            row = self._db.execute("SELECT hash, mtime_ns, size FROM files WHERE path = ?", (path,)).fetchone()
        return FileFacts(path, row[0], row[1] or 0, row[2] or 0) if row else None

    def pending(self, limit: int, first: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Pending]:
        with self._lock:
            recent, rest = pending_rows(self._db, first, limit, skip)
        return recent_first(first, recent, rest, limit)

    def pending_size(self, skip: Sequence[str] = ()) -> tuple[int, int]:
        """(chunks, characters of embedding input) still waiting for vectors, none of the files in `skip`."""
        with self._lock:
            count, chars = self._db.execute(
                "SELECT count(*), coalesce(sum(chars), 0) FROM chunks WHERE embedded = 0 "
                "AND path NOT IN (SELECT value FROM json_each(?))",
                (json.dumps(list(skip)),),
            ).fetchone()
        return int(count), int(chars)

    # ---- writing (the caller holds the writer lock) ------------------------------------------------------------
    def apply(self, change: Change) -> None:
        import numpy as np

        with self._lock, Transaction(self._db) as db:
            upgrade(db)  # an index from before the current forms moves to them
            next_key = int(self._meta("next_key") or 0)
            removed = [forget_path(db, path) for path in change.remove_paths]  # every path, not the first only
            removed_delta = any(removed)
            from ..lexical import chunk_text, terms  # a leaf; imported here to keep the store's import cheap

            calls: list[tuple[int, str]] = []
            static: dict[int, npt.NDArray[np.float32]] = {}
            bodies: list[tuple[int, str]] = []
            for item in change.chunks:
                chunk, key = item.chunk, next_key
                next_key += 1
                embedded = item.vector is not None
                db.execute(
                    f"INSERT INTO chunks (key, {WRITTEN_COLUMNS}, embed_text, chars, embedded) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        *chunk_row(chunk),
                        None if embedded else packed_embed_text(chunk.embed_text, chunk.content, chunk.path),
                        len(chunk.embed_text),
                        int(embedded),
                    ),
                )
                calls += [(key, name) for name in dict.fromkeys(chunk.calls)]
                bodies.append((key, item.lexical if item.lexical is not None else " ".join(terms(chunk_text(chunk)))))
                if embedded:
                    db.execute(
                        "INSERT INTO delta (key, vector) VALUES (?, ?)",
                        (key, np.asarray(item.vector, dtype=np.float32).tobytes()),
                    )
                if item.static is not None:
                    static[key] = np.asarray(item.static, dtype=np.float32)
            add_calls(db, calls)
            add_lexical(db, bodies)
            if static:
                static_blocks.append(db, list(static), np.stack(list(static.values())))
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
        with self._lock, Transaction(self._db) as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('commit', ?)", (commit or "",))
        self._invalidate()

    def add_vectors(self, vectors: dict[int, npt.NDArray[np.float32]]) -> int:
        import numpy as np

        stored = 0
        with self._lock, Transaction(self._db) as db:
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
        with self._lock, Transaction(self._db) as db:
            if progress is None:
                db.execute("DELETE FROM meta WHERE name = 'embed_progress'")
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('embed_progress', ?)", (json.dumps(asdict(progress)),))
        self._invalidate()

    def compact(self, force: bool = False) -> bool:
        with self._lock:
            compacted = self._dense.compact(self._db, force)
        if compacted:
            self._invalidate()
        return compacted
