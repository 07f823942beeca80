"""Commands that build the index: `reindex-all`, `reindex-from-changes` (also what the git hooks run) and `embed`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..api.request import ReindexRequest
from ..errors import KnowledgeError
from ..records import IndexReport
from ..render import report_problems, report_summary, report_to_dict
from ..render.base import shown
from .context import daemon_call, open_kb
from .guard import EXIT_INTERRUPTED, EXIT_PROBLEMS, storage_problem
from .progress import ProgressPrinter

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..records import JsonObject


@click.command("reindex-all")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("--wait", is_flag=True, help="Embed here and return when every chunk has its vector (scripts, CI).")
@click.option("--background", is_flag=True, hidden=True, help="The default now; kept for older scripts.")
@click.option(
    "--no-vectors", is_flag=True, help="Chunks, names and the lexical index only (drift, lint, grep in CI); no model."
)
@click.pass_context
def reindex_all_command(
    ctx: click.Context, quiet: bool, as_json: bool, wait: bool, background: bool, no_vectors: bool
) -> None:
    """Rebuild the index of docs and code; unchanged chunks reuse cached vectors.

    Returns once the index is searchable: every file chunked, the lexical index built, and every chunk without a
    cached vector given its static first-stage vector (seconds). The model's vectors follow in a detached
    `knowledge embed` (`status` shows how far it is; each answer says its coverage), unless --wait embeds them here.
    Exits 1 when some files were skipped (each is named on stderr); the rest is indexed.

    \b
    knowledge reindex-all
    knowledge reindex-all --wait --quiet
    knowledge --model all-MiniLM-L6-v2 reindex-all --wait
    knowledge reindex-all --no-vectors && knowledge drift --format github
    """
    progress = ProgressPrinter(not quiet)
    kb = open_kb(ctx, progress)
    try:
        report = kb.reindex_all(on_progress=progress, embed=False)
    finally:
        progress.close()
    if no_vectors:
        _finish_report(ctx, report, quiet, as_json)
        return
    # an embedder injected in-process (tests) cannot be handed to a detached process: it embeds here
    here = wait or ctx.find_root().obj.get("embedder_factory") is not None
    _embed_after(ctx, kb, report, progress, quiet, as_json, background=not here, compact=True)


@click.command("reindex-from-changes")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--worktree", is_flag=True, help="Also index uncommitted changes (staged, unstaged, untracked).")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option(
    "--from-hook", "from_hook", metavar="HOOK", hidden=True, help="Run as git hook HOOK: log one line, never fail."
)
@click.pass_context
def reindex_from_changes_command(
    ctx: click.Context, paths: tuple[Path, ...], worktree: bool, quiet: bool, as_json: bool, from_hook: str | None
) -> None:
    """Re-index only what changed since the indexed commit, or exactly PATHS.

    Deleted paths are removed, renamed files reuse their vectors, and unchanged chunks are never re-embedded.
    The git hooks run this in the background after commits, merges, branch switches and rewrites.

    \b
    knowledge reindex-from-changes
    knowledge reindex-from-changes docs/hooks.md docs/old-name.md
    """
    if from_hook:
        _run_from_hook(ctx, from_hook)
        return
    progress = ProgressPrinter(not quiet)
    kb = open_kb(ctx, progress)
    relative = [kb.relative_path(p) for p in paths] if paths else None
    try:
        report = kb.reindex_changes(relative, worktree, on_progress=progress, embed=False)
    finally:
        progress.close()
    _embed_after(ctx, kb, report, progress, quiet, as_json, background=False)


@click.command("embed")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.pass_context
def embed_command(ctx: click.Context, quiet: bool) -> None:
    """Give every chunk still waiting for a vector its vector (resumes an interrupted run).

    Returns at once when another process is already embedding this index.

    \b
    knowledge embed
    """
    progress = ProgressPrinter(not quiet)
    kb = open_kb(ctx, progress)
    try:
        result = kb.embed_pending(progress, compact=True)
    finally:
        progress.close()
    if not quiet:
        state = "" if result.ran else " (another process is embedding this index)"
        click.echo(f"embedded {result.embedded} chunks, {result.reused} from cache{state}", err=True)


def _embed_after(
    ctx: click.Context,
    kb: KnowledgeBase,
    report: IndexReport,
    progress: ProgressPrinter,
    quiet: bool,
    as_json: bool,
    background: bool,
    compact: bool = False,
) -> None:
    """The second phase: vectors for what the first phase could not take from the cache."""
    if report.chunks_pending and not quiet:
        click.echo(
            f"searchable now: {report.chunks_total} chunks, {report.chunks_pending} ranked by the lexical index and "
            "the static first stage until their vectors arrive",
            err=True,
        )
    if background:
        if report.chunks_pending and kb.embed_in_background() and not quiet:
            click.echo("embedding in the background; `knowledge status` shows how far it is", err=True)
        _finish_report(ctx, report, quiet, as_json)
        return
    try:
        result = kb.embed_pending(progress, compact=compact)
    except KeyboardInterrupt:
        progress.close()
        click.echo(
            "embedding paused; the index stays searchable and the next `knowledge reindex-all`, "
            "`reindex-from-changes` or `embed` resumes where this one stopped",
            err=True,
        )
        ctx.exit(EXIT_INTERRUPTED)
    finally:
        progress.close()
    _finish_report(ctx, kb.completed(report, result), quiet, as_json)


def _finish_report(ctx: click.Context, report: IndexReport, quiet: bool, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report_to_dict(report), indent=2))
    if not quiet:
        for problem in report_problems(report):
            click.echo(shown(str(problem)), err=True)
        if report.undescribed and len(report.undescribed) < report.docs_indexed:  # none described: not this repo's way
            click.echo(f"{len(report.undescribed)} doc(s) have no `description`; `knowledge lint` lists them", err=True)
        click.echo(report_summary(report), err=True)
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


def _summary_of(data: JsonObject) -> str:
    fields = {name: data[name] for name in IndexReport.__dataclass_fields__ if name in data}
    fields["skipped"] = tuple(data.get("skipped", ()))
    fields["warnings"] = tuple(data.get("warnings", ()))
    return report_summary(IndexReport(**fields))


def _run_from_hook(ctx: click.Context, hook: str) -> None:
    """The background half of a git hook: one log line on stdout (the hook log), exit 0 whatever happens."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    try:
        warm = daemon_call(ctx, "reindex", ReindexRequest(worktree=False).to_params(), timeout=3600)
        if warm is not None:  # the daemon has the model loaded: nothing to load here
            line = "by the daemon: " + _summary_of(warm)
        else:
            report = open_kb(ctx).reindex_changes()
            line = report_summary(report) + "".join(f"; {shown(str(p))}" for p in report_problems(report))
    except KnowledgeError as exc:
        line = f"nothing indexed: {exc}"
    except Exception as exc:  # the hook must never fail; the log says why
        why = storage_problem(exc) or f"internal error {type(exc).__name__}: {exc}"
        line = f"nothing indexed: {why}"
    click.echo(f"{stamp} {hook}: {line}")
