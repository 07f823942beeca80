"""The backend every frontend asks (HTTP, MCP, the daemon, the CLI): one call, an operation of the table
(server/operations.py) and its request object, answered as a JSON-ready dict in the format the request asks.

LocalBackend answers from a warm KnowledgeBase with the operation's handler; knowledge.client.RemoteBackend sends the
same call over HTTP (the only place a request is serialised, with the daemon's socket)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from ..dependency_kbs import ScopedSearch
from ..kb import KnowledgeBase
from .answers import Served
from .operations import BY_NAME

if TYPE_CHECKING:
    from ..api.request import Declared
    from ..records import JsonObject


class Backend(Protocol):
    def call(self, operation: str, request: Declared) -> JsonObject: ...


class LocalBackend:
    """Serves one KnowledgeBase; the embedder is loaded once and shared by all threads."""

    def __init__(self, kb: KnowledgeBase, warm: bool = True) -> None:
        """`warm`: a long-running process keeps in memory what makes later queries faster (not worth it for one)."""
        self.kb = kb
        if warm:
            kb.keep_warm()
        self._served = Served(kb, ScopedSearch(kb), threading.Lock())

    def call(self, operation: str, request: Declared) -> JsonObject:
        """`operation` answered by its handler, in the format `request` asks (JSON unless it asks for text)."""
        declared = BY_NAME[operation]
        assert isinstance(request, declared.request), (operation, type(request).__name__)
        form = declared.forms[getattr(request, "format", "json")]
        return declared.handler(self._served, request, form)
