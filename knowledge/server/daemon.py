"""The warm daemon: the same JSON API as `knowledge serve`, on a unix socket under `.knowledge/` that only its owner
can open (mode 600, and the peer's uid is checked). Nothing listens on the network. It exits after an idle time.
"""

from __future__ import annotations

import contextlib
import os
import socketserver
import threading
import time
from pathlib import Path

from .backend import Backend
from .daemon_client import peer_uid
from .http import _Handler


class DaemonServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, backend: Backend, idle_seconds: float) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        previous = os.umask(0o177)  # the socket is created 600: owner only
        try:
            super().__init__(str(path), _DaemonHandler)
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        self.path = path
        self.backend = backend
        self.idle_seconds = idle_seconds
        self.last_request = time.monotonic()
        self.quiet = True

    def serve_until_idle(self) -> None:
        watcher = threading.Thread(target=self._watch_idle, daemon=True)
        watcher.start()
        try:
            self.serve_forever(poll_interval=0.5)
        finally:
            self.server_close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def _watch_idle(self) -> None:
        while True:
            time.sleep(min(5.0, self.idle_seconds))
            if time.monotonic() - self.last_request > self.idle_seconds:
                self.shutdown()
                return


class _DaemonHandler(_Handler):
    server: DaemonServer  # type: ignore[assignment]

    def address_string(self) -> str:
        return "unix"

    def _authorized(self) -> bool:
        self.server.last_request = time.monotonic()
        uid = peer_uid(self.connection)
        if uid is not None and uid != os.getuid():
            self._send(403, {"error": "only the owner of this index may use its daemon"})
            return False
        if self.path.split("?", 1)[0] == "/v1/shutdown":
            self._send(200, {"stopping": True})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return False
        return True
