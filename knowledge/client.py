"""RemoteBackend: the Backend's one call forwarded to a `knowledge serve` over HTTP (token from KNOWLEDGE_TOKEN)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from .api.operations import route_of
from .errors import KnowledgeError

if TYPE_CHECKING:
    from .api.request import Declared
    from .records import JsonObject

TIMEOUT_SECONDS = 60


class RemoteBackend:
    """Talks to `knowledge serve` at `url`; raises KnowledgeError with the server's own message on failure."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("KNOWLEDGE_TOKEN", "")
        if not self.token:
            raise KnowledgeError(f"{url}: set KNOWLEDGE_TOKEN to the server's token to use --remote")

    def _call(self, method: str, path: str, body: JsonObject | None = None) -> JsonObject:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                answer: JsonObject = json.loads(response.read())
                return answer
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                message = exc.reason
            raise KnowledgeError(f"{self.url}{path}: {exc.code} {message}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise KnowledgeError(f"{self.url}: cannot reach the server ({getattr(exc, 'reason', exc)})") from exc

    def call(self, operation: str, request: Declared) -> JsonObject:
        """One operation at its route, its request sent as JSON parameters."""
        return self._call("POST", route_of(operation), request.to_params())
