"""A command's options made from its request's declaration (api/request.py): one click option per field with
command-line flags, and one flag per switch (`--regex` sets `match`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..api.request import Declared, Option, SearchRequest
from ..api.request import request_options as declared_options


def _click_type(kind: type, option: Option) -> Any:  # noqa: ANN401 - a click.ParamType, or None for text
    if kind is int:
        return click.IntRange(
            None if option.low is None else int(option.low), None if option.high is None else int(option.high)
        )
    if kind is float:
        return click.FloatRange(option.low, option.high)
    if option.choices:
        return click.Choice(option.choices)
    return None


def request_options(command: Callable[..., None], request: type[Declared] = SearchRequest) -> Callable[..., None]:
    """The options of a command (`search`, `locate`, `status`, `show`), one per field of its request with
    command-line flags (api/request.py)."""
    for name, kind, option in reversed(list(declared_options(request))):
        for flag, value, help in reversed(option.switches):  # `--regex`: match set to "regex"
            command = click.option(flag, f"{name}_{value}", is_flag=True, help=help)(command)
        if not option.flags:
            continue
        command = click.option(
            *option.flags,
            name,
            type=_click_type(kind, option),
            is_flag=kind is bool,
            multiple=kind is tuple,
            metavar=option.metavar,
            show_default=bool(option.choices),
            default=request.__dataclass_fields__[name].default if option.choices or kind is bool else None,
            help=option.help,
        )(command)
    return command


def switched_to_fields(asked: dict[str, Any], request: type[Declared], *, but: str = "") -> None:
    """A switch sets its field (`--deps`: scope set to "deps"), in place in the options `asked`; one that contradicts
    the field given too is a usage error. `but`: the field whose switches the command reads itself."""
    for name, _, option in declared_options(request):
        for flag, value, _ in option.switches if name != but else ():
            if asked.pop(f"{name}_{value}"):
                if asked[name] not in (value, request.__dataclass_fields__[name].default):
                    raise click.UsageError(f"choose one of {flag} and --{name} {asked[name]}")
                asked[name] = value
