"""`knowledge agents install|uninstall`: wire the MCP server into coding agents' configs in one command."""

from __future__ import annotations

import click

from .. import admin
from ..admin import CLIENTS, SCOPES
from .context import repository_root


@click.group("agents")
def agents_group() -> None:
    """Set up coding agents (Claude Code, Cursor, VS Code, Codex CLI, Gemini CLI, OpenCode) to use knowledge."""


def _options(command: click.Command) -> click.Command:
    for option in reversed(
        [
            click.option(
                "--client",
                "clients",
                multiple=True,
                type=click.Choice(sorted(CLIENTS)),
                help="Repeatable. Default: the clients whose config folders exist.",
            ),
            click.option("--scope", type=click.Choice(SCOPES), default="project", show_default=True),
            click.option("--dry-run", is_flag=True, help="Print the diff of every file; write nothing."),
            click.option(
                "--url",
                help="A `knowledge mcp --http` to connect over HTTP instead of a local stdio server "
                "(e.g. http://devbox:8766/mcp); the bearer token comes from --token-variable.",
            ),
            click.option(
                "--token-variable",
                default="KNOWLEDGE_TOKEN",
                show_default=True,
                help="With --url: the token's variable.",
            ),
        ]
    ):
        command = option(command)
    return command


def _run(
    ctx: click.Context,
    clients: tuple[str, ...],
    scope: str,
    dry_run: bool,
    remove: bool,
    url: str | None = None,
    token_variable: str = "KNOWLEDGE_TOKEN",
) -> None:
    root = repository_root(ctx)
    chosen, changes, note = admin.plan_agents(root, clients, scope, remove, url, token_variable)
    if note:
        click.echo(note, err=True)
    if dry_run:
        click.echo("".join(change.diff(root) for change in changes), nl=False)
    else:
        admin.apply_agent_changes(changes)
    verb = "would change" if dry_run else ("removed from" if remove else "wrote")
    for change in changes:
        click.echo(f"{verb} {change.path}", err=True)
    if not changes:
        click.echo(f"nothing to change for {', '.join(CLIENTS[c].title for c in chosen)}", err=True)


@_options
@agents_group.command("install")
@click.pass_context
def install_command(
    ctx: click.Context, clients: tuple[str, ...], scope: str, dry_run: bool, url: str | None, token_variable: str
) -> None:
    """Add the `knowledge` MCP server to each agent's config and a short how-to to AGENTS.md (CLAUDE.md for Claude
    Code), merged into what is there; running it again changes nothing.

    \b
    knowledge agents install
    knowledge agents install --client claude --client codex --dry-run
    knowledge agents install --scope user --client cursor
    knowledge agents install --url http://devbox:8766/mcp --client claude
    """
    _run(ctx, clients, scope, dry_run, remove=False, url=url, token_variable=token_variable)


@_options
@agents_group.command("uninstall")
@click.pass_context
def uninstall_command(
    ctx: click.Context, clients: tuple[str, ...], scope: str, dry_run: bool, url: str | None, token_variable: str
) -> None:
    """Remove what `agents install` added; everything else in those files stays.

    \b
    knowledge agents uninstall --client claude
    """
    _run(ctx, clients, scope, dry_run, remove=True)
