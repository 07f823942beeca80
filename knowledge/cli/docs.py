"""Commands about the docs themselves: `lint`, `drift`, `eval` (findability) and `llms-txt`."""

from __future__ import annotations

import click

from .. import admin
from ..render import (
    drift_to_dict,
    drift_to_github,
    drift_to_sarif,
    drift_to_text,
    findability_to_dict,
    findability_to_text,
)
from .context import emit, open_kb
from .guard import EXIT_PROBLEMS


@click.command("lint")
@click.pass_context
def lint_command(ctx: click.Context) -> None:
    """List docs without a `description` (or unreadable ones); exit 1 if any.

    \b
    knowledge lint
    """
    problems = open_kb(ctx).lint()
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(f"{len(problems)} doc(s) need attention", err=True)
        ctx.exit(EXIT_PROBLEMS)


@click.command("drift")
@click.option("--since", metavar="REV", help="Only drift that commits after REV brought in.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same as --format json).")
@click.option(
    "--format",
    "output",
    type=click.Choice(["text", "json", "github", "sarif"]),
    default="text",
    help="github: workflow annotations on the doc lines; sarif: SARIF 2.1.0 for code scanning.",
)
@click.pass_context
def drift_command(ctx: click.Context, since: str | None, as_json: bool, output: str) -> None:
    """Doc sections whose referenced code changed after them, and references that no longer resolve; exit 1 if any
    reference is broken (a deleted or moved file, a renamed or removed function). A changelog's sections are history:
    listed apart, they fail nothing unless the setting `drift_changelogs` is true.

    \b
    knowledge drift
    knowledge drift --since origin/main --json
    knowledge drift --since origin/main --format github
    """
    kb = open_kb(ctx)
    items = kb.drift(since)
    output = "json" if as_json else output
    if output in ("json", "sarif"):
        emit(drift_to_dict(items) if output == "json" else drift_to_sarif(items), True, str)
    else:
        click.echo(drift_to_github(items) if output == "github" else drift_to_text(items), nl=False)
    if any(item.status == "broken" and (kb.settings.drift_changelogs or not item.history) for item in items):
        ctx.exit(EXIT_PROBLEMS)


@click.command("eval")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def eval_command(ctx: click.Context, as_json: bool) -> None:
    """Can each doc be found by its own description and section titles? Recall@1/@5 and MRR, and the docs their
    description does not find first, with the docs that outrank them.

    \b
    knowledge eval
    knowledge eval --json
    """
    report = open_kb(ctx).findability()
    emit(findability_to_dict(report), as_json, lambda: findability_to_text(report))


@click.command("llms-txt")
@click.option("--full", is_flag=True, help="Also llms-full.txt: the docs' text, as much as --budget allows.")
@click.option("--budget", type=click.IntRange(1000, 2_000_000), default=100_000, show_default=True, help="Tokens.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when the committed file(s) differ (for hooks, CI).")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print llms.txt instead of writing it.")
@click.pass_context
def llms_txt_command(ctx: click.Context, full: bool, budget: int, check: bool, to_stdout: bool) -> None:
    """Write llms.txt (llmstxt.org) at the repository root from the docs' front matter.

    \b
    knowledge llms-txt
    knowledge llms-txt --full --budget 50000
    knowledge llms-txt --check
    """
    kb = open_kb(ctx)
    files = kb.llms_txt(budget if full else None)
    if to_stdout:
        click.echo(files["llms.txt"], nl=False)
        return
    stale = []
    for name, text in files.items():
        if admin.read_generated(kb.root, name) == text:
            continue
        if check:
            stale.append(name)
        else:
            admin.write_generated(kb.root, name, text)
            click.echo(f"wrote {name}", err=True)
    if stale:
        click.echo(f"{', '.join(stale)}: out of date with the docs' front matter; run `knowledge llms-txt`", err=True)
        ctx.exit(EXIT_PROBLEMS)
