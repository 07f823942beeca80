"""`knowledge hooks install|uninstall|status`: the git hooks that keep the index fresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .. import admin
from .context import start_path

if TYPE_CHECKING:
    from ..admin import HookState


@click.group("hooks")
def hooks_group() -> None:
    """Install, remove and inspect the git hooks that keep the index fresh."""


def _print_hook_states(states: list[HookState]) -> None:
    for state in states:
        chained = " (chains the earlier hook, kept as .legacy)" if state.chained else ""
        outdated = (
            "  (an earlier version's: `knowledge hooks install` replaces it)" if state.state == "outdated" else ""
        )
        click.echo(f"{state.name:<14} {state.state:<10} {state.path}{chained}{outdated}")


@hooks_group.command("install")
@click.pass_context
def hooks_install_command(ctx: click.Context) -> None:
    """Write post-commit, post-merge, post-checkout and post-rewrite hooks; existing hooks keep running.

    \b
    knowledge hooks install
    """
    _print_hook_states(admin.install_hooks(start_path(ctx)))


@hooks_group.command("uninstall")
@click.pass_context
def hooks_uninstall_command(ctx: click.Context) -> None:
    """Remove knowledge's hooks only, restoring any hook they chained.

    \b
    knowledge hooks uninstall
    """
    _print_hook_states(admin.uninstall_hooks(start_path(ctx)))


@hooks_group.command("status")
@click.pass_context
def hooks_status_command(ctx: click.Context) -> None:
    """Show which hooks are installed, chained or foreign, and the last hook log lines.

    \b
    knowledge hooks status
    """
    _print_hook_states(admin.hook_states(start_path(ctx)))
    log = admin.hook_log(start_path(ctx))
    if log.is_file():
        click.echo(f"last lines of {log}:")
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-5:]:
            click.echo(f"  {line}")
