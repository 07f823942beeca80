"""`knowledge deps`: the repository's declared dependencies, each resolved to what is installed where it runs."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from .. import admin
from .context import repository_root


@click.command("deps")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every dependency with what was found.")
@click.pass_context
def deps_command(ctx: click.Context, as_json: bool) -> None:
    """List the dependencies the repository declares (pyproject.toml, requirements*.txt, package.json), the version
    installed where it runs (its .venv, node_modules) and what the lockfile pins; read from files on disk only,
    nothing downloaded, imported or run.

    \b
    knowledge deps
    knowledge deps --json
    """
    root = repository_root(ctx)
    found = admin.dependencies(root)
    if as_json:
        rows = [{**asdict(d), "problem": d.problem} for d in found]
        click.echo(json.dumps({"dependencies": rows}, indent=2))
        return
    if not found:
        click.echo(f"{root}: no dependencies declared (pyproject.toml, requirements*.txt, package.json)")
        return
    for dependency in found:
        where = dependency.location or "-"
        with_root = f"{root}/"
        shown = where[len(with_root) :] if where.startswith(with_root) else where
        state = dependency.installed or "-"
        problem = f"  ({dependency.problem})" if dependency.problem else ""
        click.echo(
            f"{dependency.ecosystem:<6}  {dependency.name:<24} {state:<12} {shown}  "
            f"[{dependency.wanted} in {dependency.declared_in}]{problem}"
        )
    problems = sum(1 for d in found if d.problem)
    click.echo(f"{len(found)} dependencies, {problems} with a problem")
