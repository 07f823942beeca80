"""Crash-safe file writes and an inter-process lock; nothing else in the package writes index files directly."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import IndexLockedError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


INDEX_DIR_NAME = ".knowledge"


def private_dir(path: Path) -> None:
    """Create `path` and its missing parents owner-only (0700). An index folder (`.knowledge`) created here gets a
    `.gitignore` of `*` at once, so `git add -A` never commits it, hooks installed or not."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    for folder in (path, *path.parents):
        if folder.name == INDEX_DIR_NAME:
            ignore = folder / ".gitignore"
            if not ignore.exists():
                with contextlib.suppress(OSError):
                    ignore.write_text("*\n", encoding="utf-8")
            break


def create_private_file(path: Path) -> None:
    """Create `path` empty and owner-only (0600) if it is missing (SQLite gives its -wal/-shm files the same mode)."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` so a reader sees the old file or the new one, never a torn one."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 600.0) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing); IndexLockedError after `timeout` seconds."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexLockedError(
                        f"{path}: another knowledge process holds the lock (waited {timeout:.0f}s)"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_locked(path: Path) -> bool:
    """True when another process holds the lock at `path` right now."""
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def user_cache_dir() -> Path:
    """The per-user cache folder (XDG on Linux, ~/Library/Caches on macOS)."""
    if os.uname().sysname == "Darwin":
        return Path.home() / "Library" / "Caches" / "knowledge"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "knowledge"


def user_config_dir() -> Path:
    """The per-user configuration folder (XDG on Linux, ~/Library/Application Support on macOS)."""
    if os.uname().sysname == "Darwin":
        return Path.home() / "Library" / "Application Support" / "knowledge"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "knowledge"
