"""Which roles may read a repository in the shared store: the grants the owner keeps (`knowledge teams grant`,
`revoke`, `grants`). Row-level security (pg_schema) enforces them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pg_schema import Connection


def grant(conn: Connection, repository: str, role: str) -> None:
    """Limit `repository` to members of `role` (a repository without grants is the owner's alone). Owner only."""
    conn.execute(
        "INSERT INTO knowledge_grants (repository, grantee) VALUES (%s, %s) ON CONFLICT DO NOTHING", (repository, role)
    )


def revoke(conn: Connection, repository: str, role: str) -> int:
    """Take `repository` away from `role`; returns how many grants were removed. Owner only."""
    return int(
        conn.execute("DELETE FROM knowledge_grants WHERE repository = %s AND grantee = %s", (repository, role)).rowcount
    )


def grants(conn: Connection, repository: str) -> list[str]:
    rows = conn.execute("SELECT grantee FROM knowledge_grants WHERE repository = %s ORDER BY 1", (repository,))
    return [str(r[0]) for r in rows.fetchall()]
