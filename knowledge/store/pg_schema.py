"""The shared store's schema and rights: connecting, creating and migrating the tables (row-level security per
repository), the HNSW indexes per model size, and what the owner grants a team role. Only the owner changes any of it
(`knowledge teams setup`); members connect and find it ready. Also the index rows outside any one store: which index
is live for a target, and builds abandoned by a dead process."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ..config import redact_url
from ..errors import KnowledgeError
from .pg_ddl import (
    ACCESS_POLICY,
    BOUND_TABLES,
    GENERATED_COLUMNS,
    INDEX_POLICY,
    MEMBER_FUNCTIONS,
    SCHEMA_V1,
    SCHEMA_V2,
    SCHEMA_V3,
    SCHEMA_V4,
    SCHEMA_V5,
    SCHEMA_V6,
    SCHEMA_V7,
    SCHEMA_V8,
    SCHEMA_V9,
    SCHEMA_V10,
    SCHEMA_V11,
)

SCHEMA_VERSION = 11
_MIGRATION_LOCK = 0x4B4E4F57  # advisory lock key held while the schema is created or migrated
MIGRATION_WAIT_SECONDS = 30.0
# Every session's bounds: no wait for a lock longer than a minute (a role that locks a table stalls nobody for ever),
# no statement longer than half an hour (the longest, a million chunks' static graph, takes minutes)
SESSION_LOCK_TIMEOUT_SECONDS = 60
SESSION_STATEMENT_TIMEOUT_SECONDS = 1800

KNOWN_DIMS = (384, 768)  # all-MiniLM-L6-v2, all-mpnet-base-v2
_PROTECTED_TABLES = ("knowledge_indexes", "knowledge_chunks", "knowledge_files", "knowledge_problems")
# What a team role may do (docs/teams.md, Access): its own repositories' rows (row-level security), never the grants,
# the schema version or another repository's vector cache.
MEMBER_TABLES = (*_PROTECTED_TABLES, "knowledge_terms", "knowledge_vectors")
READ_ONLY_TABLES = ("knowledge_grants", "knowledge_schema")


class Cursor(Protocol):
    """What we read of a psycopg cursor: rows are tuples of database values."""

    rowcount: int

    def fetchone(self) -> Any: ...  # noqa: ANN401 - a row of database values, or None
    def fetchall(self) -> list[Any]: ...
    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None: ...
    def __enter__(self) -> Cursor: ...
    def __exit__(self, *exc: object) -> None: ...


class Connection(Protocol):
    """What the store uses of a psycopg 3 connection (an optional dependency, so typed here by shape)."""

    closed: bool

    def execute(self, sql: Any, params: Sequence[object] | dict[str, object] = ...) -> Cursor: ...  # noqa: ANN401 - str or psycopg.sql.Composed
    def transaction(self) -> AbstractContextManager[Any]: ...
    def cursor(self) -> Cursor: ...
    def close(self) -> None: ...
    def __enter__(self) -> Connection: ...
    def __exit__(self, *exc: object) -> None: ...


class StoreUnavailableError(KnowledgeError):
    """The configured database cannot be reached or used."""


def redacted(url: str) -> str:
    """The URL without its password (user part or query), for messages."""
    return redact_url(url)


def connect(url: str) -> Connection:
    """An autocommit connection with pgvector's types registered and the schema at SCHEMA_VERSION."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise StoreUnavailableError(
            f"store = {redacted(url)}: the PostgreSQL engine needs its extra: pip install 'repo-knowledge[postgres]'"
        ) from exc
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        said = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailableError(
            f"{redacted(url)}: cannot connect ({said}); the local index is unaffected "
            "(unset `store` / KNOWLEDGE_STORE to use it)"
        ) from exc
    # psycopg's own types are overloads far wider than what we call: the Connection protocol is that part
    conn = cast("Connection", raw)
    try:
        conn.execute(f"SET lock_timeout = '{SESSION_LOCK_TIMEOUT_SECONDS}s'")
        conn.execute(f"SET statement_timeout = '{SESSION_STATEMENT_TIMEOUT_SECONDS}s'")
        migrate(conn)
        register_vector(raw)
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


def _schema_version(conn: Connection) -> int:
    exists = conn.execute("SELECT to_regclass('knowledge_schema') IS NOT NULL").fetchone()[0]
    version = conn.execute("SELECT max(version) FROM knowledge_schema").fetchone()[0] if exists else 0
    if version and version > SCHEMA_VERSION:
        raise StoreUnavailableError(
            f"the database holds knowledge schema {version}; this knowledge knows {SCHEMA_VERSION}: upgrade it"
        )
    return int(version or 0)


def _take_schema_lock(conn: Connection, wait_seconds: float | None = None) -> None:
    """The migration's advisory lock, tried until `wait_seconds` pass; then one line naming who holds it (a member
    holding the key must not hang every knowledge command)."""
    wait_seconds = MIGRATION_WAIT_SECONDS if wait_seconds is None else wait_seconds
    deadline = time.monotonic() + wait_seconds
    while not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_MIGRATION_LOCK,)).fetchone()[0]:
        if time.monotonic() >= deadline:
            holder = conn.execute(
                "SELECT a.pid, a.usename FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.objid = %s LIMIT 1",
                (_MIGRATION_LOCK & 0xFFFFFFFF,),
            ).fetchone()
            who = f"session {holder[0]} of role {holder[1]}" if holder else "another session"
            raise StoreUnavailableError(
                f"the knowledge schema's lock is held by {who} for over {wait_seconds:.0f}s; "
                f"end it (SELECT pg_terminate_backend({holder[0] if holder else 'PID'})) or wait, then retry"
            )
        time.sleep(0.2)


def _functions_missing(conn: Connection) -> bool:
    """Whether an owner's function is gone (a restore of the tables alone, `pg_dump --table`, leaves them behind)."""
    return bool(
        conn.execute(
            "SELECT bool_or(to_regprocedure(f) IS NULL) FROM unnest(%s::text[]) AS f", (list(MEMBER_FUNCTIONS),)
        ).fetchone()[0]
    )


def _version_to_migrate_from(conn: Connection) -> int:
    """The schema's version, or 7 where the functions of versions 8 on are missing (their steps are idempotent)."""
    version = _schema_version(conn)
    return 7 if version >= 8 and _functions_missing(conn) else version


def migrate(conn: Connection, wait_seconds: float | None = None) -> int:
    """Create or upgrade the schema (one transaction, under an advisory lock taken only to migrate); returns the
    version now."""
    if _version_to_migrate_from(conn) == SCHEMA_VERSION:
        return SCHEMA_VERSION
    with conn.transaction():
        _take_schema_lock(conn, wait_seconds)
        version = _version_to_migrate_from(conn)
        if version == SCHEMA_VERSION:
            return version
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE IF NOT EXISTS knowledge_schema (version integer NOT NULL)")
        if version < 1:
            conn.execute(SCHEMA_V1)
            for table in _PROTECTED_TABLES:
                _protect(conn, table)
        if version < 2:
            conn.execute(SCHEMA_V2)
            _protect(conn, "knowledge_terms")
        if version < 3:
            conn.execute(SCHEMA_V3)
            _protect(conn, "knowledge_vectors")
            for dims in KNOWN_DIMS:
                conn.execute(_hnsw_sql(dims))
        if version < 4:
            conn.execute(SCHEMA_V4)
            _protect(conn, "knowledge_postings", INDEX_POLICY, "knowledge_by_index")
        if version < 5:
            conn.execute(SCHEMA_V5)
            for table in ("knowledge_indexes", "knowledge_vectors"):
                conn.execute(
                    f"CREATE POLICY knowledge_by_repository ON {table} USING ({ACCESS_POLICY.format(table=table)})"
                )
            for table in BOUND_TABLES:
                conn.execute(f"CREATE POLICY knowledge_by_index ON {table} USING ({INDEX_POLICY.format(table=table)})")
        if version < 6:
            conn.execute(SCHEMA_V6)
        if version < 7:
            conn.execute(SCHEMA_V7)
        schema = conn.execute("SELECT quote_ident(current_schema())").fetchone()[0]
        if version < 8:
            conn.execute(SCHEMA_V8.format(path=f"{schema}, pg_temp"))
        if version < 9:
            conn.execute(SCHEMA_V9.format(path=f"{schema}, pg_temp"))
        if version < 10:
            conn.execute(SCHEMA_V10.format(path=f"{schema}, pg_temp"))
        if version < 11:
            conn.execute(SCHEMA_V11.format(path=f"{schema}, pg_temp"))
        for role in _member_roles(conn):  # a table made by a migration is theirs too, as `teams setup` gave them
            _grant_member_tables(conn, role)
        conn.execute("INSERT INTO knowledge_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
    return SCHEMA_VERSION


def _protect(conn: Connection, table: str, policy: str = ACCESS_POLICY, name: str = "knowledge_by_repository") -> None:
    conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    conn.execute(f"CREATE POLICY {name} ON {table} USING ({policy.format(table=table)})")


def _member_roles(conn: Connection) -> list[str]:
    """The roles `allow_member_role` gave a team member's rights to (they may write chunks; the owner aside)."""
    rows = conn.execute(
        "SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) AS a JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.oid = 'knowledge_chunks'::regclass AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner "
        "ORDER BY 1"
    ).fetchall()
    return [str(row[0]) for row in rows]


def allow_member_role(conn: Connection, role: str) -> None:
    """Give `role` (and so every role that is a member of it) what a team member needs, and nothing more."""
    with conn.transaction():
        _grant_member_tables(conn, role)


def _grant_member_tables(conn: Connection, role: str) -> None:
    from psycopg import sql

    name = sql.Identifier(role)
    for table in MEMBER_TABLES:
        # column-level INSERT and UPDATE, no DELETE (the owner's functions delete): a table-level UPDATE or DELETE
        # would let the role LOCK TABLE every team's rows; ids and keys are the sequence's alone (a role that chose
        # them could squat another team's next ids)
        generated = GENERATED_COLUMNS.get(table, ())
        columns = sql.SQL(", ").join(
            sql.Identifier(column) for column in _columns(conn, table) if column not in generated
        )
        conn.execute(
            sql.SQL("REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {} FROM {}").format(sql.Identifier(table), name)
        )
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), name))
        conn.execute(
            sql.SQL("GRANT INSERT ({c}), UPDATE ({c}) ON {t} TO {r}").format(c=columns, t=sql.Identifier(table), r=name)
        )
    for table in READ_ONLY_TABLES:
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(sql.Identifier(table), name))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), name))
    conn.execute(
        sql.SQL("GRANT USAGE ON SEQUENCE knowledge_indexes_id_seq, knowledge_chunks_key_seq TO {}").format(name)
    )
    for function in MEMBER_FUNCTIONS:  # they check what the caller may see themselves
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(function), name))


def _columns(conn: Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
        "ORDER BY attnum",
        (table,),
    ).fetchall()
    return [str(row[0]) for row in rows]


def _hnsw_sql(dims: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS knowledge_chunks_hnsw_{int(dims)} ON knowledge_chunks "
        f"USING hnsw ((embedding::vector({int(dims)})) vector_cosine_ops) WHERE dims = {int(dims)}"
    )


def require_grant(conn: Connection, target: IndexTarget) -> None:
    """One line naming the owner's step when no grant gives this role the repository (the owner needs none)."""
    granted = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM knowledge_grants WHERE repository = %s "
        "AND pg_has_role(current_user, grantee, 'MEMBER')) OR EXISTS (SELECT 1 FROM pg_tables "
        "WHERE tablename = 'knowledge_indexes' AND pg_has_role(current_user, tableowner, 'USAGE'))",
        (target.repository,),
    ).fetchone()[0]
    if not granted:
        raise StoreUnavailableError(
            f"{target.describe()}: no grant gives this role the repository, and an ungranted repository is the "
            "owner's alone: the database owner runs `knowledge teams grant ROLE` once in a clone of it"
        )


def ensure_vector_index(conn: Connection, dims: int) -> None:
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
        _take_schema_lock(conn)
        conn.execute(_hnsw_sql(dims))


@dataclass(frozen=True, slots=True)
class IndexTarget:
    """Which index of the shared database: the repository's identity, the branch and the kind."""

    url: str
    repository: str
    branch: str
    kind: str

    def describe(self) -> str:
        return f"{redacted(self.url)} ({self.repository[:12]} @ {self.branch}, {self.kind})"


def live_index_id(conn: Connection, target: IndexTarget) -> int | None:
    row = conn.execute(
        "SELECT id FROM knowledge_indexes WHERE repository = %s AND branch = %s AND kind = %s AND live",
        (target.repository, target.branch, target.kind),
    ).fetchone()
    return int(row[0]) if row else None


def live_manifest(conn: Connection, target: IndexTarget) -> dict[str, object] | None:
    """The manifest the live index of `target` was built with, as stored."""
    row = conn.execute(
        "SELECT manifest FROM knowledge_indexes WHERE repository = %s AND branch = %s AND kind = %s AND live",
        (target.repository, target.branch, target.kind),
    ).fetchone()
    return dict(row[0]) if row and isinstance(row[0], dict) else None


def building_pair(key: int) -> tuple[int, int]:
    """The two-int form of an index's lock key: its builder's session lock (a key space apart from its writers'
    one-bigint transaction locks, so the builder's own writes and a fill never wait on the build)."""
    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    return (high - (1 << 32) if high >= 1 << 31 else high), (low - (1 << 32) if low >= 1 << 31 else low)


def remove_abandoned(conn: Connection) -> int:
    """Delete indexes whose builder died before publishing (its session lock on the index's key is gone); returns
    how many."""
    removed = 0
    for index_id, key in conn.execute("SELECT id, lock_key FROM knowledge_indexes WHERE NOT live").fetchall():
        pair = building_pair(int(key))
        if conn.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", pair).fetchone()[0]:
            try:
                removed += int(conn.execute("SELECT knowledge_delete_index(%s)", (index_id,)).fetchone()[0])
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", pair)
    return removed
