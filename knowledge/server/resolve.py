"""Which backend answers a frontend's call: a `knowledge serve` at a URL, this repository's warm daemon, or the index
opened here. The one place that choice is made (launcher, CLI commands, MCP). Standard library only at import time,
so the launcher's warm path stays cheap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..api.operations import BY_NAME

if TYPE_CHECKING:
    from ..records import JsonObject
    from .backend import Backend

# operation -> (method, route): the daemon and `knowledge serve` share the HTTP routes (api/operations.py)
ROUTES = {name: (operation.method, operation.route) for name, operation in BY_NAME.items()}
ROUTES["shutdown"] = ("POST", "/v1/shutdown")  # the daemon's own


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
    method, route = ROUTES[operation]
    return request(folder, method, route, params if method == "POST" else None, timeout)


def backend_for(remote: str | None, local: Callable[[], Backend]) -> Backend:
    """The backend a long-running frontend (MCP) holds: the server at `remote`, else the index opened here."""
    if remote:
        from ..client import RemoteBackend

        return RemoteBackend(remote)
    return local()


def answer(
    operation: str,
    params: JsonObject | None,
    *,
    start: Path,
    local: Callable[[], Backend],
    remote: str | None = None,
    daemon: bool = True,
) -> JsonObject:
    """One call, answered by the first of: the server at `remote`, the warm daemon (when `daemon`), the local index."""
    if not remote and daemon:
        data = daemon_answer(start, operation, params)
        if data is not None:
            return data
    backend = backend_for(remote, local)
    method = getattr(backend, operation)
    answered: JsonObject = method() if ROUTES[operation][0] == "GET" else method(params or {})
    return answered
