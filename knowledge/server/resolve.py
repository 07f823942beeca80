"""Which backend answers a frontend's call: a `knowledge serve` at a URL, this repository's warm daemon, or the index
opened here. The one place that choice is made (launcher, CLI commands, MCP). Standard library only at import time,
so the launcher's warm path stays cheap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..api.operations import route_of

if TYPE_CHECKING:
    from ..api.request import Declared
    from ..records import JsonObject
    from .backend import Backend


_NO_DAEMON: set[Path] = set()  # where this process looked and found none: the launcher's look serves the CLI's


def daemon_answer(
    start: Path, operation: str, params: JsonObject | None = None, timeout: float = 120.0, fresh: bool = False
) -> JsonObject | None:
    """The answer of the warm daemon of the work tree holding `start`; None when there is none (or it went away).
    One look a process unless `fresh` (`daemon start` waiting for the one it started)."""
    if os.environ.get("KNOWLEDGE_NO_DAEMON"):
        return None
    where = start.resolve()
    if where in _NO_DAEMON and not fresh:
        return None
    from .daemon_client import find_socket, request

    folder = find_socket(where)  # no git process: a warm call is worth milliseconds
    if folder is None:
        _NO_DAEMON.add(where)
        return None
    return request(folder, "POST", route_of(operation), params or {}, timeout)


def backend_for(remote: str | None, local: Callable[[], Backend]) -> Backend:
    """The backend a long-running frontend (MCP) holds: the server at `remote`, else the index opened here."""
    if remote:
        from ..client import RemoteBackend

        return RemoteBackend(remote)
    return local()


def answer(
    operation: str,
    asked: Declared,
    *,
    start: Path,
    local: Callable[[], Backend],
    remote: str | None = None,
    daemon: bool = True,
) -> JsonObject:
    """One call, answered by the first of: the server at `remote`, the warm daemon (when `daemon`), the local index.
    Only the wire serialises the request: the local index is handed the object."""
    if not remote and daemon:
        data = daemon_answer(start, operation, asked.to_params())
        if data is not None:
            return data
    return backend_for(remote, local).call(operation, asked)
