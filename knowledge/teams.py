"""Owner-run administration of the shared PostgreSQL store: the schema, what team roles may do, who reads which
repository, and a user's consent to a store URL that a repository's knowledge.toml names."""

from __future__ import annotations

from pathlib import Path

from .config import Settings, trust_store
from .errors import ConfigError
from .store.engines import repository_identity


def _url(settings: Settings) -> str:
    if settings.store in {"", "local"}:
        raise ConfigError("no shared store configured: set KNOWLEDGE_STORE=postgresql://OWNER@HOST/DATABASE")
    return settings.store


def setup(settings: Settings, dims: int, roles: tuple[str, ...]) -> list[str]:
    """Create or upgrade the schema, make the vector index for `dims`, and give each of `roles` a member's rights."""
    from .store.pg_schema import allow_member_role, connect, ensure_vector_index

    done = []
    with connect(_url(settings)) as conn:
        done.append("schema ready")
        ensure_vector_index(conn, dims)
        done.append(f"vector index for {dims}-dimension models ready")
        for role in roles:
            allow_member_role(conn, role)
            done.append(
                f"{role}: may index and search the repositories granted to it "
                "(a repository with no grant is the owner's alone)"
            )
    return done


def grant(settings: Settings, root: Path, role: str, repository: str = "") -> str:
    """Limit this repository (or `repository`) to members of `role` and those of any other role granted it."""
    from .store.pg_access import grant as add_grant
    from .store.pg_schema import connect

    name = repository or repository_identity(root, settings.store_repository)
    with connect(_url(settings)) as conn:
        add_grant(conn, name, role)
    return name


def revoke(settings: Settings, root: Path, role: str, repository: str = "") -> tuple[str, int]:
    from .store.pg_access import revoke as remove_grant
    from .store.pg_schema import connect

    name = repository or repository_identity(root, settings.store_repository)
    with connect(_url(settings)) as conn:
        return name, remove_grant(conn, name, role)


def grants(settings: Settings, root: Path, repository: str = "") -> tuple[str, list[str]]:
    from .store.pg_access import grants as list_grants
    from .store.pg_schema import connect

    name = repository or repository_identity(root, settings.store_repository)
    with connect(_url(settings)) as conn:
        return name, list_grants(conn, name)


def trust(root: Path) -> str:
    """This user allows the store URL of `root`'s knowledge.toml (once per clone); returns the URL."""
    return trust_store(root)
