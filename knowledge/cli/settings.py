"""`knowledge config`: every resolved setting and where it came from."""

from __future__ import annotations

import click

from ..config import load_settings
from .context import repository_root


@click.command("config")
@click.pass_context
def config_command(ctx: click.Context) -> None:
    """Print every resolved setting and where it came from.

    \b
    knowledge config
    """
    from ..embedding import model_spec
    from ..kb import default_variant

    root = repository_root(ctx)
    settings, sources = load_settings(root, ctx.find_root().obj["overrides"])
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
