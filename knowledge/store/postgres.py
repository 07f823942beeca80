"""PostgresStore: one kind's index of one repository and branch in a shared PostgreSQL database (pgvector).

Many repositories, branches and kinds live in one database; an index is the live row of `knowledge_indexes` for
(repository, branch, kind). Each `apply` is one transaction under an advisory lock on that index, so a reader sees the
state before or after it. Vectors go to the chunk rows (pgvector HNSW, cosine) and to `knowledge_vectors`, a cache
keyed by (index fingerprint, content hash) that every clone and branch shares: a chunk some member embedded is never
embedded again. The lexical index is a tsvector of the same terms the local engine indexes (Porter-stemmed, like
SQLite's FTS5 `porter` tokenizer), ranked with the same BM25 formula.

psycopg 3 and pgvector are the optional `postgres` extra; they are imported only when this engine is used.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import IndexIncompatibleError, IndexNotFoundError, KnowledgeError
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
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCHEMA_VERSION = 3
_MIGRATION_LOCK = 0x4B4E4F57  # advisory lock key held while the schema is created or migrated
_BUILDING_LOCK = 7411  # (this, index id): held by the process building a not-yet-live index
BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults, so both engines rank alike
RARE_SHARE, PRUNE_FROM_CHUNKS = 0.05, 20_000  # see lexical_search
EXACT_SCAN_MAX = 20_000  # an index with at most this many vectors is searched exactly (see dense_search)
MAX_POSITION = 16383  # tsvector positions stop here

_ACCESS_POLICY = """
    NOT EXISTS (SELECT 1 FROM knowledge_grants g WHERE g.repository = {table}.repository)
    OR EXISTS (SELECT 1 FROM knowledge_grants g WHERE g.repository = {table}.repository
               AND pg_has_role(current_user, g.grantee, 'MEMBER'))
"""
_SCHEMA_V1 = """
CREATE TABLE knowledge_indexes (
    id bigserial PRIMARY KEY,
    repository text NOT NULL, branch text NOT NULL, kind text NOT NULL,
    live boolean NOT NULL DEFAULT false,
    manifest jsonb NOT NULL,
    commit text, chunks_version text NOT NULL DEFAULT '', progress jsonb,
    doc_count bigint NOT NULL DEFAULT 0, total_len bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now());
CREATE UNIQUE INDEX knowledge_indexes_live ON knowledge_indexes (repository, branch, kind) WHERE live;
CREATE TABLE knowledge_chunks (
    key bigserial PRIMARY KEY,
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL,
    chunk_id text NOT NULL, path text NOT NULL, content_hash text NOT NULL, data jsonb NOT NULL,
    embed_text text, chars integer NOT NULL DEFAULT 0, symbol text,
    lexical text NOT NULL, lex tsvector NOT NULL, lex_len integer NOT NULL,
    dims integer, embedding vector);
CREATE INDEX knowledge_chunks_path ON knowledge_chunks (index_id, path);
CREATE INDEX knowledge_chunks_id ON knowledge_chunks (index_id, chunk_id);
CREATE INDEX knowledge_chunks_symbol ON knowledge_chunks (index_id, symbol) WHERE symbol IS NOT NULL;
CREATE INDEX knowledge_chunks_pending ON knowledge_chunks (index_id, key) WHERE embedding IS NULL;
CREATE INDEX knowledge_chunks_lex ON knowledge_chunks USING gin (lex);
CREATE TABLE knowledge_files (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, path text NOT NULL, hash text NOT NULL, mtime_ns bigint, size bigint,
    PRIMARY KEY (index_id, path));
CREATE TABLE knowledge_problems (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, path text NOT NULL, problem text NOT NULL);
CREATE INDEX knowledge_problems_path ON knowledge_problems (index_id, path);
CREATE TABLE knowledge_vectors (
    fingerprint text NOT NULL, content_hash text NOT NULL, embedding vector NOT NULL,
    PRIMARY KEY (fingerprint, content_hash));
CREATE TABLE knowledge_grants (repository text NOT NULL, grantee name NOT NULL, PRIMARY KEY (repository, grantee));
"""
# Version 2: document frequencies per index and lexeme, and each index's count of embedded chunks, kept by every
# write, so neither BM25 nor coverage counts rows at query time.
_SCHEMA_V2 = """
ALTER TABLE knowledge_indexes ADD COLUMN embedded_count bigint NOT NULL DEFAULT 0;
UPDATE knowledge_indexes i
    SET embedded_count = (SELECT count(embedding) FROM knowledge_chunks c WHERE c.index_id = i.id);
CREATE TABLE knowledge_terms (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, lexeme text NOT NULL, df integer NOT NULL,
    PRIMARY KEY (index_id, lexeme));
INSERT INTO knowledge_terms (index_id, repository, lexeme, df)
    SELECT c.index_id, min(c.repository), u.lexeme, count(*)
    FROM knowledge_chunks c, unnest(tsvector_to_array(c.lex)) AS u(lexeme) GROUP BY c.index_id, u.lexeme;
"""
# Version 3: the vector cache belongs to a repository (row-level security like the chunks), so a team role can
# neither read nor poison another team's cache; the HNSW indexes of the known models' sizes are made here, by the
# owner, once, rather than by every writer (PostgreSQL lets only a table's owner create its indexes).
_SCHEMA_V3 = """
CREATE TABLE knowledge_vectors_v3 (
    repository text NOT NULL, fingerprint text NOT NULL, content_hash text NOT NULL, embedding vector NOT NULL,
    PRIMARY KEY (repository, fingerprint, content_hash));
INSERT INTO knowledge_vectors_v3 (repository, fingerprint, content_hash, embedding)
    SELECT DISTINCT ON (c.repository, i.manifest->>'fingerprint', c.content_hash)
           c.repository, i.manifest->>'fingerprint', c.content_hash, c.embedding
    FROM knowledge_chunks c JOIN knowledge_indexes i ON i.id = c.index_id WHERE c.embedding IS NOT NULL;
DROP TABLE knowledge_vectors;
ALTER TABLE knowledge_vectors_v3 RENAME TO knowledge_vectors;
ALTER INDEX knowledge_vectors_v3_pkey RENAME TO knowledge_vectors_pkey;
"""
KNOWN_DIMS = (384, 768)  # all-MiniLM-L6-v2, all-mpnet-base-v2
_PROTECTED_TABLES = ("knowledge_indexes", "knowledge_chunks", "knowledge_files", "knowledge_problems")
# What a team role may do (docs/teams.md, Access): its own repositories' rows (row-level security), never the grants,
# the schema version or another repository's vector cache.
MEMBER_TABLES = (*_PROTECTED_TABLES, "knowledge_terms", "knowledge_vectors")
READ_ONLY_TABLES = ("knowledge_grants", "knowledge_schema")


class StoreUnavailableError(KnowledgeError):
    """The configured database cannot be reached or used."""


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}{host}", parts.path, parts.query, parts.fragment))


def is_postgres_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def connect(url: str) -> Any:  # noqa: ANN401 - a psycopg.Connection (optional dependency)
    """An autocommit connection with pgvector's types registered and the schema at SCHEMA_VERSION."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise StoreUnavailableError(
            f"store = {redacted(url)}: the PostgreSQL engine needs its extra: pip install 'repo-knowledge[postgres]'"
        ) from exc
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        said = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailableError(
            f"{redacted(url)}: cannot connect ({said}); the local index is unaffected "
            "(unset `store` / KNOWLEDGE_STORE to use it)"
        ) from exc
    try:
        migrate(conn)
        register_vector(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        conn.close()
        raise StoreUnavailableError(
            f"{redacted(url)}: the knowledge schema is missing or older than this knowledge ({SCHEMA_VERSION}) and "
            "this role may not change it: the database owner runs `knowledge teams setup` once"
        ) from exc
    except psycopg.Error as exc:
        conn.close()
        raise StoreUnavailableError(f"{redacted(url)}: cannot prepare the knowledge schema ({exc})") from exc
    return conn


def migrate(conn: Any) -> int:  # noqa: ANN401
    """Create or upgrade the schema (one transaction, under an advisory lock); returns the version now."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        exists = conn.execute("SELECT to_regclass('knowledge_schema') IS NOT NULL").fetchone()[0]
        version = conn.execute("SELECT max(version) FROM knowledge_schema").fetchone()[0] if exists else 0
        if version and version > SCHEMA_VERSION:
            raise StoreUnavailableError(
                f"the database holds knowledge schema {version}; this knowledge knows {SCHEMA_VERSION}: upgrade it"
            )
        if version == SCHEMA_VERSION:
            return version
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE IF NOT EXISTS knowledge_schema (version integer NOT NULL)")
        if version < 1:
            conn.execute(_SCHEMA_V1)
            for table in _PROTECTED_TABLES:
                _protect(conn, table)
        if version < 2:
            conn.execute(_SCHEMA_V2)
            _protect(conn, "knowledge_terms")
        if version < 3:
            conn.execute(_SCHEMA_V3)
            _protect(conn, "knowledge_vectors")
            for dims in KNOWN_DIMS:
                conn.execute(_hnsw_sql(dims))
        conn.execute("INSERT INTO knowledge_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
    return SCHEMA_VERSION


def _protect(conn: Any, table: str) -> None:  # noqa: ANN401
    conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    conn.execute(f"CREATE POLICY knowledge_by_repository ON {table} USING ({_ACCESS_POLICY.format(table=table)})")


def grant(conn: Any, repository: str, role: str) -> None:  # noqa: ANN401
    """Limit `repository` to members of `role` (a repository without grants is readable by every role). Owner only."""
    conn.execute(
        "INSERT INTO knowledge_grants (repository, grantee) VALUES (%s, %s) ON CONFLICT DO NOTHING", (repository, role)
    )


def revoke(conn: Any, repository: str, role: str) -> int:  # noqa: ANN401
    """Take `repository` away from `role`; returns how many grants were removed. Owner only."""
    return int(
        conn.execute("DELETE FROM knowledge_grants WHERE repository = %s AND grantee = %s", (repository, role)).rowcount
    )


def grants(conn: Any, repository: str) -> list[str]:  # noqa: ANN401
    rows = conn.execute("SELECT grantee FROM knowledge_grants WHERE repository = %s ORDER BY 1", (repository,))
    return [str(r[0]) for r in rows.fetchall()]


def allow_member_role(conn: Any, role: str) -> None:  # noqa: ANN401
    """Give `role` (and so every role that is a member of it) what a team member needs, and nothing more."""
    from psycopg import sql

    name = sql.Identifier(role)
    with conn.transaction():
        for table in MEMBER_TABLES:
            conn.execute(
                sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(sql.Identifier(table), name)
            )
        for table in READ_ONLY_TABLES:
            conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(sql.Identifier(table), name))
            conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), name))
        conn.execute(
            sql.SQL("GRANT USAGE ON SEQUENCE knowledge_indexes_id_seq, knowledge_chunks_key_seq TO {}").format(name)
        )


@dataclass(frozen=True, slots=True)
class IndexTarget:
    """Which index of the shared database: the repository's identity, the branch and the kind."""

    url: str
    repository: str
    branch: str
    kind: str

    def describe(self) -> str:
        return f"{redacted(self.url)} ({self.repository[:12]} @ {self.branch}, {self.kind})"


_stemmer_lock = threading.Lock()


@contextmanager
def _porter() -> Iterator[Any]:
    import snowballstemmer

    with _stemmer_lock:
        if not hasattr(_porter, "stemmer"):
            _porter.stemmer = snowballstemmer.stemmer("porter")  # type: ignore[attr-defined]
        yield _porter.stemmer  # type: ignore[attr-defined]


def _lexeme(word: str) -> str:
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
    literal = " ".join(f"{_lexeme(stem)}:{','.join(map(str, sorted(set(p))))}" for stem, p in positions.items())
    return literal, len(stems)


def _stem_all(terms: Sequence[str]) -> list[str]:
    """Porter stems as SQLite FTS5's `porter` tokenizer makes them: tokens under 3 or over 64 characters pass as is."""
    with _porter() as porter:
        return [porter.stemWord(t) if 3 <= len(t) <= 64 else t for t in terms]


def _stems(terms: Sequence[str]) -> list[str]:
    return [stem for stem in dict.fromkeys(_stem_all(terms)) if stem]


def symbol_key(chunk: Chunk) -> str | None:
    """The name a chunk defines as the ranking rules compare names: lower case, no underscores."""
    return chunk.symbol.replace("_", "").lower() or None


def _hnsw_sql(dims: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS knowledge_chunks_hnsw_{int(dims)} ON knowledge_chunks "
        f"USING hnsw ((embedding::vector({int(dims)})) vector_cosine_ops) WHERE dims = {int(dims)}"
    )


def ensure_vector_index(conn: Any, dims: int) -> None:  # noqa: ANN401
    """The HNSW index (cosine) over the vectors of `dims` dimensions; PostgreSQL keeps it current from then on.

    Only the tables' owner may create it: the known sizes are made by the migration; another size is made here when
    this role owns the table, and otherwise refused in one line that says who must run what."""
    name = f"knowledge_chunks_hnsw_{int(dims)}"
    if conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]:
        return
    owner = conn.execute(
        "SELECT pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables WHERE tablename = 'knowledge_chunks'"
    ).fetchone()
    if not (owner and owner[0]):
        raise StoreUnavailableError(
            f"the shared store has no vector index for {int(dims)}-dimension models and this role may not create "
            f"one: the database owner runs `knowledge teams setup` once with this model configured"
        )
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(_hnsw_sql(dims))


def _array(vector: Any) -> Any:  # noqa: ANN401 - pgvector returns a Vector or a numpy array by protocol
    return vector.to_numpy() if hasattr(vector, "to_numpy") else vector


def live_index_id(conn: Any, target: IndexTarget) -> int | None:  # noqa: ANN401
    row = conn.execute(
        "SELECT id FROM knowledge_indexes WHERE repository = %s AND branch = %s AND kind = %s AND live",
        (target.repository, target.branch, target.kind),
    ).fetchone()
    return int(row[0]) if row else None


def remove_abandoned(conn: Any) -> int:  # noqa: ANN401
    """Delete indexes whose builder died before publishing (its advisory lock is gone); returns how many."""
    removed = 0
    for (index_id,) in conn.execute("SELECT id FROM knowledge_indexes WHERE NOT live").fetchall():
        if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_BUILDING_LOCK, int(index_id))).fetchone()[0]:
            try:
                removed += conn.execute(
                    "DELETE FROM knowledge_indexes WHERE id = %s AND NOT live", (index_id,)
                ).rowcount
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_BUILDING_LOCK, int(index_id)))
    return removed


class PostgresStore:
    """One kind's index in PostgreSQL. Safe to share between a server's threads (one lock, one connection)."""

    def __init__(self, target: IndexTarget, conn: Any, index_id: int, manifest: Manifest) -> None:  # noqa: ANN401
        self.target = target
        self.kind = target.kind
        self.manifest = manifest
        self.index_id = index_id
        self._conn = conn
        self._lock = threading.RLock()
        self._building = False

    # ---- opening and creating --------------------------------------------------------------------------------
    @classmethod
    def open(cls, target: IndexTarget, conn: Any) -> PostgresStore:  # noqa: ANN401
        row = conn.execute(
            "SELECT id, manifest FROM knowledge_indexes WHERE repository = %s AND branch = %s AND kind = %s AND live",
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
        return cls(target, conn, int(row[0]), manifest)

    @classmethod
    def create(cls, target: IndexTarget, conn: Any, manifest: Manifest) -> PostgresStore:  # noqa: ANN401
        """A new index built beside the live one (invisible to readers); `publish()` swaps it in."""
        ensure_vector_index(conn, manifest.dims)
        index_id = conn.execute(
            "INSERT INTO knowledge_indexes (repository, branch, kind, manifest) VALUES (%s, %s, %s, %s) RETURNING id",
            (target.repository, target.branch, target.kind, json.dumps(asdict(manifest))),
        ).fetchone()[0]
        conn.execute("SELECT pg_advisory_lock(%s, %s)", (_BUILDING_LOCK, int(index_id)))
        store = cls(target, conn, int(index_id), manifest)
        store._building = True
        return store

    def publish(self) -> None:
        """Make this index the live one of its repository, branch and kind, in one transaction."""
        if not self._building:
            return
        t = self.target
        with self._lock, self._conn.transaction():
            self._conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{t.repository}\n{t.branch}",)
            )
            self._conn.execute(
                "DELETE FROM knowledge_indexes WHERE repository = %s AND branch = %s AND kind = %s AND live",
                (t.repository, t.branch, t.kind),
            )
            self._conn.execute("UPDATE knowledge_indexes SET live = true WHERE id = %s", (self.index_id,))
        self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_BUILDING_LOCK, self.index_id))
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
            return self._conn.execute(sql, params).fetchall()

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
        rows = self._all(
            "SELECT path, problem FROM knowledge_problems WHERE index_id = %s ORDER BY ctid", (self.index_id,)
        )
        return [FileProblem(path, problem) for path, problem in rows]

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

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self._one(
            "SELECT data FROM knowledge_chunks WHERE index_id = %s AND chunk_id = %s LIMIT 1", (self.index_id, chunk_id)
        )
        return chunk_from_dict(row[0]) if row else None

    def version(self) -> str:
        row = self._one("SELECT chunks_version FROM knowledge_indexes WHERE id = %s", (self.index_id,))
        return row[0] if row else ""

    def dense_search(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        import numpy as np

        dims = int(self.manifest.dims)
        query = np.asarray(vector, dtype=np.float32)
        with self._lock, self._conn.transaction():
            embedded = self._conn.execute(
                "SELECT embedded_count FROM knowledge_indexes WHERE id = %s", (self.index_id,)
            ).fetchone()
            if not embedded or not embedded[0]:
                return []
            if embedded[0] <= EXACT_SCAN_MAX:
                # A small index in a shared database: an exact scan of its own rows beats walking a graph that holds
                # every index's vectors and filtering (the cast-free expression keeps the planner off the HNSW index).
                sql = (
                    "SELECT key, embedding <=> %s::vector AS distance FROM knowledge_chunks "
                    "WHERE index_id = %s AND embedding IS NOT NULL ORDER BY distance LIMIT %s"
                )
                rows = self._conn.execute(sql, (query, self.index_id, k)).fetchall()
            else:
                # filtered HNSW scans keep going until `k` rows of this index are found (pgvector 0.8)
                self._conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                self._conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, 2 * k))}")
                rows = self._conn.execute(
                    f"SELECT key, embedding::vector({dims}) <=> %s::vector({dims}) AS distance FROM knowledge_chunks "
                    f"WHERE index_id = %s AND dims = {dims} ORDER BY embedding::vector({dims}) <=> %s::vector({dims}) "
                    "LIMIT %s",
                    (query, self.index_id, query, k),
                ).fetchall()
        scored = [(int(key), 1.0 - float(distance)) for key, distance in rows]
        best = sorted(scored, key=lambda item: (-round(item[1], 6), item[0]))[:k]
        return [ScoredKey(key, score) for key, score in best]

    def keep_warm(self, wait: bool = False) -> None:
        """Nothing to keep: the database holds its own caches."""

    def lexical_search(self, terms: Sequence[str], k: int) -> list[ScoredKey]:
        stems = _stems(terms)
        if not stems:
            return []
        with self._lock:
            n, total = self._conn.execute(
                "SELECT doc_count, total_len FROM knowledge_indexes WHERE id = %s", (self.index_id,)
            ).fetchone()
            frequencies = dict(
                self._conn.execute(
                    "SELECT lexeme, df FROM knowledge_terms WHERE index_id = %s AND lexeme = ANY(%s) AND df > 0",
                    (self.index_id, stems),
                ).fetchall()
            )
            if not frequencies:
                return []
            idf = {lexeme: max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6) for lexeme, df in frequencies.items()}
            # In a large index, the chunks holding a rare term are the candidates: a chunk that holds only terms
            # found in 5%+ of all chunks scores too little to matter, and skipping them is what keeps this fast.
            by_rarity = sorted(frequencies, key=lambda lexeme: frequencies[lexeme])
            rare = [lexeme for lexeme in by_rarity if frequencies[lexeme] <= RARE_SHARE * n]
            # a query of common words only: its two rarest words pick the candidates
            chosen = (rare or by_rarity[:2]) if n >= PRUNE_FROM_CHUNKS else by_rarity
            rows = self._conn.execute(
                """
                SELECT c.key, sum(w.idf * (t.tf * (%(k1)s + 1))
                                  / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * c.lex_len / %(avgdl)s))) AS score
                FROM knowledge_chunks c
                CROSS JOIN LATERAL unnest(ts_filter(setweight(c.lex, 'A', %(lexemes)s::text[]), '{a}'))
                    AS u(lexeme, positions, weights)
                CROSS JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS tf) t
                JOIN unnest(%(lexemes)s::text[], %(idf)s::float8[]) AS w(lexeme, idf) ON w.lexeme = u.lexeme
                WHERE c.index_id = %(index)s AND c.lex @@ %(query)s::tsquery
                GROUP BY c.key ORDER BY score DESC, c.key LIMIT %(limit)s
                """,
                {
                    "index": self.index_id,
                    "lexemes": list(idf),
                    "idf": list(idf.values()),
                    "query": " | ".join(_lexeme(lexeme) for lexeme in chosen),
                    "avgdl": max(total / max(n, 1), 1.0),
                    "k1": BM25_K1,
                    "b": BM25_B,
                    "limit": k,
                },
            ).fetchall()
        return [ScoredKey(int(key), float(score)) for key, score in rows]

    def lexical_terms(self, keys: Sequence[int]) -> dict[int, str]:
        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        rows = self._all(
            "SELECT key, lexical FROM knowledge_chunks WHERE index_id = %s AND key = ANY(%s)", (self.index_id, unique)
        )
        return {int(key): text for key, text in rows}

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

        unique = list(dict.fromkeys(int(k) for k in keys))
        if not unique:
            return {}
        rows = self._all(
            "SELECT key, embedding FROM knowledge_chunks "
            "WHERE index_id = %s AND key = ANY(%s) AND embedding IS NOT NULL",
            (self.index_id, unique),
        )
        return {int(key): np.asarray(_array(vector), dtype=np.float32) for key, vector in rows}

    def coverage(self) -> Coverage:
        total, embedded, raw = self._one(
            "SELECT doc_count, embedded_count, progress FROM knowledge_indexes WHERE id = %s", (self.index_id,)
        )
        progress = EmbedProgress(**raw) if raw else None
        return Coverage(chunks=int(total), embedded=int(embedded), progress=progress)

    def pending(self, limit: int) -> list[Pending]:
        rows = self._all(
            "SELECT key, content_hash, embed_text FROM knowledge_chunks WHERE index_id = %s AND embedding IS NULL "
            "ORDER BY key LIMIT %s",
            (self.index_id, limit),
        )
        return [Pending(int(key), digest, text or "") for key, digest, text in rows]

    def pending_size(self) -> tuple[int, int]:
        count, chars = self._one(
            "SELECT count(*), coalesce(sum(chars), 0) FROM knowledge_chunks WHERE index_id = %s AND embedding IS NULL",
            (self.index_id,),
        )
        return int(count), int(chars)

    # ---- writing ---------------------------------------------------------------------------------------------
    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """One transaction holding this index's advisory lock: writers of one index take turns."""
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.index_id,))
            yield self._conn

    def apply(self, change: Change) -> None:
        import numpy as np

        from ..lexical import chunk_text, terms  # a leaf; imported here to keep the store's import cheap

        dims = int(self.manifest.dims)
        repository = self.target.repository
        with self._writing() as conn:
            if change.remove_paths:
                paths = sorted(change.remove_paths)
                conn.execute(
                    "WITH gone AS (SELECT u.lexeme, count(*) AS n FROM knowledge_chunks c, "
                    "unnest(tsvector_to_array(c.lex)) AS u(lexeme) WHERE c.index_id = %s AND c.path = ANY(%s) "
                    "GROUP BY u.lexeme) "
                    "UPDATE knowledge_terms t SET df = t.df - gone.n FROM gone "
                    "WHERE t.index_id = %s AND t.lexeme = gone.lexeme",
                    (self.index_id, paths, self.index_id),
                )
                for table in ("knowledge_chunks", "knowledge_files", "knowledge_problems"):
                    conn.execute(f"DELETE FROM {table} WHERE index_id = %s AND path = ANY(%s)", (self.index_id, paths))
            rows = []
            for item in change.chunks:
                chunk = item.chunk
                words = item.lexical.split() if item.lexical is not None else terms(chunk_text(chunk))
                lex, length = tsvector_text(words)
                vector = None if item.vector is None else np.asarray(item.vector, dtype=np.float32)
                rows.append(
                    (
                        self.index_id,
                        repository,
                        chunk.id,
                        chunk.path,
                        chunk.content_hash,
                        chunk_to_json(chunk),
                        None if vector is not None else chunk.embed_text,
                        len(chunk.embed_text),
                        symbol_key(chunk),
                        " ".join(words),
                        lex,
                        length,
                        dims if vector is not None else None,
                        vector,
                    )
                )
            if rows:
                before = conn.execute("SELECT coalesce(max(key), 0) FROM knowledge_chunks").fetchone()[0]
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO knowledge_chunks (index_id, repository, chunk_id, path, content_hash, data, "
                        "embed_text, chars, symbol, lexical, lex, lex_len, dims, embedding) "
                        "VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s::tsvector, %s, %s, %s)",
                        rows,
                    )
                conn.execute(
                    "INSERT INTO knowledge_terms (index_id, repository, lexeme, df) "
                    "SELECT %s, %s, u.lexeme, count(*) FROM knowledge_chunks c, "
                    "unnest(tsvector_to_array(c.lex)) AS u(lexeme) WHERE c.index_id = %s AND c.key > %s "
                    "GROUP BY u.lexeme ON CONFLICT (index_id, lexeme) "
                    "DO UPDATE SET df = knowledge_terms.df + excluded.df",
                    (self.index_id, repository, self.index_id, before),
                )
                # what any clone or branch already embedded with this model: no model call needed
                conn.execute(
                    "UPDATE knowledge_chunks c SET embedding = v.embedding, dims = %s, embed_text = NULL "
                    "FROM knowledge_vectors v WHERE c.index_id = %s AND c.embedding IS NULL "
                    "AND v.repository = %s AND v.fingerprint = %s AND v.content_hash = c.content_hash",
                    (dims, self.index_id, repository, self.manifest.fingerprint),
                )
                known = [(repository, self.manifest.fingerprint, r[4], r[13]) for r in rows if r[13] is not None]
                if known:
                    with conn.cursor() as cursor:
                        cursor.executemany(
                            "INSERT INTO knowledge_vectors (repository, fingerprint, content_hash, embedding) "
                            "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            known,
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
            conn.execute(
                "UPDATE knowledge_indexes i SET chunks_version = %s, updated_at = now(), "
                "doc_count = s.n, embedded_count = s.e, total_len = s.l"
                + (", commit = %s" if change.set_commit else "")
                + " FROM (SELECT count(*) AS n, count(embedding) AS e, coalesce(sum(lex_len), 0) AS l "
                "FROM knowledge_chunks WHERE index_id = %s) s WHERE i.id = %s",
                (
                    f"{time.time_ns()}",
                    *((change.commit or "",) if change.set_commit else ()),
                    self.index_id,
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
        stored = 0
        with self._writing() as conn:
            for key, vector in vectors.items():
                row = conn.execute(
                    "UPDATE knowledge_chunks SET embedding = %s, dims = %s, embed_text = NULL "
                    "WHERE key = %s AND index_id = %s AND embedding IS NULL RETURNING content_hash",
                    (np.asarray(vector, dtype=np.float32), dims, int(key), self.index_id),
                ).fetchone()
                if row is not None:
                    stored += 1
                    conn.execute(
                        "INSERT INTO knowledge_vectors (repository, fingerprint, content_hash, embedding) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        (
                            self.target.repository,
                            self.manifest.fingerprint,
                            row[0],
                            np.asarray(vector, dtype=np.float32),
                        ),
                    )
            conn.execute(
                "UPDATE knowledge_indexes SET embedded_count = embedded_count + %s WHERE id = %s",
                (stored, self.index_id),
            )
        return stored

    def record_progress(self, progress: EmbedProgress | None) -> None:
        value = None if progress is None else json.dumps(asdict(progress))
        with self._lock:
            self._conn.execute("UPDATE knowledge_indexes SET progress = %s WHERE id = %s", (value, self.index_id))

    def compact(self, force: bool = False) -> bool:
        """Nothing to fold: PostgreSQL keeps the HNSW index current on every write."""
        return False
