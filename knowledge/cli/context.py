"""What every command shares: the repository it works on, the knowledge base opened there with the group's options,
the backend that answers (through the one resolver), and printing JSON or text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import admin
from ..render.base import escaped_json
from ..server.resolve import answer, daemon_answer

if TYPE_CHECKING:
    from ..api.request import Declared
    from ..kb import KnowledgeBase
    from ..records import JsonObject
    from ..server.backend import Backend
    from .progress import ProgressPrinter


# `--remote URL` on every command that asks: one option, one help
remote_option = click.option(
    "--remote", metavar="URL", help="Ask a `knowledge serve` at URL (token from KNOWLEDGE_TOKEN)."
)


def start_path(ctx: click.Context) -> Path:
    """The folder given with -C (default: here), resolved."""
    return Path(ctx.find_root().obj["path"]).resolve()


def repository_root(ctx: click.Context) -> Path:
    return admin.repository_root(start_path(ctx))


def overrides(ctx: click.Context) -> JsonObject:
    """The group's --model and --variant (None where not given)."""
    return dict(ctx.find_root().obj["overrides"])


def open_kb(ctx: click.Context, progress: ProgressPrinter | None = None, **overrides: Any) -> KnowledgeBase:  # noqa: ANN401
    from ..kb import KnowledgeBase

    root_obj = ctx.find_root().obj
    return KnowledgeBase.open(
        root_obj["path"],
        overrides={**root_obj["overrides"], **overrides},
        embedder_factory=root_obj.get("embedder_factory"),  # tests inject a deterministic embedder here
        on_model_step=progress.step if progress else None,
    )


def daemon_allowed(ctx: click.Context) -> bool:
    """The warm daemon answers only calls that run its own model (no --model, --variant or injected embedder)."""
    root_obj = ctx.find_root().obj
    return not root_obj.get("embedder_factory") and all(v is None for v in root_obj["overrides"].values())


def daemon_call(
    ctx: click.Context, operation: str, params: JsonObject | None = None, timeout: float = 120.0
) -> JsonObject | None:
    """The warm daemon's answer, or None (no daemon, or this call names another model); looked for afresh."""
    return daemon_answer(start_path(ctx), operation, params, timeout, fresh=True) if daemon_allowed(ctx) else None


def local_backend(ctx: click.Context, kb: Callable[[], KnowledgeBase] | None = None) -> Callable[[], Backend]:
    def make() -> Backend:
        from ..server.backend import LocalBackend

        return LocalBackend(kb() if kb else open_kb(ctx), warm=False)

    return make


def ask(
    ctx: click.Context,
    operation: str,
    request: Declared,
    remote: str | None = None,
    daemon: bool = True,
    kb: Callable[[], KnowledgeBase] | None = None,
) -> JsonObject:
    """`operation` answered by the server at `remote`, the warm daemon, or the index opened here (`kb`, by default
    the one the group's options name), handed the request object itself."""
    return answer(
        operation,
        request,
        start=start_path(ctx),
        local=local_backend(ctx, kb),
        remote=remote,
        daemon=daemon and daemon_allowed(ctx),
    )


def emit(data: Any, as_json: bool, text: Callable[[], str]) -> None:  # noqa: ANN401 - JSON-ready data
    """Prints `data` as indented JSON, or `text()` as it is."""
    if as_json:
        click.echo(escaped_json(json.dumps(data, ensure_ascii=False, indent=2)))
    else:
        click.echo(text(), nl=False)
