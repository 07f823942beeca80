"""The one gate every reader of repository files goes through (indexing, `show`, the servers, drift, docs-for).

A path is read only when the whole of it, every directory symlink included, resolves to a regular file inside the
repository root, outside `.git/` and `.knowledge/`, whose name (before and after resolving) is not a secrets file;
serving readers also ask git whether the path is ignored, and treat any answer but "ignored"/"not ignored" as a no.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .config import DEFAULT_SECRET_FILES
from .errors import WriteRefusedError
from .fs import gated_path
from .git import check_ignore, repo_root
from .patterns import name_glob
from .records import INDEX_DIR_NAME

NEVER_SERVED = frozenset({".git", INDEX_DIR_NAME})


@dataclass(frozen=True)
class Refusal:
    """Why a path is not read; `perimeter` is true when reading it would cross the repository's boundary."""

    reason: str
    perimeter: bool = True

    def __str__(self) -> str:
        return self.reason


def is_secret_file(rel: str, patterns: Iterable[str]) -> bool:
    """True when the file's name matches one of the secret-file globs (matched against the last path component)."""
    name = rel.rsplit("/", 1)[-1]
    return any(name_glob(pattern).fullmatch(name) for pattern in patterns)


def _name_problem(rel: str, secret_files: Iterable[str]) -> Refusal | None:
    if "\0" in rel:
        return Refusal("path contains a NUL byte")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return Refusal("file name is not valid UTF-8 (rename it to index it)", perimeter=False)
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        return Refusal("not a path inside the repository")
    if parts[0] in NEVER_SERVED or ".git" in parts:
        return Refusal(f"inside {parts[0] if parts[0] in NEVER_SERVED else '.git'}/, which is never read")
    if is_secret_file(rel, secret_files):
        return Refusal("a secrets file by its name (setting `secret_files`), never read")
    return None


def resolve_inside(root: Path, rel: str, secret_files: Iterable[str] = ()) -> Path | Refusal:
    """The regular file `rel` names inside `root`, resolved through every symlink, or why it must not be read."""
    secret_files = tuple(secret_files)
    problem = _name_problem(rel, secret_files)
    if problem is not None:
        return problem
    path = root / rel
    try:
        path.lstat()
    except FileNotFoundError:
        return Refusal("listed by git but missing from the work tree", perimeter=False)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Refusal("symlink loop (not followed)")
        return Refusal(f"unreadable: {exc.strerror or exc}", perimeter=False)
    try:
        target = path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 raises this for a loop; 3.13 an OSError
        return Refusal("symlink loop (not followed)")
    except OSError as exc:
        return Refusal("symlink loop (not followed)" if exc.errno == errno.ELOOP else "broken symlink")
    base = root.resolve()
    if not target.is_relative_to(base):
        return Refusal("symlink to a file outside the repository (not followed)")
    inner = target.relative_to(base).as_posix()
    if inner != rel:
        if inner.split("/")[0] in NEVER_SERVED or ".git" in inner.split("/"):
            return Refusal("symlink into .git or .knowledge (not followed)")
        problem = _name_problem(inner, secret_files)
        if problem is not None:
            return Refusal(f"symlink to {inner}: {problem.reason}", perimeter=problem.perimeter)
    try:
        info = target.stat()
    except OSError:
        return Refusal("broken symlink")
    if not stat.S_ISREG(info.st_mode):
        return Refusal("not a regular file", perimeter=False)
    return target


def ignored_by_git(root: Path, resolved: str, asked: str | None = None) -> Refusal | None:
    """A refusal when git ignores the resolved path (or the asked one, when a symlink led there), or cannot say
    whether it does: any status other than 0 or 1 (e.g. "beyond a symbolic link") is a no, never a yes."""
    status, message = check_ignore(root, resolved)
    if status == 0:
        return Refusal("ignored by git (.gitignore), so not served")
    if status != 1:
        return Refusal(f"git cannot vouch for it ({message})")
    # The asked path runs through a symlink; git may not be able to judge it ("beyond a symbolic link"), which is
    # fine once the resolved path is vouched for, but an explicit ignore on it still refuses.
    if asked is not None and asked != resolved and check_ignore(root, asked)[0] == 0:
        return Refusal("ignored by git (.gitignore), so not served")
    return None


def servable(root: Path, rel: str, secret_files: Iterable[str], in_git: bool) -> Path | Refusal:
    """`resolve_inside` plus git's ignore rules on the resolved and the asked path: the gate for serving."""
    target = resolve_inside(root, rel, secret_files)
    if isinstance(target, Refusal) or not in_git:
        return target
    inner = target.relative_to(root.resolve()).as_posix()
    return ignored_by_git(root, inner, rel) or target


def generated_file(root: Path, path: Path, secret_files: Iterable[str] = DEFAULT_SECRET_FILES) -> Path:
    """Where knowledge may write (or read back) a file it generates in the repository (llms.txt, AGENTS.md, CLAUDE.md,
    an agent's project config): the write gate's answer (fs.gated_path, links followed only to a regular file of this
    user's inside the root), refused when a committed link leads to a secrets file by its name or to a file git
    ignores (`llms.txt -> .env`: the user's own untracked files are never a link's target)."""
    target = gated_path(root, path, follow_final=True)
    if target == Path(os.path.abspath(path)) or not target.is_relative_to(root.resolve()):
        return target  # not through a link
    inner = target.relative_to(root.resolve()).as_posix()
    if is_secret_file(inner, secret_files):
        raise WriteRefusedError(f"{path}: a link to {inner}, a secrets file by its name; remove the link")
    if repo_root(root) is not None:
        refusal = ignored_by_git(root, inner)
        if refusal is not None:
            raise WriteRefusedError(
                f"{path}: a link to {inner}, which git ignores ({refusal}); knowledge writes through a link only to "
                "a file the repository tracks: remove the link"
            )
    return target


def read_unlinked(path: Path) -> bytes | None:
    """The bytes of the file at `path`, opened read-only without following a link in its own place; None when it
    is a link, missing or unreadable (the caller knows no folder on the way is one)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()
