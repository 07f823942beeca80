"""The `knowledge` entry point. A plain `knowledge search` that this repository's daemon can answer is sent to it
before click, the settings or the records are imported (about half of a warm call's cost); everything else, and any
call the daemon cannot answer, goes to the click CLI, which prints the same output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import JsonObject


def _warm_options() -> tuple[dict[str, str], dict[str, tuple[str, type]]]:
    """The flags and valued options the warm path parses without click: those SearchRequest marks `warm`."""
    from .api.request import request_options

    flags, values = {"--json": "json"}, {}
    for name, kind, option in request_options():
        if option.warm:
            for flag in option.flags:
                if kind is bool:
                    flags[flag] = name
                else:
                    values[flag] = (name, kind)
    return flags, values


def warm_search_params(argv: list[str]) -> tuple[JsonObject, bool] | None:
    """(search parameters, as JSON) for `search QUERY` with the simple options above; None for anything else."""
    if len(argv) < 2 or argv[0] != "search":
        return None
    flags, values = _warm_options()
    params: JsonObject = {}
    as_json = False
    rest = iter(argv[1:])
    for word in rest:
        if word in flags:
            if flags[word] == "json":
                as_json = True
            else:
                params[flags[word]] = True
        elif word in values:
            name, kind = values[word]
            value = next(rest, None)
            if value is None:
                return None
            try:
                params[name] = kind(value)
            except ValueError:
                return None
        elif word.startswith("-") or "query" in params:
            return None  # an option only click knows, or a second argument: click answers (or explains)
        else:
            params["query"] = word
    return (params, as_json) if "query" in params else None


def warm_answer(argv: list[str], cwd: Path) -> str | None:
    """What the daemon prints for this call, or None when the click CLI must answer it. The arguments are read here
    only when a daemon's socket is there: without one, click reads them, once."""
    if not argv or argv[0] != "search":
        return None
    from .server.daemon_client import find_socket

    if find_socket(cwd.resolve()) is None:
        return None
    parsed = warm_search_params(argv)
    if parsed is None:
        return None
    params, as_json = parsed
    from .errors import KnowledgeError
    from .server.resolve import daemon_answer

    try:
        if as_json:
            data = daemon_answer(cwd, "search", params)
            return None if data is None else json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        data = daemon_answer(cwd, "search", {**params, "format": "text"})
    except KnowledgeError:  # a bad value: the CLI's own message
        return None
    return None if data is None or not isinstance(data.get("text"), str) else data["text"]


def main() -> None:
    answer = warm_answer(sys.argv[1:], Path.cwd())
    if answer is None:
        from .cli import main as cli_main

        cli_main()
        return
    sys.stdout.write(answer)
    sys.stdout.flush()
