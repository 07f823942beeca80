"""Every operation the API serves, declared once: its name (the Backend method), HTTP method and route. The HTTP
server's routes (http.py), the daemon's and the remote client's dispatch (resolve.py, client.py) are made from this
table. Standard library only: the launcher's warm path imports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Operation:
    name: str  # the Backend method that answers it
    method: str  # GET: no parameters; POST: a JSON object of parameters
    route: str


OPERATIONS = (
    Operation("search", "POST", "/v1/search"),
    Operation("search_text", "POST", "/v1/search-text"),
    Operation("locate", "POST", "/v1/locate"),
    Operation("locate_text", "POST", "/v1/locate-text"),
    Operation("source", "POST", "/v1/source"),
    Operation("status", "GET", "/v1/status"),
    Operation("docs_for_file", "POST", "/v1/docs-for-file"),
    Operation("docs_for", "POST", "/v1/docs-for"),
    Operation("reindex", "POST", "/v1/reindex"),
    Operation("llms_txt", "GET", "/v1/llms-txt"),
)
BY_NAME = {operation.name: operation for operation in OPERATIONS}
