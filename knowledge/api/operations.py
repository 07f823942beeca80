"""Where an operation is asked over HTTP (`knowledge serve` and the daemon's socket): its route, made from its name.
Standard library only: the launcher's warm path asks the daemon with it. The operations themselves, each with its
request, handler, formats and MCP tool, are one table: server/operations.py."""

from __future__ import annotations

ROUTE_PREFIX = "/v1/"


def route_of(operation: str) -> str:
    """`docs_for_file` -> `/v1/docs-for-file`. Every operation is a POST of its request's JSON parameters; one whose
    request needs nothing may also be asked with a GET."""
    return ROUTE_PREFIX + operation.replace("_", "-")
