"""Commands that answer: `search` (ranked sections and code, or every occurrence with --exact/--substring/--regex)
and `status`."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import click

from ..api.request import SearchRequest, StatusRequest
from ..api.request import request_options as search_request_options
from ..render import report_summary
from .context import ask, emit, open_kb, remote_option
from .guard import EXIT_PROBLEMS
from .options import request_options, switched_to_fields
from .progress import ProgressPrinter

if TYPE_CHECKING:
    from ..kb import KnowledgeBase


SWITCHES = next(option.switches for name, _, option in search_request_options() if name == "match")


@click.command("search")
@click.argument("query")
@request_options
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON schema (docs/json-output.md).")
@click.option("--build", is_flag=True, help="Build the index first if there is none.")
@remote_option
@click.pass_context
def search_command(
    ctx: click.Context,
    /,
    query: str,
    as_json: bool,
    build: bool,
    remote: str | None,
    **asked: Any,  # noqa: ANN401 - the request's own options, declared once in api/request.py
) -> None:
    """Find the doc sections and code that answer QUERY, best first, within a token budget.

    \b
    knowledge search "how are hooks installed"
    knowledge search "token budget" --json --budget 500
    knowledge search "retry on timeout" --kind code --path 'src/**' --exclude 'tests/**' --lang python
    knowledge search reindex_changes --exact -C 2
    knowledge search 'def [a-z_]+_changes' --regex --path 'knowledge/**'
    knowledge search "shell completion for a custom parameter type" --scope all
    """
    switched = [value for _, value, _ in SWITCHES if asked.pop(f"match_{value}")]
    switched_to_fields(asked, SearchRequest, but="match")
    if asked["exact"] + len(switched) > 1:
        raise click.UsageError("choose one of --exact, --substring and --regex")
    if not query.strip():
        raise click.UsageError("QUERY is empty: say what to look for")
    exact = asked.pop("exact") or bool(switched)
    match = switched[0] if switched else "word"
    fields = {name: value for name, value in asked.items() if value is not None}
    # the text is rendered where the answer is made
    request = SearchRequest(query=query, exact=exact, match=match, format="json" if as_json else "text", **fields)

    def opened() -> KnowledgeBase:
        progress = ProgressPrinter(not as_json)
        kb = open_kb(ctx, progress)
        if build and not kb.engine.exists("docs"):
            try:
                report = kb.reindex_all(on_progress=progress, embed=False)
            finally:
                progress.close()
            click.echo(report_summary(report), err=True)
            if report.chunks_pending and kb.embed_in_background():
                click.echo("embedding in the background; answers gain vectors as they arrive", err=True)
        return kb

    data = ask(ctx, "search", request, remote=remote, daemon=not build, kb=opened)
    emit(data, as_json, lambda: data["text"])


@click.command("status")
@partial(request_options, request=StatusRequest)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@remote_option
@click.pass_context
def status_command(ctx: click.Context, as_json: bool, verbose: bool, remote: str | None) -> None:
    """Show the model, counts, index age and skipped files.

    \b
    knowledge status --json
    knowledge status --verbose
    """
    asked = StatusRequest(verbose=verbose, format="json" if as_json else "text")  # text rendered where it is made
    data = ask(ctx, "status", asked, remote=remote, kb=lambda: open_kb(ctx))
    emit(data, as_json, lambda: data["text"])
    if not data.get("exists"):
        ctx.exit(EXIT_PROBLEMS)  # no index: a script checking `knowledge status` must not go on as if there were
