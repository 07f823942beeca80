"""Every git subprocess the package runs; output is read NUL-separated and GIT_* variables are scrubbed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def _env() -> dict[str, str]:
    # Inside hooks git exports GIT_DIR, GIT_INDEX_FILE and friends, which would point our own git calls at the
    # wrong repository or index (pre-commit's lesson); keep only what changes no repository lookup.
    keep = {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
    }
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in keep}


def run_git(cwd: Path, *args: str) -> str:
    """stdout of `git args` in `cwd`; raises subprocess.CalledProcessError on failure."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        check=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
    )
    return result.stdout


def repo_root(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None outside git (or without git installed)."""
    try:
        return Path(run_git(path, "rev-parse", "--show-toplevel").strip())
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return None


def listed_files(root: Path) -> list[str]:
    """Tracked plus untracked-but-not-ignored files (so .gitignore, info/exclude and global excludes hold)."""
    out = run_git(root, "ls-files", "-co", "--exclude-standard", "-z")
    return sorted({name for name in out.split("\0") if name})


def head_commit(root: Path) -> str | None:
    try:
        return run_git(root, "rev-parse", "--verify", "-q", "HEAD").strip() or None
    except subprocess.CalledProcessError:
        return None
