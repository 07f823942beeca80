"""Commands that answer: `search` (ranked sections and code, or every occurrence with --exact/--substring/--regex)
and `status`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..render import report_summary, status_from_dict, status_to_text
from ..request import SearchRequest
from .context import ask, emit, open_kb
from .guard import EXIT_PROBLEMS
from .progress import ProgressPrinter

if TYPE_CHECKING:
    from ..kb import KnowledgeBase


@click.command("search")
@click.argument("query")
@click.option("-k", "--top-k", "k", type=click.IntRange(min=1, max=100), help="Most results to return.")
@click.option("--threshold", type=click.FloatRange(-1, 1), help="Drop results below this cosine similarity.")
@click.option(
    "--full-threshold",
    type=click.FloatRange(-1, 1),
    help="Include full text only for results at or above this similarity.",
)
@click.option("--budget", type=click.IntRange(min=1, max=50_000), help="Token budget for everything returned.")
@click.option("--metadata-only", is_flag=True, help="Never include content: paths, titles, sections, lines.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON schema (docs/json-output.md).")
@click.option("--build", is_flag=True, help="Build the index first if there is none.")
@click.option(
    "--kind",
    type=click.Choice(["all", "docs", "code"]),
    default="all",
    show_default=True,
    help="Search docs, code, or both (merged by fused rank).",
)
@click.option("--expand", is_flag=True, help="Add the top code hit's callers and callees, as the budget allows.")
@click.option("--explain", is_flag=True, help="Show each result's dense and lexical scores, ranks and fused score.")
@click.option("--path", "paths", multiple=True, metavar="GLOB", help="Only results whose path matches (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="No results whose path matches (repeatable).")
@click.option("--lang", "language", multiple=True, metavar="NAME", help="Only code in this language (repeatable).")
@click.option("--files", "files_only", is_flag=True, help="List the matching files, best first, one line each.")
@click.option("--exact", is_flag=True, help="Every line where QUERY occurs as a whole word (grep -rnw; no model).")
@click.option("--substring", is_flag=True, help="Every line holding QUERY anywhere (grep -rnF).")
@click.option("--regex", is_flag=True, help="Every line matching the regular expression QUERY (grep -rnE).")
@click.option(
    "-C",
    "--context",
    type=click.IntRange(0, 20),
    default=0,
    help="With --exact/--substring/--regex: lines either side.",
)
@click.option("--remote", metavar="URL", help="Ask a `knowledge serve` at URL (token from KNOWLEDGE_TOKEN).")
@click.pass_context
def search_command(
    ctx: click.Context,
    query: str,
    k: int | None,
    threshold: float | None,
    full_threshold: float | None,
    budget: int | None,
    metadata_only: bool,
    as_json: bool,
    build: bool,
    kind: str,
    expand: bool,
    explain: bool,
    paths: tuple[str, ...],
    exclude: tuple[str, ...],
    language: tuple[str, ...],
    files_only: bool,
    exact: bool,
    substring: bool,
    regex: bool,
    context: int,
    remote: str | None,
) -> None:
    """Find the doc sections and code that answer QUERY, best first, within a token budget.

    \b
    knowledge search "how are hooks installed"
    knowledge search "token budget" --json --budget 500
    knowledge search "retry on timeout" --kind code --path 'src/**' --exclude 'tests/**' --lang python
    knowledge search reindex_changes --exact -C 2
    knowledge search 'def [a-z_]+_changes' --regex --path 'knowledge/**'
    """
    if exact + substring + regex > 1:
        raise click.UsageError("choose one of --exact, --substring and --regex")
    if not query.strip():
        raise click.UsageError("QUERY is empty: say what to look for")
    request = SearchRequest(
        query=query,
        k=k,
        threshold=threshold,
        full_threshold=full_threshold,
        budget=budget,
        metadata_only=metadata_only,
        kind=kind,
        explain=explain,
        expand=expand,
        paths=paths,
        exclude=exclude,
        language=language,
        files_only=files_only,
        exact=exact or substring or regex,
        match="substring" if substring else "regex" if regex else "word",
        context=context,
    )

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

    operation = "search" if as_json else "search_text"  # the text is rendered where the answer is made
    data = ask(ctx, operation, request.to_params(), remote=remote, daemon=not build, kb=opened)
    emit(data, as_json, lambda: data["text"])


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--verbose", "-v", is_flag=True, help="Also list every redacted secret (file, line, kind).")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool, verbose: bool) -> None:
    """Show the model, counts, index age and skipped files.

    \b
    knowledge status --json
    knowledge status --verbose
    """
    data = ask(ctx, "status", kb=lambda: open_kb(ctx))
    emit(data, as_json, lambda: status_to_text(status_from_dict(data), verbose))
    if not data.get("exists"):
        ctx.exit(EXIT_PROBLEMS)  # no index: a script checking `knowledge status` must not go on as if there were
