"""`knowledge import --from URL`: a snapshot fetched over HTTP(S) with the standard library (no new dependency, and
the network only when asked), streamed into a new private file under `.knowledge/`, then imported as a file is."""

from __future__ import annotations

import contextlib
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .errors import KnowledgeError
from .fs import open_new_private, private_dir
from .records import Progress
from .store import index_dir

TOKEN_ENV = "KNOWLEDGE_SNAPSHOT_TOKEN"  # sent as a bearer token when set (a CI's artifact store)
_CHUNK = 1 << 20


def fetch_snapshot(root: Path, url: str, progress: Callable[[Progress], None] | None = None) -> Path:
    """The snapshot at `url` in a new private file under root's `.knowledge/` (the caller removes it); a one-line
    KnowledgeError naming the URL when it cannot be fetched (nothing is left behind)."""
    if urllib.parse.urlsplit(url).scheme not in {"http", "https"}:
        raise KnowledgeError(f"{url}: only http:// and https:// snapshots are fetched; give a file's path instead")
    folder = index_dir(root)
    private_dir(folder)
    target = folder / f"import-{os.getpid()}.snapshot.part"
    token = os.environ.get(TOKEN_ENV)
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open_new_private(target) as out:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            while block := response.read(_CHUNK):
                out.write(block)
                done += len(block)
                if progress is not None:
                    progress(Progress("downloading", done >> 20, max(total, done) >> 20))
        if total and done != total:
            raise KnowledgeError(f"{url}: {done:,} of {total:,} bytes arrived (the connection was cut)")
    except urllib.error.HTTPError as exc:
        _remove(target)
        raise KnowledgeError(f"{url}: the server answered {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        _remove(target)
        raise KnowledgeError(f"{url}: could not be fetched ({getattr(exc, 'reason', exc)})") from exc
    except BaseException:
        _remove(target)
        raise
    return target


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
