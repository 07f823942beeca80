"""The CLI's side of the warm daemon: one HTTP call over the index's unix socket, standard library only, so a warm
call costs no numpy, model or index import."""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import KnowledgeError
from ..records import INDEX_DIR_NAME

if TYPE_CHECKING:
    from ..records import JsonObject

SOCKET_NAME = "daemon.sock"


def socket_path(index_folder: Path) -> Path:
    return index_folder / SOCKET_NAME


def socket_of(root: Path) -> Path:
    """The daemon's socket for the repository at `root`."""
    return socket_path(root / INDEX_DIR_NAME)


def find_socket(start: Path) -> Path | None:
    """The `.knowledge/` folder of the work tree holding `start` (the nearest folder with `.git`), if its daemon's
    socket exists."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            index_folder = folder / INDEX_DIR_NAME
            return index_folder if socket_path(index_folder).exists() else None
    return None


def request(
    index_folder: Path, method: str, path: str, body: JsonObject | None = None, timeout: float = 120.0
) -> JsonObject | None:
    """One call to the daemon of this index; None when no daemon answers (the caller takes the cold path)."""
    where = socket_path(index_folder)
    if not where.exists() or not owned_by_caller(index_folder, where):
        return None
    payload = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(str(where))
            if peer_uid(connection) not in (os.getuid(), None):
                return None  # another user's server behind our socket's name: never send it the query
            connection.sendall(head.encode() + payload)
            received = _read_all(connection)
        status, data = _parse(received)
    except (OSError, ValueError):
        return None
    if status != 200:
        raise KnowledgeError(str(data.get("error", f"daemon answered {status}")))
    return data


def owned_by_caller(index_folder: Path, where: Path) -> bool:
    """The socket and its folder are this user's, and neither is a symlink: nobody else can stand in for the daemon."""
    try:
        folder, sock = os.lstat(index_folder), os.lstat(where)
    except OSError:
        return False
    uid = os.getuid()
    return (
        folder.st_uid == uid
        and sock.st_uid == uid
        and stat.S_ISDIR(folder.st_mode)
        and stat.S_ISSOCK(sock.st_mode)
        and not folder.st_mode & 0o022
    )


def peer_uid(connection: socket.socket) -> int | None:
    """The uid of the process at the other end of a unix socket (SO_PEERCRED), or None where the system has no such
    option (then the socket's owner-only mode and folder are the guard)."""
    try:
        raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", raw)[1])


def _read_all(connection: socket.socket) -> bytes:
    """The whole answer: an HTTP/1.0 server closes the connection after it."""
    parts = []
    while chunk := connection.recv(1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def _parse(received: bytes) -> tuple[int, JsonObject]:
    """Status code and JSON body of a raw HTTP/1.0 answer (http.client costs a warm call ~13 ms of imports)."""
    head, _, body = received.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
        raise ValueError("not an HTTP answer")
    return int(status_line[1]), json.loads(body or b"{}")
