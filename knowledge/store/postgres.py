"""PostgresStore: one kind's index of one repository and branch in a shared PostgreSQL database (pgvector).

An index is the live row of `knowledge_indexes` for (repository, branch, kind). Each `apply` is one transaction
under an advisory lock on that index, so a reader sees the state before or after it. Vectors go to the chunk rows
(pgvector HNSW, cosine) and to `knowledge_vectors`, a cache keyed by (fingerprint, content hash) that every clone
and branch shares: a chunk some member embedded is never embedded again. The lexical index: the local engine's
terms, Porter-stemmed as FTS5's `porter` does, as a tsvector and postings (index, lexeme, chunk), ranked by BM25.

The schema and index rows are in `pg_schema`, the grants in `pg_access`, the stemming and term counts in
`pg_lexemes`, the ranking SQL in `pg_queries`. psycopg 3 and pgvector (the `postgres` extra) load only when used.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import IndexIncompatibleError, IndexNotFoundError
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
    recent_first,
)
from .pg_graphs import ensure_static_graph, tidy_static_graphs
from .pg_lexemes import add_terms, forget_terms, stems
from .pg_locks import publish_live, take_lock
from .pg_queries import bm25, nearest, nearest_static, vector_array
from .pg_rows import COUNTED, Counts, chunk_row
from .pg_schema import (
    Connection,
    IndexTarget,
    StoreUnavailableError,
    building_pair,
    ensure_vector_index,
    require_grant,
)
from .pg_vectors import remember, take_cached
from .policy import QUIET_PATTERN

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class PostgresStore:
    """One kind's index in PostgreSQL. Safe to share between a server's threads (one lock, one connection)."""

    keeps_static = True

    def __init__(self, target: IndexTarget, conn: Connection, index_id: int, manifest: Manifest, lock_key: int) -> None:
        self.target = target
        self.lock_key = lock_key
        self.kind = target.kind
        self.manifest = manifest
        self.index_id = index_id
        self._conn = conn
        self._lock = threading.RLock()
        self._building = False

    # ---- opening and creating --------------------------------------------------------------------------------
    @classmethod
    def open(cls, target: IndexTarget, conn: Connection) -> PostgresStore:
        row = conn.execute(
            "SELECT id, manifest, lock_key FROM knowledge_indexes "
            "WHERE repository = %s AND branch = %s AND kind = %s AND live",
            (target.repository, target.branch, target.kind),
        ).fetchone()
        if row is None:
            raise IndexNotFoundError(f"{target.describe()}: no index yet; run `knowledge reindex-all`")
        manifest = Manifest(**row[1])
        if manifest.format_version != FORMAT_VERSION:
            raise IndexIncompatibleError(
                f"{target.describe()}: index format {manifest.format_version}, this knowledge reads {FORMAT_VERSION}; "
                "run `knowledge reindex-all`"
            )
        return cls(target, conn, int(row[0]), manifest, int(row[2]))

    @classmethod
    def create(cls, target: IndexTarget, conn: Connection, manifest: Manifest) -> PostgresStore:
        """A new index built beside the live one (invisible to readers); `publish()` swaps it in."""
        ensure_vector_index(conn, manifest.dims)
        require_grant(conn, target)
        index_id, key = conn.execute(
            "INSERT INTO knowledge_indexes (repository, branch, kind, manifest) VALUES (%s, %s, %s, %s) "
            "RETURNING id, lock_key",
            (target.repository, target.branch, target.kind, json.dumps(asdict(manifest))),
        ).fetchone()
        # a fresh random key only this repository's roles can read: nobody else can hold it, so never a wait
        if not conn.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", building_pair(int(key))).fetchone()[0]:
            raise StoreUnavailableError(f"{target.describe()}: the new index's lock is taken; run it again")
        store = cls(target, conn, int(index_id), manifest, int(key))
        store._building = True
        return store

    def publish(self) -> None:
        """Make this index the live one of its repository, branch and kind, in one transaction."""
        with self._lock:  # a first build's loaded rows get their graph here, before anyone waits on it
            ensure_static_graph(self._conn, self.index_id)
        if not self._building:
            return
        with self._lock:
            publish_live(self._conn, self.target, self.index_id)
            tidy_static_graphs(self._conn)  # the replaced index's graph
        self._conn.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", building_pair(self.lock_key))
        self._building = False

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ---- reading ---------------------------------------------------------------------------------------------
    def _one(self, sql: str, params: Sequence[object] = ()) -> Any:  # noqa: ANN401
        with self._lock:
            return self._conn.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        with self._lock:
            rows: list[Any] = self._conn.execute(sql, params).fetchall()
        return rows

    def commit(self) -> str | None:
        row = self._one("SELECT commit FROM knowledge_indexes WHERE id = %s", (self.index_id,))
        return (row[0] or None) if row else None

    def files(self) -> dict[str, FileFacts]:
        rows = self._all("SELECT path, hash, mtime_ns, size FROM knowledge_files WHERE index_id = %s", (self.index_id,))
        return {path: FileFacts(path, digest, mtime or 0, size or 0) for path, digest, mtime, size in rows}

    def file(self, path: str) -> FileFacts | None:
        row = self._one(
            "SELECT hash, mtime_ns, size FROM knowledge_files WHERE index_id = %s AND path = %s", (self.index_id, path)
        )
        return FileFacts(path, row[0], row[1] or 0, row[2] or 0) if row else None

    def problems(self) -> list[FileProblem]:
        query = "SELECT path, problem FROM knowledge_problems WHERE index_id = %s ORDER BY ctid"
        return [FileProblem(path, problem) for path, problem in self._all(query, (self.index_id,))]

    def summary(self) -> StoreSummary:
        files = self._one("SELECT count(*) FROM knowledge_files WHERE index_id = %s", (self.index_id,))[0]
        chunks = self._one("SELECT count(*) FROM knowledge_chunks WHERE index_id = %s", (self.index_id,))[0]
        return StoreSummary(files=files, chunks=chunks, commit=self.commit(), problems=tuple(self.problems()))

    def chunks(self, keys: Sequence[int]) -> dict[int, Chunk]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        rows = self._all(
            "SELECT key, data FROM knowledge_chunks WHERE index_id = %s AND key = ANY(%s)", (self.index_id, unique)
        )
        return {int(key): chunk_from_dict(data) for key, data in rows}

    def all_chunks(self) -> dict[int, Chunk]:
        rows = self._all("SELECT key, data FROM knowledge_chunks WHERE index_id = %s ORDER BY key", (self.index_id,))
        return {int(key): chunk_from_dict(data) for key, data in rows}

    def chunks_of_path(self, path: str) -> list[Chunk]:
        rows = self._all(
            "SELECT data FROM knowledge_chunks WHERE index_id = %s AND path = %s ORDER BY key", (self.index_id, path)
        )
        return [chunk_from_dict(data) for (data,) in rows]

    def keeps_calls(self) -> bool:
        """Who calls what is read by name, through a GIN index over each chunk's calls (schema 11)."""
        return True

    def callers(self, calls: Sequence[str]) -> list[tuple[str, int]]:
        if not calls:
            return []
        rows = self._all("SELECT called, caller FROM knowledge_callers(%s, %s::text[])", (self.index_id, list(calls)))
        return list(dict.fromkeys((str(name), int(key)) for name, key in rows))

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self._one(
            "SELECT data FROM knowledge_chunks WHERE index_id = %s AND chunk_id = %s LIMIT 1", (self.index_id, chunk_id)
        )
        return chunk_from_dict(row[0]) if row else None

    def version(self) -> str:
        row = self._one("SELECT chunks_version FROM knowledge_indexes WHERE id = %s", (self.index_id,))
        return row[0] if row else ""

    def dense_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        with self._lock, self._conn.transaction():
            return nearest(self._conn, self.index_id, int(self.manifest.dims), vector, k)

    def static_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        with self._lock, self._conn.transaction():
            return nearest_static(self._conn, self.index_id, vector, k)

    def keep_warm(self, wait: bool = False) -> None:
        """Nothing to keep: the database holds its own caches."""

    def lexical_search(self, terms: Sequence[str], k: int) -> list[ScoredKey]:
        with self._lock:
            return bm25(self._conn, self.index_id, stems(terms), k)

    def lexical_terms(self, keys: Sequence[int]) -> dict[int, str]:
        """Each chunk's lexical terms. A doc section's are not kept (only code's are read, by the exact-name rule:
        480 MB at a million sections), so they are made again from its text, as the chunker made them."""
        from ..lexical import chunk_text, terms

        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        rows = self._all(
            "SELECT key, lexical, CASE WHEN lexical = '' THEN data END FROM knowledge_chunks "
            "WHERE index_id = %s AND key = ANY(%s)",
            (self.index_id, unique),
        )
        return {
            int(key): text if data is None else " ".join(terms(chunk_text(chunk_from_dict(data))))
            for key, text, data in rows
        }

    def defining(self, names: Sequence[str], limit: int) -> list[int]:
        if not names:
            return []
        rows = self._all(
            "SELECT key FROM knowledge_chunks WHERE index_id = %s AND symbol = ANY(%s) ORDER BY key LIMIT %s",
            (self.index_id, list(names), limit),
        )
        return [int(row[0]) for row in rows]

    def vectors(self, keys: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        import numpy as np

        rows = self._embedded("embedding", keys)
        return {int(key): np.asarray(vector_array(vector), dtype=np.float32) for key, vector in rows}

    def similarities(self, keys: Sequence[int], vector: npt.NDArray[np.float32]) -> dict[int, float]:
        """Computed by the database: a number per chunk comes back, not its vector (a 768-d vector is ~8 KB of text
        for psycopg to parse: 50 of them were 12 ms of every search)."""
        import numpy as np

        rows = self._embedded("1 - (embedding <=> %s::vector)", keys, np.asarray(vector, dtype=np.float32))
        return {int(key): float(similarity) for key, similarity in rows}

    def _embedded(self, expression: str, keys: Sequence[int], *params: object) -> list[Any]:
        """(key, `expression` over the chunk's embedding) for those of `keys` that have one."""
        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return []
        return self._all(
            f"SELECT key, {expression} FROM knowledge_chunks "
            "WHERE index_id = %s AND key = ANY(%s) AND embedding IS NOT NULL",
            (*params, self.index_id, unique),
        )

    def coverage(self) -> Coverage:
        total, embedded, raw, rows, waiting = self._one(
            "SELECT doc_count, embedded_count, progress, static_count, static_waiting FROM knowledge_indexes "
            "WHERE id = %s",
            (self.index_id,),
        )
        progress = EmbedProgress(**raw) if raw else None
        return Coverage(int(total), int(embedded), progress, static=int(waiting), static_rows=int(rows))

    def pending(self, limit: int, first: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Pending]:
        select = (
            "SELECT key, content_hash, embed_text, path FROM knowledge_chunks WHERE index_id = %s "
            "AND embedding IS NULL AND NOT (path = ANY(%s)) AND {} path = ANY(%s) ORDER BY (path ~* %s), "
            "CASE WHEN data->>'exported' = 'true' THEN 0 WHEN coalesce(data->>'symbol', '') <> '' THEN 1 ELSE 2 END, "
            "key"  # policy.FILL_ORDER
        )
        skipped = list(skip)
        recent = self._all(select.format(""), (self.index_id, skipped, list(first), QUIET_PATTERN)) if first else []
        rest = self._all(
            select.format("NOT") + " LIMIT %s",
            (self.index_id, skipped, list(first), QUIET_PATTERN, max(0, limit - len(recent))),
        )
        return recent_first(first, recent, rest, limit)

    def pending_size(self, skip: Sequence[str] = ()) -> tuple[int, int]:
        count, chars = self._one(
            "SELECT count(*), coalesce(sum(chars), 0) FROM knowledge_chunks WHERE index_id = %s AND embedding IS NULL "
            "AND NOT (path = ANY(%s))",
            (self.index_id, list(skip)),
        )
        return int(count), int(chars)

    # ---- writing ---------------------------------------------------------------------------------------------
    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One transaction holding this index's row lock: writers of one index take turns."""
        with self._lock, self._conn.transaction():
            take_lock(self._conn, self.index_id, self.target.describe())
            yield self._conn

    def apply(self, change: Change) -> None:
        dims = int(self.manifest.dims)
        repository = self.target.repository
        with self._writing() as conn:
            counts = Counts()
            if change.remove_paths:
                paths = sorted(change.remove_paths)
                counts.subtract(conn.execute(COUNTED + "path = ANY(%s)", (self.index_id, paths)).fetchone())
                forget_terms(conn, self.index_id, paths)
                # through the owner's function: a member holds no DELETE (it would let it lock every team's table)
                conn.execute("SELECT knowledge_delete_paths(%s, %s)", (self.index_id, paths))
            rows = [chunk_row(self.index_id, repository, item, dims) for item in change.chunks]
            if rows:
                before = conn.execute("SELECT coalesce(max(key), 0) FROM knowledge_chunks").fetchone()[0]
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO knowledge_chunks (index_id, repository, chunk_id, path, content_hash, data, "
                        "embed_text, chars, symbol, lexical, lex, lex_len, dims, embedding, static) "
                        "VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::tsvector, %s, %s, %s, %s)",
                        rows,
                    )
                add_terms(conn, self.index_id, repository, before)
                take_cached(conn, self.index_id, repository, self.manifest.fingerprint, dims, before)
                counts.add(conn.execute(COUNTED + "key > %s", (self.index_id, before)).fetchone())
                remember(
                    conn, [(repository, self.manifest.fingerprint, str(r[4]), r[13]) for r in rows if r[13] is not None]
                )
            if change.files:
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO knowledge_files (index_id, repository, path, hash, mtime_ns, size) "
                        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (index_id, path) DO UPDATE "
                        "SET hash = excluded.hash, mtime_ns = excluded.mtime_ns, size = excluded.size",
                        [(self.index_id, repository, f.path, f.content_hash, f.mtime_ns, f.size) for f in change.files],
                    )
            if change.problems:
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO knowledge_problems (index_id, repository, path, problem) VALUES (%s, %s, %s, %s)",
                        [(self.index_id, repository, p.path, p.problem) for p in change.problems],
                    )
            # the index's counts move by what this change removed and added: recounting every row of the index on
            # every write made a first build quadratic (a million chunks: 1,562 writes, each reading the index)
            conn.execute(
                "UPDATE knowledge_indexes SET chunks_version = %s, updated_at = now(), doc_count = doc_count + %s, "
                "embedded_count = embedded_count + %s, total_len = total_len + %s, static_count = static_count + %s, "
                "static_waiting = static_waiting + %s"
                + (", commit = %s" if change.set_commit else "")
                + " WHERE id = %s",
                (
                    f"{time.time_ns()}",
                    *counts.values(),
                    *((change.commit or "",) if change.set_commit else ()),
                    self.index_id,
                ),
            )

    def set_commit(self, commit: str | None) -> None:
        with self._writing() as conn:
            conn.execute("UPDATE knowledge_indexes SET commit = %s WHERE id = %s", (commit or "", self.index_id))

    def add_vectors(self, vectors: dict[int, npt.NDArray[np.float32]]) -> int:
        import numpy as np

        if not vectors:
            return 0
        dims = int(self.manifest.dims)
        stored = staged = 0
        with self._writing() as conn:
            for key, vector in vectors.items():
                row = conn.execute(
                    "UPDATE knowledge_chunks SET embedding = %s, dims = %s, embed_text = NULL "
                    "WHERE key = %s AND index_id = %s AND embedding IS NULL RETURNING content_hash, static IS NOT NULL",
                    (np.asarray(vector, dtype=np.float32), dims, int(key), self.index_id),
                ).fetchone()
                if row is not None:
                    stored, staged = stored + 1, staged + bool(row[1])
                    vector = np.asarray(vector, dtype=np.float32)
                    remember(conn, [(self.target.repository, self.manifest.fingerprint, row[0], vector)])
            conn.execute(
                "UPDATE knowledge_indexes SET embedded_count = embedded_count + %s, "
                "static_waiting = static_waiting - %s WHERE id = %s",
                (stored, staged, self.index_id),
            )
        return stored

    def record_progress(self, progress: EmbedProgress | None) -> None:
        value = None if progress is None else json.dumps(asdict(progress))
        with self._lock:
            self._conn.execute("UPDATE knowledge_indexes SET progress = %s WHERE id = %s", (value, self.index_id))

    def compact(self, force: bool = False) -> bool:
        """Nothing to fold: PostgreSQL keeps the HNSW index current on every write."""
        return False
