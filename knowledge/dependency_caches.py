"""Rust's and Go's dependencies, resolved against the source trees their own tools unpacked, read and never built,
run or fetched:

- Rust: `Cargo.toml`'s dependencies, dev-, build- and target-specific ones and the workspace's (its members' too), each
  at the version `Cargo.lock` pins, found in Cargo's registry sources (`$CARGO_HOME/registry/src/<registry>/<name>-
  <version>/`; `~/.cargo` without CARGO_HOME). A path or git dependency is not a registry's and is left out.
- Go: `go.mod`'s direct requirements (not those marked `// indirect`, nor one `replace`d by a local folder), each in
  the module cache (`$GOMODCACHE`, else `$GOPATH/pkg/mod`, else `~/go/pkg/mod`) as `<path, capitals as
  !lower>@<version>/`.

Where the pinned version's folder is missing but another version's is there, that one is said installed beside the pin.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .dependency_files import Dependency, read_text, read_toml, unique

_CRATE_FOLDER = re.compile(r"^(?P<name>.+?)-(?P<version>\d+\.\d+\.\d+\S*)$")
_CARGO_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
_REQUIRE = re.compile(r"^\s*(?:require\s+)?(?P<path>[^\s()]+)\s+(?P<version>v\S+)(?P<rest>.*)$")
_REPLACED_LOCALLY = re.compile(r"^\s*(?:replace\s+)?(?P<path>[^\s()]+)(?:\s+v\S+)?\s*=>\s*\.{0,2}/")


def version_key(version: str) -> tuple[int, ...]:
    """A version's numbers, to order versions (`1.0.11` after `1.0.9`)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


# ---- Rust -----------------------------------------------------------------------------------------------------------
def cargo(root: Path) -> list[Dependency]:
    manifest = read_toml(root / "Cargo.toml")
    if manifest is None:
        return []
    declared = list(_cargo_declared(root, manifest))
    if not declared:
        return []
    pinned: dict[str, list[str]] = {}
    for entry in (read_toml(root / "Cargo.lock") or {}).get("package", []):
        if isinstance(entry, dict) and str(entry.get("source", "")).startswith("registry+"):
            pinned.setdefault(str(entry.get("name")), []).append(str(entry.get("version")))
    unpacked = _crate_folders()
    out = []
    for name, wanted, declared_in in declared:
        present = unpacked.get(name, {})
        versions = sorted(pinned.get(name, []), key=version_key, reverse=True)
        locked = next((version for version in versions if version in present), versions[0] if versions else None)
        installed = locked if locked in present else max(present, key=version_key, default=None)
        folder = present.get(installed) if installed else None
        out.append(Dependency("cargo", name, wanted, declared_in, installed, folder, locked))
    return unique(out)


def _cargo_declared(root: Path, manifest: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(crate name, the requirement as written, the manifest) of every registry dependency of the root manifest and
    its workspace's members."""
    workspace = manifest.get("workspace", {})
    yield from _cargo_tables(manifest, "Cargo.toml")
    yield from _cargo_entries(workspace.get("dependencies", {}), "Cargo.toml")
    for pattern in workspace.get("members", []) if isinstance(workspace.get("members"), list) else []:
        for member in sorted(root.glob(str(pattern))):
            member_manifest = read_toml(member / "Cargo.toml")
            if member_manifest is not None and member.resolve().is_relative_to(root.resolve()):
                yield from _cargo_tables(member_manifest, (member / "Cargo.toml").relative_to(root).as_posix())


def _cargo_tables(manifest: dict[str, Any], declared_in: str) -> Iterator[tuple[str, str, str]]:
    targets = manifest.get("target", {})
    for table in [manifest, *(t for t in targets.values() if isinstance(t, dict))] if isinstance(targets, dict) else []:
        for field in _CARGO_TABLES:
            yield from _cargo_entries(table.get(field, {}), declared_in)


def _cargo_entries(entries: object, declared_in: str) -> Iterator[tuple[str, str, str]]:
    for key, spec in entries.items() if isinstance(entries, dict) else ():
        if isinstance(spec, dict) and ({"path", "git", "workspace"} & spec.keys()):
            continue  # in the repository, from a git checkout, or declared by the workspace (read there)
        version = spec if isinstance(spec, str) else str(spec.get("version", "*")) if isinstance(spec, dict) else "*"
        name = str(spec.get("package", key)) if isinstance(spec, dict) else str(key)
        yield name, f"{name} {version}", declared_in


def _crate_folders() -> dict[str, dict[str, str]]:
    """crate name -> version -> its unpacked folder, over every registry Cargo has unpacked sources of."""
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    out: dict[str, dict[str, str]] = {}
    registries = home / "registry" / "src"
    for registry in sorted(registries.iterdir()) if registries.is_dir() else ():
        for folder in sorted(registry.iterdir()) if registry.is_dir() and not registry.is_symlink() else ():
            match = _CRATE_FOLDER.match(folder.name)
            if match and folder.is_dir():
                out.setdefault(match["name"], {}).setdefault(match["version"], str(folder))
    return out


# ---- Go -------------------------------------------------------------------------------------------------------------
def go(root: Path) -> list[Dependency]:
    text = read_text(root / "go.mod")
    if not text:
        return []
    lines = [line.split("//", 1)[0] + ("indirect" if "// indirect" in line else "") for line in text.splitlines()]
    local = {m["path"] for line in lines if (m := _REPLACED_LOCALLY.match(line))}
    cache = _module_cache()
    out = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("require (", "require(")):
            inside = True
            continue
        if inside and stripped == ")":
            inside = False
            continue
        if not (inside or stripped.startswith("require ")) or (match := _REQUIRE.match(line)) is None:
            continue
        path, version = match["path"], match["version"]
        if "indirect" in match["rest"] or path in local:
            continue
        present = _module_versions(cache, path)
        installed = version if version in present else max(present, key=version_key, default=None)
        folder = present.get(installed) if installed else None
        out.append(Dependency("go", path, f"{path} {version}", "go.mod", installed, folder, version))
    return unique(out)


def _module_cache() -> Path:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0]
    return Path(gopath or Path.home() / "go") / "pkg" / "mod"


def _module_versions(cache: Path, path: str) -> dict[str, str]:
    """version -> folder of every version of module `path` the cache holds (capitals written `!lower`, as Go does)."""
    escaped = re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)
    parent, _, last = escaped.rpartition("/")
    folder = cache / parent if parent else cache
    if not folder.is_dir():
        return {}
    return {
        entry.name.split("@", 1)[1]: str(entry)
        for entry in folder.glob(f"{last}@*")
        if entry.is_dir() and not entry.is_symlink()
    }
