"""`knowledge export` and `knowledge import`: the local index in one file, built once (CI) and imported by clones."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..admin import export_snapshot, import_snapshot, import_snapshot_from
from ..render import report_summary
from .context import open_kb
from .progress import ProgressPrinter


@click.command("export")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, file: Path | None) -> None:
    """Write the index (chunks, lexical index, static and transformer vectors, history) to FILE, stamped with its
    commit, model and checksums; by default knowledge-<commit>.snapshot here. `knowledge import FILE` in a clone.

    \b
    knowledge export                        # knowledge-1a2b3c4d5e6f.snapshot
    knowledge export /tmp/index.snapshot
    """
    kb = open_kb(ctx)
    started = time.monotonic()
    target = file or Path(f"knowledge-{(kb.index('code').commit or 'index')[:12]}.snapshot")
    info = export_snapshot(kb, target)
    size = info.path.stat().st_size
    click.echo(
        f"exported the index at {info.commit[:12]} ({info.model_id}) to {info.path}: {size / 1e6:.1f} MB, "
        f"{len(info.files)} files, in {time.monotonic() - started:.1f}s"
    )


@click.command("import")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--from", "url", metavar="URL", help="Fetch the snapshot over HTTP(S) first (a CI's artifact).")
@click.option("--quiet", "-q", is_flag=True, help="No progress.")
@click.pass_context
def import_command(ctx: click.Context, file: Path | None, url: str | None, quiet: bool) -> None:
    """Make FILE (from `knowledge export`) this clone's index, searchable at once with the quality it was built
    with, then catch up from its commit to the checkout as the hooks do. Refused in one line: another model, a
    tampered or truncated file, a commit this clone does not have. With --from URL the snapshot is fetched first
    (KNOWLEDGE_SNAPSHOT_TOKEN, when set, is sent as a bearer token).

    \b
    knowledge import index.snapshot
    knowledge import --from https://ci.example.com/artifacts/knowledge/index.snapshot
    """
    if (file is None) == (url is None):
        raise click.UsageError("give a snapshot FILE or --from URL (one of them)")
    if file is not None and not file.is_file():
        raise click.UsageError(f"{file}: no such file")
    kb = open_kb(ctx)
    started = time.monotonic()
    if url is not None:
        progress = ProgressPrinter(not quiet)
        info, report = import_snapshot_from(kb, url, progress)
        progress.close()
    else:
        assert file is not None
        info, report = import_snapshot(kb, file)
    took = time.monotonic() - started
    click.echo(f"imported the index of {info.commit[:12]} in {took:.1f}s; {report_summary(report)}")
