"""`knowledge import --from URL`: a snapshot fetched over HTTP(S) with the standard library (no new dependency, and
the network only when asked), streamed into a new private file under `.knowledge/`, then imported as a file is.

The bearer token (KNOWLEDGE_SNAPSHOT_TOKEN) goes only to the URL's own origin (scheme, host, port): a redirect to
another origin (an artifact store's blob storage) is followed without it, a redirect from https to http is refused,
and the token is never sent over plain http except to this machine (loopback). The body is bounded: at most
`snapshot_max_bytes` and what the disk can hold twice (the file, then its unpacked copy), no read that stalls longer
than a minute, no fetch longer than an hour; the partial file is removed on every exit, SIGTERM included."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .errors import KnowledgeError
from .fs import open_new_private, private_dir
from .interrupts import terminated_as_exit
from .records import Progress
from .store import index_dir

TOKEN_ENV = "KNOWLEDGE_SNAPSHOT_TOKEN"  # sent as a bearer token when set (a CI's artifact store)
_CHUNK = 1 << 20
_MAX_REDIRECTS = 10
_DISK_MARGIN = 256 << 20  # what import leaves free on the disk beyond the snapshot and its unpacked copy


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int
    stall_seconds: float = 60.0  # no byte for this long: the server is gone
    deadline_seconds: float = 3600.0  # the whole body, however slowly it trickles


def fetch_snapshot(
    root: Path, url: str, limits: FetchLimits, progress: Callable[[Progress], None] | None = None
) -> Path:
    """The snapshot at `url` in a new private file under root's `.knowledge/` (the caller removes it); a one-line
    KnowledgeError naming the URL when it cannot be fetched (nothing is left behind)."""
    token = os.environ.get(TOKEN_ENV)
    _check_url(url, token)
    folder = index_dir(root)
    private_dir(folder)
    target = folder / f"import-{os.getpid()}.snapshot.part"
    cap = min(limits.max_bytes, _room_for(folder))
    opener = urllib.request.build_opener(_OriginRedirects(url, token))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with terminated_as_exit(), opener.open(request, timeout=limits.stall_seconds) as response:
            total = int(response.headers.get("Content-Length") or 0)
            if total > cap:
                raise KnowledgeError(f"{url}: {_size(total)} is over the {_cap_said(cap, limits)}")
            with open_new_private(target) as out:
                done = _stream(url, response, out, cap, limits, total, progress)
        if total and done != total:
            raise KnowledgeError(f"{url}: {done:,} of {total:,} bytes arrived (the connection was cut)")
    except urllib.error.HTTPError as exc:
        _remove(target)
        raise KnowledgeError(f"{url}: the server answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        _remove(target)
        raise KnowledgeError(f"{url}: could not be fetched ({getattr(exc, 'reason', exc)})") from None
    except BaseException:
        _remove(target)
        raise
    return target


def _stream(
    url: str,
    response: Any,  # noqa: ANN401 - http.client.HTTPResponse or an addinfourl around one
    out: IO[bytes],
    cap: int,
    limits: FetchLimits,
    total: int,
    progress: Callable[[Progress], None] | None,
) -> int:
    # read1: what has arrived, at most _CHUNK; a plain read(n) would wait for all n bytes of a 1-byte-a-second body
    deadline = time.monotonic() + limits.deadline_seconds
    done = 0
    while block := response.read1(_CHUNK):
        done += len(block)
        if done > cap:
            raise KnowledgeError(f"{url}: more than the {_cap_said(cap, limits)} arrived; the download was stopped")
        if time.monotonic() > deadline:
            raise KnowledgeError(
                f"{url}: not complete after {limits.deadline_seconds:.0f}s ({_size(done)} arrived); the download "
                f"was stopped"
            )
        out.write(block)
        if progress is not None:
            progress(Progress("downloading", done >> 20, max(total, done) >> 20))
    return done


def _check_url(url: str, token: str | None) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in {"http", "https"}:
        raise KnowledgeError(f"{url}: only http:// and https:// snapshots are fetched; give a file's path instead")
    if token and parts.scheme == "http" and not _loopback(parts.hostname or ""):
        raise KnowledgeError(
            f"{url}: {TOKEN_ENV} is never sent over plain http to another machine (anyone on the way reads it); "
            f"use https://"
        )


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return False


class _OriginRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed with the token only where the first URL's origin is; https -> http refused; ten at most,
    said in one line (urllib's own loop message is three)."""

    max_redirections = _MAX_REDIRECTS

    def __init__(self, url: str, token: str | None) -> None:
        self._origin = _origin(url)
        self._first = url
        self._token = token
        self._followed = 0

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,  # noqa: ANN401 - email.message.Message
        newurl: str,
    ) -> urllib.request.Request | None:
        self._followed += 1
        if self._followed > _MAX_REDIRECTS:
            raise KnowledgeError(f"{self._first}: more than {_MAX_REDIRECTS} redirects (a loop?); nothing was fetched")
        if urllib.parse.urlsplit(req.full_url).scheme == "https" and urllib.parse.urlsplit(newurl).scheme != "https":
            raise KnowledgeError(f"{self._first}: redirected from https to {newurl}, which is not https; refused")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != self._origin:
            new.remove_header("Authorization")  # the token stays with the origin it was given for
        return new

    def http_error_302(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any) -> Any:  # noqa: ANN401
        req.redirect_dict = {}  # type: ignore[attr-defined]  # the count above is the one bound; urllib's says 3 lines
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _room_for(folder: Path) -> int:
    """What a snapshot may weigh on this disk: it is written once as fetched and once unpacked."""
    return max(0, (shutil.disk_usage(folder).free - _DISK_MARGIN) // 2)


def _cap_said(cap: int, limits: FetchLimits) -> str:
    if cap < limits.max_bytes:
        return f"{_size(cap)} this disk can hold twice (the file and its unpacked copy)"
    return f"snapshot_max_bytes limit of {_size(cap)}"


def _size(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
