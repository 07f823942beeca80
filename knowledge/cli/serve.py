"""Commands that serve agents from a long-running process: `serve` (HTTP API, token) and `mcp` (MCP server)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import ConfigError, KnowledgeError
from ..server.operations import OPERATIONS
from .context import open_kb

if TYPE_CHECKING:
    from ..server.backend import LocalBackend


def _token(token_file: Path | None) -> str | None:
    from ..server.auth import load_token

    return load_token(os.environ, token_file)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the bearer token (mode 600). Default: the KNOWLEDGE_TOKEN variable.",
)
@click.option("--allow-host", multiple=True, help="Extra Host header name to accept (DNS name of this machine).")
@click.option("--allow-origin", multiple=True, help="Extra browser Origin to accept.")
@click.option(
    "--refresh",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds between index catch-ups with git (0: never).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every request on stderr.")
@click.pass_context
def serve_command(
    ctx: click.Context,
    host: str,
    port: int,
    token_file: Path | None,
    allow_host: tuple[str, ...],
    allow_origin: tuple[str, ...],
    refresh: float,
    verbose: bool,
) -> None:
    """Serve search, source and status over HTTP with bearer-token auth, the model kept warm.

    \b
    KNOWLEDGE_TOKEN=$(openssl rand -hex 24) knowledge serve --port 8765
    curl -H "Authorization: Bearer $KNOWLEDGE_TOKEN" -d '{"query": "hooks"}' http://127.0.0.1:8765/v1/search
    """
    from ..server.backend import LocalBackend
    from ..server.http import Freshener, KnowledgeHTTPServer

    token = _token(token_file)
    if token is None:
        raise ConfigError("knowledge serve needs a token: set KNOWLEDGE_TOKEN or pass --token-file (mode 600)")
    kb = open_kb(ctx)
    kb.model.embedder()  # load the model once, before the first request
    try:
        server = KnowledgeHTTPServer(
            (host, port), LocalBackend(kb), token, frozenset(allow_host), frozenset(allow_origin), quiet=not verbose
        )
    except OSError as exc:
        raise KnowledgeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    freshener = None
    if refresh > 0:
        freshener = Freshener(kb.catch_up, refresh, lambda exc: click.echo(f"catch-up failed: {exc}", err=True))
        freshener.start()
    bound_host, bound_port = str(server.server_address[0]), server.server_address[1]
    click.echo(f"knowledge serving {kb.root} on http://{bound_host}:{bound_port}", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if freshener is not None:
            freshener.stop()
        server.server_close()


def _warm_quietly(local: LocalBackend) -> None:
    with contextlib.suppress(Exception):  # the first tool call meets the same problem and reports it
        local.kb.model.embedder()


@click.command("mcp")
@click.option("--http", "use_http", is_flag=True, help="Streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="Port with --http.")
@click.option("--remote", metavar="URL", help="Forward every tool call to a `knowledge serve` at URL.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --http: file holding the bearer token (mode 600). Default: the KNOWLEDGE_TOKEN variable.",
)
@click.pass_context
def mcp_command(
    ctx: click.Context, use_http: bool, host: str, port: int, remote: str | None, token_file: Path | None
) -> None:
    """Run an MCP server (stdio by default) with the tools {tools}.

    With --http it needs the same bearer token as `knowledge serve` (every request without it gets 401).

    \b
    knowledge mcp
    knowledge mcp --remote http://devbox:8765
    """
    from ..server.auth import is_loopback
    from ..server.mcp import build_server, run_http, run_stdio

    token = _token(token_file) if use_http else None
    if use_http and token is None:
        raise ConfigError("knowledge mcp --http needs a token: set KNOWLEDGE_TOKEN or pass --token-file (mode 600)")
    from ..server.backend import LocalBackend
    from ..server.resolve import backend_for

    def warm_local() -> LocalBackend:
        local = LocalBackend(open_kb(ctx))
        # warmed beside the server, not before it: `initialize` is answered at once, and a fresh home's model build
        # (half a minute) is waited for only by the first tool that needs a vector
        threading.Thread(target=_warm_quietly, args=(local,), name="knowledge-mcp-warm", daemon=True).start()
        return local

    backend = backend_for(remote, warm_local)
    server = build_server(backend)
    if not use_http:
        run_stdio(server)
        return
    if not is_loopback(host):
        raise KnowledgeError("knowledge mcp --http binds loopback only; use `knowledge serve` (token auth) remotely")
    assert token is not None
    run_http(server, host, port, token)


# the tools named as the table serves them, so the help cannot omit one (it listed five of seven)
mcp_command.help = (mcp_command.help or "").replace("{tools}", ", ".join(op.tool for op in OPERATIONS if op.tool))
