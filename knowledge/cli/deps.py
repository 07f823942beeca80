"""`knowledge deps`: the repository's declared dependencies, each resolved to what is installed where it runs; a
dependency's installed code and docs indexed once in the user cache, and asked."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import click

from .. import dependency_kbs
from ..render import search_to_text
from .context import open_kb, repository_root

if TYPE_CHECKING:
    from ..kb import KnowledgeBase


@click.group("deps")
def deps_group() -> None:
    """The repository's dependencies at the versions installed: listed, indexed once in the user cache, asked.

    \b
    knowledge deps list
    knowledge deps index click
    knowledge deps search click "shell completion for a custom parameter type"
    """


@deps_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every dependency with what was found.")
@click.pass_context
def list_command(ctx: click.Context, as_json: bool) -> None:
    """List the dependencies the repository declares (pyproject.toml, requirements*.txt, package.json, Cargo.toml,
    go.mod), the version installed where it runs (its .venv, node_modules, Cargo's registry sources, Go's module
    cache), what the lockfile pins and whether that version is indexed in the user cache; read from files on disk
    only, nothing downloaded, imported or run.

    \b
    knowledge deps list
    knowledge deps list --json
    """
    root = repository_root(ctx)
    listed = dependency_kbs.listed(root)
    found = [dependency for dependency, _ in listed]
    index = {dependency.name: folder for dependency, folder in listed}
    if as_json:
        rows = [{**asdict(d), "problem": d.problem, "indexed": index[d.name]} for d in found]
        click.echo(json.dumps({"dependencies": rows}, indent=2))
        return
    if not found:
        click.echo(
            f"{root}: no dependencies declared (pyproject.toml, requirements*.txt, package.json, Cargo.toml, go.mod)"
        )
        return
    for dependency in found:
        where = dependency.location or "-"
        with_root = f"{root}/"
        shown = where[len(with_root) :] if where.startswith(with_root) else where
        state = dependency.installed or "-"
        problem = f"  ({dependency.problem})" if dependency.problem else ""
        cached = "indexed" if index[dependency.name] else "-"
        click.echo(
            f"{dependency.ecosystem:<6}  {dependency.name:<24} {state:<12} {cached:<8} {shown}  "
            f"[{dependency.wanted} in {dependency.declared_in}]{problem}"
        )
    problems = sum(1 for d in found if d.problem)
    ready = sum(1 for name in index if index[name])
    click.echo(f"{len(found)} dependencies, {problems} with a problem, {ready} indexed")


def _dependency_kb(ctx: click.Context, name: str, quiet: bool = True) -> tuple[str, KnowledgeBase]:
    """The dependency's source (`click==8.1.7`) and its index in the user cache, built the first time any repository
    asks for that version."""
    asked, source, chunks = dependency_kbs.dependency_kb(open_kb(ctx), name)
    if not quiet:
        folder = asked.root
        made = f"indexed {chunks} chunks in {folder}" if chunks is not None else f"already indexed in {folder}"
        click.echo(f"{source}: {made}" + ("" if chunks is not None else " (shared, not rebuilt)"))
    return source, asked


@deps_group.command("index")
@click.argument("name")
@click.pass_context
def index_command(ctx: click.Context, name: str) -> None:
    """Index dependency NAME at the version installed, once, in the user cache (every repository using that version
    shares it).

    \b
    knowledge deps index click
    """
    _dependency_kb(ctx, name, quiet=False)


@deps_group.command("search")
@click.argument("name")
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(1, 100), default=None, help="Results at most.")
@click.option("--json", "as_json", is_flag=True, help="The `search --json` schema, with the source named.")
@click.pass_context
def search_command(ctx: click.Context, name: str, query: str, k: int | None, as_json: bool) -> None:
    """Ask dependency NAME, at the version installed, what `knowledge search` asks the repository (indexed first if
    no repository has asked that version yet).

    \b
    knowledge deps search click "shell completion for a custom parameter type"
    """
    from ..render import search_to_dict

    source, kb = _dependency_kb(ctx, name)
    response = replace(kb.search(query, **({"k": k} if k else {})), source=source)
    if as_json:
        click.echo(json.dumps(search_to_dict(response), indent=2))
    else:
        click.echo(search_to_text(response), nl=False)
