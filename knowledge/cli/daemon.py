"""`knowledge daemon`: a warm process for this repository that the CLI's search, show and status answer through."""

from __future__ import annotations

import os
import time

import click

from .. import admin
from .context import daemon_call, open_kb, repository_root

IDLE_TIMEOUT = click.option(
    "--idle-timeout",
    default=1800,
    show_default=True,
    type=click.IntRange(min=5),
    help="Exit after this many idle seconds.",
)


@click.group("daemon")
def daemon_group() -> None:
    """Start, stop or inspect the warm daemon (a unix socket under .knowledge/, owner only, no network)."""


@daemon_group.command("start")
@IDLE_TIMEOUT
@click.option(
    "--wait",
    "wait_seconds",
    default=120,
    show_default=True,
    type=click.IntRange(min=0),
    help="Seconds to wait until it answers.",
)
@click.pass_context
def daemon_start_command(ctx: click.Context, idle_timeout: int, wait_seconds: int) -> None:
    """Start the daemon in the background; later `search`, `show` and `status` calls answer warm.

    \b
    knowledge daemon start
    knowledge search "how are hooks installed"   # now answered by the daemon
    """
    root = repository_root(ctx)
    if daemon_call(ctx, "status") is not None:
        click.echo(f"daemon already running for {root}", err=True)
        return
    with os.fdopen(admin.open_log(root, "daemon.log"), "ab") as out:
        admin.start_daemon_process(root, idle_timeout, out.fileno())
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if daemon_call(ctx, "status") is not None:
            click.echo(f"daemon ready for {root} (exits after {idle_timeout}s idle)", err=True)
            return
        time.sleep(0.2)
    if wait_seconds:
        raise click.ClickException(
            f"the daemon did not answer within {wait_seconds}s; see {admin.log_folder(root) / 'daemon.log'}"
        )


@daemon_group.command("run")
@IDLE_TIMEOUT
@click.pass_context
def daemon_run_command(ctx: click.Context, idle_timeout: int) -> None:
    """Run the daemon in the foreground (what `start` runs detached)."""
    from ..server.backend import LocalBackend
    from ..server.daemon import DaemonServer
    from ..server.daemon_client import socket_of

    kb = open_kb(ctx)
    try:
        if any(index.coverage().embedded for index in kb.indexes()):
            kb.model.embedder()  # warm before the first query
    except Exception as exc:
        click.echo(f"daemon: not warmed up: {exc}", err=True)
    server = DaemonServer(socket_of(kb.root), LocalBackend(kb), idle_timeout)
    click.echo(f"knowledge daemon for {kb.root} on {server.path}", err=True)
    server.serve_until_idle()


@daemon_group.command("stop")
@click.pass_context
def daemon_stop_command(ctx: click.Context) -> None:
    """Stop the daemon of this repository, if one runs."""
    answered = daemon_call(ctx, "shutdown", {})
    click.echo("daemon stopped" if answered is not None else "no daemon running", err=True)


@daemon_group.command("status")
@click.pass_context
def daemon_status_command(ctx: click.Context) -> None:
    """Say whether a daemon answers for this repository (exit 1 if not)."""
    if daemon_call(ctx, "status") is None:
        click.echo("no daemon running")
        ctx.exit(1)
    click.echo(f"daemon running for {repository_root(ctx)}")
