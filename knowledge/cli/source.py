"""Commands that read the repository for an agent: `show` (exact current lines) and `docs-for` (the doc sections
about a piece of code)."""

from __future__ import annotations

import contextlib
import re
from functools import partial
from pathlib import Path

import click

from ..api.request import DocsForRequest, SourceRequest
from ..records import SearchHit, SourceText
from ..render import hits_to_text, source_to_text
from .context import ask, emit, remote_option, repository_root
from .options import request_options

_SPEC = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")


@click.command("show")
@click.argument("spec", required=False)
@partial(request_options, request=SourceRequest)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@remote_option
@click.pass_context
def show_command(ctx: click.Context, spec: str | None, id: str | None, as_json: bool, remote: str | None) -> None:
    """Print exact current source with line numbers: PATH, PATH:START, PATH:START-END, or a result's id.

    A PATH is read from the current folder when it is there, else from the repository's root; paths outside the
    repository are refused.

    \b
    knowledge show docs/hooks.md:10-24
    knowledge show docs/hooks.md#install          # an id copied from --json
    """
    if bool(spec) == bool(id):
        raise click.UsageError("give PATH[:START[-END]], a result's id, or --id ID")
    if spec and "#" in spec and not Path(spec).exists():
        spec, id = None, spec  # `path#slug`: an id, as search results print them
    if spec:
        match = _SPEC.match(spec)
        assert match is not None
        start = int(match["start"]) if match["start"] else None
        end = int(match["end"]) if match["end"] else start
        path = match["path"] if remote else _from_here(ctx, match["path"])
        request = SourceRequest(path=path, start=start, end=end)
    else:
        request = SourceRequest(id=id)
    data = ask(ctx, "source", request, remote=remote)
    if data.get("note") and not as_json:
        click.echo(f"note: {data['note']}", err=True)
    text = SourceText(data["path"], data["line_start"], data["line_end"], data["total_lines"], tuple(data["lines"]))
    emit(data, as_json, lambda: source_to_text(text))


def _from_here(ctx: click.Context, path: str) -> str:
    """`path` relative to the repository's root: from the current folder when it names a file there."""
    here = Path(path)
    if here.is_absolute() or not here.exists():
        return path
    with contextlib.suppress(ValueError):
        return here.resolve().relative_to(repository_root(ctx)).as_posix()
    return path


@click.command("docs-for")
@click.argument("target")
@partial(request_options, request=DocsForRequest)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@remote_option
@click.pass_context
def docs_for_command(ctx: click.Context, target: str, as_json: bool, remote: str | None) -> None:
    """Doc sections that refer to code: TARGET is PATH, PATH:LINE (the entity there) or a SYMBOL. Metadata only.

    \b
    knowledge docs-for knowledge/kb.py
    knowledge docs-for knowledge/kb.py:120
    knowledge docs-for KnowledgeBase.search
    """
    path, _, line = target.rpartition(":")
    on_disk = Path(path if line.isdigit() and path else target)
    if not remote and on_disk.exists():  # a path relative to here: the servers want it relative to the root
        root = repository_root(ctx)
        with contextlib.suppress(ValueError):
            rel = on_disk.resolve().relative_to(root).as_posix()
            target = f"{rel}:{line}" if line.isdigit() and path else rel
    data = ask(ctx, "docs_for", DocsForRequest(target), remote=remote)
    emit(data, as_json, lambda: hits_to_text([SearchHit(**hit) for hit in data["results"]]))
