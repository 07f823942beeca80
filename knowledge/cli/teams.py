"""`knowledge teams`: set up the shared store, grant and revoke repositories (the database owner), and trust a
repository's store setting (a member, once per clone)."""

from __future__ import annotations

import click

from ..config import load_settings
from ..embedding import model_spec
from .context import repository_root


def _settings(ctx: click.Context):  # noqa: ANN202
    return load_settings(repository_root(ctx), ctx.find_root().obj["overrides"])[0]


@click.group("teams")
def teams_group() -> None:
    """The shared PostgreSQL store: owner-run setup and grants, and trusting a repository's store setting."""


@teams_group.command("setup")
@click.option("--role", "roles", multiple=True, help="A role (group) whose members index and search. Repeatable.")
@click.option(
    "--dims", type=click.IntRange(1, 65535), help="Vector size of the team's model (default: the configured model's)."
)
@click.pass_context
def teams_setup(ctx: click.Context, roles: tuple[str, ...], dims: int | None) -> None:
    """As the database owner: create or upgrade the schema and give ROLEs a member's rights (nothing more)."""
    from ..teams import setup

    settings = _settings(ctx)
    for line in setup(settings, dims or model_spec(settings.model).dims, roles):
        click.echo(line)


@teams_group.command("grant")
@click.argument("role")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_grant(ctx: click.Context, role: str, repository: str) -> None:
    """As the database owner: only members of ROLE (and of other granted roles) read this repository."""
    from ..teams import grant

    name = grant(_settings(ctx), repository_root(ctx), role, repository)
    click.echo(f"{name}: granted to {role}")


@teams_group.command("revoke")
@click.argument("role")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_revoke(ctx: click.Context, role: str, repository: str) -> None:
    """As the database owner: take this repository's grant away from ROLE."""
    from ..teams import revoke

    name, removed = revoke(_settings(ctx), repository_root(ctx), role, repository)
    click.echo(f"{name}: {'revoked from' if removed else 'was not granted to'} {role}")


@teams_group.command("grants")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_grants(ctx: click.Context, repository: str) -> None:
    """The roles this repository is granted to (none: every role with table rights reads it)."""
    from ..teams import grants

    name, roles = grants(_settings(ctx), repository_root(ctx), repository)
    click.echo(f"{name}: " + (", ".join(roles) if roles else "no grants (readable by every member role)"))


@teams_group.command("trust")
@click.pass_context
def teams_trust(ctx: click.Context) -> None:
    """Allow this clone's knowledge.toml to send its index to the store it names (kept in your user config)."""
    from ..teams import trust

    click.echo(f"trusted: this clone indexes into {trust(repository_root(ctx))}")
