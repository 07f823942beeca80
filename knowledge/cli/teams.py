"""`knowledge teams`: set up the shared store, grant and revoke repositories (the database owner), and trust a
repository's store setting (a member, once per clone)."""

from __future__ import annotations

import click

from .. import admin
from .context import overrides, repository_root


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
    for line in admin.team_setup(repository_root(ctx), overrides(ctx), roles, dims):
        click.echo(line)


@teams_group.command("grant")
@click.argument("role")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_grant(ctx: click.Context, role: str, repository: str) -> None:
    """As the database owner: only members of ROLE (and of other granted roles) read this repository."""
    name = admin.team_grant(repository_root(ctx), overrides(ctx), role, repository)
    click.echo(f"{name}: granted to {role}")


@teams_group.command("revoke")
@click.argument("role")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_revoke(ctx: click.Context, role: str, repository: str) -> None:
    """As the database owner: take this repository's grant away from ROLE."""
    name, removed = admin.team_revoke(repository_root(ctx), overrides(ctx), role, repository)
    click.echo(f"{name}: {'revoked from' if removed else 'was not granted to'} {role}")


@teams_group.command("grants")
@click.option("--repository", default="", help="The repository's identity (default: this one's root commit).")
@click.pass_context
def teams_grants(ctx: click.Context, repository: str) -> None:
    """The roles this repository is granted to (none: only the owner reads it)."""
    name, roles = admin.team_grants(repository_root(ctx), overrides(ctx), repository)
    click.echo(
        f"{name}: "
        + (
            ", ".join(roles)
            if roles
            else "no grants: no member role reads it until the owner runs `knowledge teams grant ROLE`"
        )
    )


@teams_group.command("trust")
@click.pass_context
def teams_trust(ctx: click.Context) -> None:
    """Allow this clone's knowledge.toml what a tracked file cannot decide alone: the store it names, and secret
    protections it turns off (kept in your user config, until the file changes them)."""
    click.echo(f"trusted: this clone {admin.team_trust(repository_root(ctx))}")
