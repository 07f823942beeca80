"""Every Python interpreter knowledge starts: this installation's, with `-P`, so that neither the working folder (a
checkout: its own `knowledge/` or `pip/` package) nor a script's folder comes first on `sys.path`. A child started
from inside a cloned repository imports only what is installed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

SAFE_PATH = "-P"  # Python 3.11+: no unsafe path prepended (`-I` would also drop a `pip install --user` site)


def python_argv(*args: str, interpreter: str | None = None) -> list[str]:
    """The command line of a child interpreter running `args` (`-m module ...`, `-c code`)."""
    return [interpreter or sys.executable, SAFE_PATH, *args]


def knowledge_argv(root: Path, *args: str) -> list[str]:
    """`python -P -m knowledge -C ROOT ARGS`: this installation's knowledge, never a checkout's."""
    return python_argv("-m", "knowledge", "-C", str(root), *args)


def start_detached(argv: list[str], log: int, env: Mapping[str, str] | None = None) -> None:
    """Start `argv` in its own session, stdin closed, stdout and stderr to the file descriptor `log`; returns at
    once (the child outlives this process)."""
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        env=None if env is None else dict(env),
    )


def run_captured(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv` to its end, its output captured as text."""
    return subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd)
