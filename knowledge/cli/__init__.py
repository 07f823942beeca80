"""The `knowledge` command line: the group's options and the list of commands, nothing else. Each command lives in
the module named for its job; `context` gives them the repository, the knowledge base and the backend that answers,
`guard` turns failures into one line and an exit code. The only package importing click."""

from __future__ import annotations

from pathlib import Path

import click

from ..admin import MODEL_VARIANTS
from ..version import __version__
from . import agents, daemon, deps, docs, hooks, index, locate, model, search, serve, settings, snapshot, source, teams
from .guard import KnowledgeGroup


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
@click.option("--variant", "model_variant", type=click.Choice(MODEL_VARIANTS), help="Model precision.")
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


COMMANDS = (
    index.reindex_all_command,
    index.reindex_from_changes_command,
    index.embed_command,
    snapshot.export_command,
    snapshot.import_command,
    search.search_command,
    locate.locate_command,
    search.status_command,
    source.show_command,
    source.docs_for_command,
    docs.llms_txt_command,
    docs.lint_command,
    docs.drift_command,
    docs.eval_command,
    settings.config_command,
    deps.deps_group,
    hooks.hooks_group,
    model.model_group,
    serve.serve_command,
    serve.mcp_command,
    agents.agents_group,
    daemon.daemon_group,
    teams.teams_group,
)
for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    cli(prog_name="knowledge")
