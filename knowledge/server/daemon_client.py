"""The CLI's side of the warm daemon: one HTTP call over the index's unix socket, standard library only, so a warm
call costs no numpy, model or index import."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any

from ..errors import KnowledgeError

SOCKET_NAME = "daemon.sock"


def socket_path(index_folder: Path) -> Path:
    return index_folder / SOCKET_NAME


def find_socket(start: Path) -> Path | None:
    """The `.knowledge/` folder of the work tree holding `start` (the nearest folder with `.git`), if its daemon's
    socket exists."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            index_folder = folder / ".knowledge"
            return index_folder if socket_path(index_folder).exists() else None
    return None


def request(
    index_folder: Path, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 120.0
) -> dict[str, Any] | None:
    """One call to the daemon of this index; None when no daemon answers (the caller takes the cold path)."""
    where = socket_path(index_folder)
    if not where.exists():
        return None

    class _Connection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(str(where))

    connection = _Connection("localhost", timeout=timeout)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        connection.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = json.loads(response.read() or b"{}")
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    if response.status != 200:
        raise KnowledgeError(str(data.get("error", f"daemon answered {response.status}")))
    return data
