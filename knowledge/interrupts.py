"""SIGTERM as a clean exit: work that writes files (a download, an import, an export) removes what it half wrote when
it is killed the polite way, as it does on any other error."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit while the block runs (in the main thread), so that its clean-up runs: a killed
    import leaves no partial file. Elsewhere (a server's worker thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_now(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
