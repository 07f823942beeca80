"""`knowledge serve`: the JSON API over HTTP, bearer-token protected, one thread per request.

Every request needs `Authorization: Bearer <token>`; Host and Origin are checked against DNS rebinding; bodies are
capped; a background thread keeps the index caught up with git without blocking queries.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..api.request import LlmsTxtRequest
from ..errors import KnowledgeError, PathOutsideRepositoryError
from ..render.base import escaped_json
from .auth import bearer_ok, host_allowed, origin_allowed
from .backend import Backend
from .operations import OPERATIONS, Operation

if TYPE_CHECKING:
    from ..records import JsonObject

MAX_BODY_BYTES = 64 * 1024
SOCKET_TIMEOUT_SECONDS = 30
HEADER_DEADLINE_SECONDS = 10  # a request line and its headers arrive within this, however slowly they trickle
MAX_CONNECTIONS = 256  # open connections served at once (a thread each); more wait for one to close
# connections that have not yet sent a request with the token: at most this many at once; a new one past it closes
# the longest-waiting of them, so peers without the token cannot hold the slots authenticated clients need
UNPROVEN_CONNECTIONS = 32


class KnowledgeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default backlog of 5 refused a burst of 50 parallel searches

    def __init__(
        self,
        address: tuple[str, int],
        backend: Backend,
        token: str,
        allowed_hosts: frozenset[str] = frozenset(),
        allowed_origins: frozenset[str] = frozenset(),
        quiet: bool = True,
    ) -> None:
        super().__init__(address, _Handler)
        self.backend = backend
        self.token = token
        self.bind_host = address[0]
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = allowed_origins
        self.quiet = quiet
        self._open = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._unproven: dict[Any, None] = {}  # sockets in the order they came, none of them authenticated yet
        self._unproven_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:  # noqa: ANN401 - socketserver's types
        """A thread for the connection while fewer than MAX_CONNECTIONS are open; else it waits (in the listen backlog)
        until one closes, which the header deadline bounds, and only then is answered 503 (300 slow clients held 300
        threads, without end)."""
        if not self._open.acquire(timeout=HEADER_DEADLINE_SECONDS + 1):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        with self._unproven_lock:
            if len(self._unproven) >= UNPROVEN_CONNECTIONS:
                oldest = next(iter(self._unproven))
                del self._unproven[oldest]
                with contextlib.suppress(OSError):
                    oldest.shutdown(socket.SHUT_RDWR)  # its thread sees the end and returns its slot
            self._unproven[request] = None
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            self._open.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:  # noqa: ANN401
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)
            self._open.release()

    def proven(self, request: Any) -> None:  # noqa: ANN401 - a socket
        """The connection sent the token: it keeps its slot as long as it stays open, within the socket timeout."""
        self._forget(request)

    def _forget(self, request: Any) -> None:  # noqa: ANN401 - a socket
        with self._unproven_lock:
            self._unproven.pop(request, None)


def _routes(backend: Backend) -> dict[tuple[str, str], Callable[[JsonObject], JsonObject]]:
    """Every operation's route (server/operations.py): a POST of its parameters, and a GET where it needs none; and
    /llms.txt where agents look for it (served as text)."""
    routes: dict[tuple[str, str], Callable[[JsonObject], JsonObject]] = {}
    for operation in OPERATIONS:
        answer = _answering(backend, operation)
        routes[("POST", operation.route)] = answer
        if operation.takes_get:
            routes[("GET", operation.route)] = answer
    routes[("GET", "/llms.txt")] = lambda _body: backend.call("llms_txt", LlmsTxtRequest())
    return routes


def _answering(backend: Backend, operation: Operation) -> Callable[[JsonObject], JsonObject]:
    """The JSON body made the operation's request (validated once, here) and handed to the backend."""
    return lambda body: backend.call(operation.name, operation.request.from_params(body))


class _Handler(BaseHTTPRequestHandler):
    server: KnowledgeHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_SECONDS  # a slow client ties up only its own thread, and not forever

    def handle_one_request(self) -> None:
        # the socket timeout bounds one silent read; this bounds the whole request line and headers, however slowly
        # they trickle in (one byte every few seconds held a thread for minutes)
        deadline = threading.Timer(HEADER_DEADLINE_SECONDS, self._cut)
        deadline.daemon = True
        self._deadline = deadline
        deadline.start()
        try:
            super().handle_one_request()
        finally:
            deadline.cancel()

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self._deadline.cancel()  # headers in: the body and the answer have the socket timeout
        return parsed

    def _cut(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: ANN401
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _send(self, status: int, payload: JsonObject, headers: dict[str, str] | None = None) -> None:
        body = escaped_json(json.dumps(payload, ensure_ascii=False)).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_text(self, text: str) -> None:
        body = text.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self) -> JsonObject | None:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            return {}
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError(length)
        except ValueError:
            self._send(400, {"error": "bad Content-Length"})
            return None
        if length > MAX_BODY_BYTES:
            self._send(413, {"error": f"request body over {MAX_BODY_BYTES} bytes"}, {"Connection": "close"})
            self.close_connection = True
            return None
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than any real request
            self._send(400, {"error": "body is not valid JSON"})
            return None
        if not isinstance(body, dict):
            self._send(400, {"error": "body must be a JSON object"})
            return None
        return body

    def _authorized(self) -> bool:
        """The request's Host, Origin and token checked; a refusal closes the connection (a peer without the token
        keeps no slot by sending a request now and then)."""
        server = self.server
        if not host_allowed(self.headers.get("Host"), server.bind_host, server.allowed_hosts):
            return self._refuse(403, "Host header not allowed")
        if not origin_allowed(self.headers.get("Origin"), server.allowed_origins):
            return self._refuse(403, "Origin not allowed")
        if not bearer_ok(self.headers.get("Authorization"), server.token):
            return self._refuse(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
        server.proven(self.connection)
        return True

    def _refuse(self, status: int, error: str, headers: dict[str, str] | None = None) -> bool:
        self._send(status, {"error": error}, {**(headers or {}), "Connection": "close"})
        self.close_connection = True
        return False

    def _dispatch(self, method: str) -> None:
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        handler = _routes(self.server.backend).get((method, path))
        if handler is None:
            self._send(404, {"error": f"no route {method} {path}"})
            return
        body = self._read_body()
        if body is None:
            return
        try:
            answer = handler(body)
            if path.endswith(".txt"):
                self._send_text(answer["text"])
            else:
                self._send(200, answer)
        except PathOutsideRepositoryError as exc:
            self._send(403, {"error": str(exc)})
        except KnowledgeError as exc:
            self._send(400, {"error": str(exc)})
        except Exception as exc:  # one broken request must not take the server down
            self._send(500, {"error": f"internal error: {type(exc).__name__}"})


class Freshener(threading.Thread):
    """Calls `catch_up` every `interval` seconds; queries keep answering from the last good index meanwhile."""

    def __init__(
        self, catch_up: Callable[[], object], interval: float, on_error: Callable[[Exception], None] | None = None
    ) -> None:
        super().__init__(name="knowledge-freshener", daemon=True)
        self._catch_up = catch_up
        self._interval = interval
        self._stop = threading.Event()
        self._on_error = on_error

    def run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._catch_up()
            except Exception as exc:  # keep serving; the next round may succeed
                if self._on_error is not None:
                    self._on_error(exc)

    def stop(self) -> None:
        self._stop.set()
