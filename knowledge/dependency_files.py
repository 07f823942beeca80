"""What every ecosystem's dependency reader shares: the record of one dependency, names compared as PEP 503 compares
them, and manifests and lockfiles read through the path gate (never through a link, never past MAX_FILE_BYTES), a broken
one named in one clear error."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .path_gate import read_unlinked

MAX_FILE_BYTES = 32 * 1024 * 1024  # a lockfile or a manifest bigger than this is not read


@dataclass(frozen=True, slots=True)
class Dependency:
    ecosystem: str  # "python" or "node"
    name: str
    wanted: str  # the declared requirement, as written (`click>=8.1`, `^4.17.0`)
    declared_in: str  # the file that declares it, relative to the root
    installed: str | None = None  # the version found installed; None when it is not
    location: str | None = None  # the installed package's folder
    locked: str | None = None  # the version the lockfile pins; None when none does
    refused: str | None = None  # why the installed copy was not read
    about: str | None = None  # the installed distribution's METADATA (Python): its long description is its README

    @property
    def problem(self) -> str | None:
        if self.refused is not None:
            return self.refused
        if self.installed is None:
            return "not installed"
        if self.locked is not None and self.locked != self.installed:
            return f"installed {self.installed}, the lockfile pins {self.locked}"
        return None


def normalized(name: str) -> str:
    """A Python distribution's name as PEP 503 compares them (`Foo_Bar` is `foo-bar`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_text(path: Path) -> str:
    """A file's text, read without following a link in its place; "" when missing, a link, too big or unreadable."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ""
    except OSError:
        return ""
    data = read_unlinked(path)
    return data.decode("utf-8", "replace") if data is not None else ""


def read_toml(path: Path) -> dict[str, Any] | None:
    """A manifest or lockfile's table; None when there is none; one clear error when it is not TOML."""
    try:
        return tomllib.loads(read_text(path)) if path.is_file() else None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc


def read_json(path: Path, package: bool = False) -> object:
    """A manifest or lockfile's document; None when there is none (or an installed package's is broken: that package
    reads as not installed); one clear error when the repository's own is not JSON."""
    try:
        return json.loads(read_text(path)) if path.is_file() else None
    except json.JSONDecodeError as exc:
        if package:
            return None
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc


def unique(found: list[Dependency]) -> list[Dependency]:
    """One row a package, the first declaration of it."""
    seen: dict[tuple[str, str], Dependency] = {}
    for dependency in found:
        key = (dependency.ecosystem, normalized(dependency.name))
        seen.setdefault(key, dependency)
    return list(seen.values())
