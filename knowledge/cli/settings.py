"""`knowledge config`: every resolved setting and where it came from."""

from __future__ import annotations

import click

from .. import admin
from .context import overrides, repository_root


@click.command("config")
@click.pass_context
def config_command(ctx: click.Context) -> None:
    """Print every resolved setting and where it came from.

    \b
    knowledge config
    """
    for name, value, source in admin.resolved_settings(repository_root(ctx), overrides(ctx)):
        if isinstance(value, tuple):
            value = "[" + ", ".join(f'"{v}"' for v in value) + "]"
        click.echo(f"{name} = {value!s}  ({source})")
