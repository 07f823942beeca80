"""The write gate: every file knowledge writes goes through here (crash-safe replaces, appends, logs, folders), plus
the inter-process lock.

A write names the root it must stay in (the repository, the user's home or config folder). Its target is refused when
a folder between the root and it is a symlink, or the target itself is one (`follow_final` lets an instruction file or
a user config be written through to its resolved target, when that is a regular file of ours inside the root and
outside `.git`/`.knowledge`). Files are replaced by `mkstemp` in the same folder and `os.replace`, appended with
`O_NOFOLLOW`; folders are created 0700 and new private files 0600.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import IndexLockedError, StorageError, WriteRefusedError
from .records import INDEX_DIR_NAME


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_dir(path: Path) -> None:
    """Create `path` and its missing parents owner-only (0700). An index folder (`.knowledge`) created here gets a
    `.gitignore` of `*` at once, so `git add -A` never commits it, hooks installed or not; one that is a symlink is
    refused (its files would land wherever it points)."""
    for folder in (path, *path.parents):
        if folder.name == INDEX_DIR_NAME and folder.is_symlink():
            raise WriteRefusedError(symlinked_index_message(folder))
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe):
        if probe.name == INDEX_DIR_NAME and not probe.parent.is_dir():
            raise StorageError(f"{probe.parent}: gone (removed while knowledge ran); nothing recreated")
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
            if not os.path.lexists(ignore):
                with contextlib.suppress(OSError):
                    fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                    with os.fdopen(fd, "w", encoding="utf-8") as out:
                        out.write("*\n")
            break


def create_private_file(path: Path) -> None:
    """Create `path` empty and owner-only (0600) if it is missing (SQLite gives its -wal/-shm files the same mode)."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def open_new_private(path: Path) -> BinaryIO:
    """`path` created for writing, owner-only (0600), never an existing file and never through a symlink: a file
    knowledge streams into (a snapshot, or a file unpacked from one into a folder of its own)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


def symlinked_index_message(folder: Path) -> str:
    return (
        f"{folder}: is a symlink (to {os.readlink(folder)}); knowledge keeps its index in a real folder of the "
        f"repository: remove the link (`rm {folder}`) and run `knowledge reindex-all`"
    )


def gated_path(root: Path, path: Path, *, follow_final: bool = False) -> Path:
    """Where a write of `path` may land inside `root`, or WriteRefusedError. No folder between them and not the target
    may be a symlink; with `follow_final` (instruction files, user configs) links are followed when what they lead to
    is inside `root`, outside `.git`/`.knowledge`, and (if it exists) a regular file of this user's: that file."""
    base = root.resolve()
    absolute = Path(os.path.abspath(path))
    for anchor in (Path(os.path.abspath(root)), base):
        if absolute.is_relative_to(anchor):
            parts = absolute.relative_to(anchor).parts
            break
    else:
        raise WriteRefusedError(f"{path}: outside {root}, where knowledge may write")
    if ".." in parts:
        raise WriteRefusedError(f"{path}: not a path inside {root}")
    target = base.joinpath(*parts)
    if follow_final:
        return _followed(root, path, base, target)
    probe = base
    for part in parts:
        probe = probe / part
        try:
            info = os.lstat(probe)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode):
            what = "is a symlink" if probe == target else f"is under {probe}, a symlink"
            raise WriteRefusedError(f"{path}: {what}; knowledge writes through no symlink (remove the link)")
        if probe != target and not stat.S_ISDIR(info.st_mode):
            raise WriteRefusedError(f"{path}: {probe} is not a folder")
    return target


def _followed(root: Path, path: Path, base: Path, target: Path) -> Path:
    try:
        resolved = target.resolve(strict=False)
    except (OSError, RuntimeError):
        raise WriteRefusedError(f"{path}: a symlink loop; remove it or point it at a file") from None
    inner = resolved.relative_to(base).parts if resolved.is_relative_to(base) else None
    if inner is None or ".git" in inner or INDEX_DIR_NAME in inner:
        raise WriteRefusedError(f"{path}: leads to {resolved}, outside what knowledge may write in {root}")
    if resolved != target:
        try:
            info = resolved.stat()
        except FileNotFoundError:
            raise WriteRefusedError(f"{path}: a broken symlink (to {resolved}); remove it or make the file") from None
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise WriteRefusedError(f"{path}: leads to {resolved}, which is not a regular file of this user's")
    return resolved


def make_dirs(root: Path, folder: Path) -> Path:
    """`folder` inside `root`, its missing parts created 0700, none of it reached through a symlink."""
    target = gated_path(root, folder)
    if target.is_dir():
        return target
    private_dir(target)
    return gated_path(root, folder)


def write_file(root: Path, path: Path, data: bytes | str, *, mode: int = 0o600, follow_final: bool = False) -> Path:
    """Replace `path` (inside `root`) with `data` atomically; an existing file keeps its mode, a new one gets `mode`.
    Returns the file written (a followed link's target)."""
    target = gated_path(root, path, follow_final=follow_final)
    make_dirs(root, target.parent)
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.lstat(target).st_mode)
    _replace(target, data.encode("utf-8") if isinstance(data, str) else data, mode)
    return target


def append_file(root: Path, path: Path, data: bytes | str) -> None:
    """Append to `path` (inside `root`, created 0600), never through a symlink."""
    fd = open_append(root, path)
    with os.fdopen(fd, "ab") as out:
        out.write(data.encode("utf-8") if isinstance(data, str) else data)


def open_append(root: Path, path: Path) -> int:
    """A descriptor appending to `path` (a log handed to a child process): created 0600, never through a symlink."""
    target = gated_path(root, path)
    make_dirs(root, target.parent)
    try:
        return os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteRefusedError(f"{path}: is a symlink; knowledge does not write through it") from None
        raise


def remove_file(root: Path, path: Path) -> None:
    """Remove `path` inside `root` (a symlink there is removed itself, never what it points to)."""
    gated_path(root, path).unlink(missing_ok=True)


def scratch_file(path: Path) -> Path:
    """A new empty private file beside `path` (mkstemp), for a library that saves by file name."""
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` so a reader sees the old file or the new one, never a torn one: a file of knowledge's
    own folders (the index, the user cache and config), created private."""
    private_dir(path.parent)
    _replace(path, data.encode("utf-8") if isinstance(data, str) else data, 0o600)


def _replace(path: Path, payload: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
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
    fd = _open_lock(path)
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


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """A non-blocking exclusive flock: yields whether it was taken."""
    private_dir(path.parent)
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_lock(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteRefusedError(f"{path}: is a symlink; knowledge does not write through it") from None
        raise


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
