"""The repository's dependencies as declared, resolved to what is installed where it runs, from files already on disk:
never a download, never an import or a run of a package (distributions are read by their METADATA, Node packages by
their package.json).

- Python: `pyproject.toml` (`[project]` dependencies and optional ones, PEP 735 groups, Poetry's table) and
  `requirements*.txt` at the root, against the project's environment (`.venv`, `venv` or `env` beside it, else the
  activated one, `VIRTUAL_ENV`), each beside what `uv.lock`, `poetry.lock`, `pylock.toml` or a `==` pin says.
- Node: `package.json`'s dependencies and devDependencies against `node_modules/<name>/package.json`, beside
  `package-lock.json`.
- Rust and Go: against Cargo's registry sources and Go's module cache (dependency_caches.py).

A package folder that is a link leading out of the repository or its environment is refused, not read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from .dependency_caches import cargo, go
from .dependency_files import Dependency, normalized, read_json, read_text, read_toml, unique
from .errors import ConfigError
from .path_gate import read_unlinked

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([\w.+!-]+)\s*(?:;.*)?$")
ENVIRONMENTS = (".venv", "venv", "env")
# a doc's `name.json` is a file: not a dependency's API (drift)
FILE_SUFFIXES = frozenset({"json", "jsonl", "yaml", "yml", "toml", "md", "txt", "cfg", "ini", "lock", "log", "html"})


def resolve(root: Path) -> list[Dependency]:
    """Every declared dependency of the repository at `root`, Python's, Node's, Rust's then Go's, each resolved."""
    return [*_python(root), *_node(root), *cargo(root), *go(root)]


# ---- Python ---------------------------------------------------------------------------------------------------------
def _python(root: Path) -> list[Dependency]:
    declared = list(_python_declared(root))
    if not declared:
        return []
    installed = _distributions(root)
    locked = _python_locked(root)
    out = []
    for name, wanted, source in declared:
        key = normalized(name)
        found = installed.get(key)
        version, folder, about = found if found else (None, None, None)
        out.append(Dependency("python", name, wanted, source, version, folder, locked.get(key), about=about))
    return unique(out)


def _python_declared(root: Path) -> Iterator[tuple[str, str, str]]:
    project = read_toml(root / "pyproject.toml")
    if project is not None:
        table = project.get("project", {})
        groups = [table.get("dependencies", []), *table.get("optional-dependencies", {}).values()]
        groups += [g for g in project.get("dependency-groups", {}).values() if isinstance(g, list)]
        for group in groups:
            for requirement in group if isinstance(group, list) else []:
                if isinstance(requirement, str) and (match := _NAME.match(requirement)):
                    yield match.group(1), requirement.strip(), "pyproject.toml"
        poetry = project.get("tool", {}).get("poetry", {}).get("dependencies", {})
        for name, spec in poetry.items() if isinstance(poetry, dict) else ():
            if name.lower() != "python":
                yield name, f"{name} {spec if isinstance(spec, str) else json.dumps(spec)}", "pyproject.toml"
    for requirements in sorted(root.glob("requirements*.txt")):
        for line in read_text(requirements).splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-")) and (match := _NAME.match(line)):
                yield match.group(1), line, requirements.name


def _site_packages(root: Path) -> list[Path]:
    """The environment the project runs in: one beside it, else the activated one."""
    candidates = [root / name for name in ENVIRONMENTS]
    if os.environ.get("VIRTUAL_ENV"):
        candidates.append(Path(os.environ["VIRTUAL_ENV"]))
    for environment in candidates:
        if (environment / "pyvenv.cfg").is_file():
            found = sorted(environment.glob("lib/python3*/site-packages")) + sorted(
                environment.glob("Lib/site-packages")
            )
            if found:
                return found
    return []


def _distributions(root: Path) -> dict[str, tuple[str, str, str]]:
    """normalized name -> (version, the folder of its code, its METADATA) of every distribution in the project's
    environment."""
    out: dict[str, tuple[str, str, str]] = {}
    for site in _site_packages(root):
        for info in sorted(site.glob("*.dist-info")):
            headers = _headers(read_text(info / "METADATA"))
            if "name" in headers and "version" in headers:
                folder = site / _code_folder(read_text(info / "RECORD"), headers["name"])
                out.setdefault(normalized(headers["name"]), (headers["version"], str(folder), str(info / "METADATA")))
    return out


def _code_folder(record: str, name: str) -> str:
    """The top-level folder (or module) a distribution's RECORD installs the most files into, its own name first
    (`python-frontmatter` installs `frontmatter/`, `tree-sitter-c` a `_binding` beside `tree_sitter_c/`)."""
    counts: dict[str, int] = {}
    for line in record.splitlines():
        top = line.split(",", 1)[0].split("/", 1)[0]
        if top and not top.endswith((".dist-info", ".pth", ".data")) and top not in {"..", "__pycache__"}:
            counts[top] = counts.get(top, 0) + 1
    own = normalized(name).replace("-", "_")
    if own in counts:
        return own
    public = [top for top in counts if not top.startswith("_")] or list(counts)
    return max(public, key=lambda top: counts[top]) if public else own


def _headers(metadata: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in metadata.splitlines():
        if not line.strip():
            break  # the body (the long description) follows the first blank line
        key, _, value = line.partition(":")
        headers.setdefault(key.strip().lower(), value.strip())
    return headers


def _python_locked(root: Path) -> dict[str, str]:
    locked: dict[str, str] = {}
    for lockfile, packages in (("uv.lock", "package"), ("poetry.lock", "package"), ("pylock.toml", "packages")):
        for entry in (read_toml(root / lockfile) or {}).get(packages, []):
            if isinstance(entry, dict) and "name" in entry and "version" in entry:
                locked.setdefault(normalized(str(entry["name"])), str(entry["version"]))
    for requirements in sorted(root.glob("requirements*.txt")):
        for line in read_text(requirements).splitlines():
            if match := _PIN.match(line):
                locked.setdefault(normalized(match.group(1)), match.group(2))
    return locked


# ---- Node -----------------------------------------------------------------------------------------------------------
def _node(root: Path) -> list[Dependency]:
    manifest = read_json(root / "package.json")
    if not isinstance(manifest, dict):
        return []
    lock = read_json(root / "package-lock.json")
    packages = lock.get("packages", {}) if isinstance(lock, dict) else {}
    legacy = lock.get("dependencies", {}) if isinstance(lock, dict) else {}
    out = []
    for field in ("dependencies", "devDependencies"):
        wanted = manifest.get(field, {})
        for name, spec in sorted(wanted.items()) if isinstance(wanted, dict) else ():
            entry = packages.get(f"node_modules/{name}") or legacy.get(name) or {}
            locked = entry.get("version") if isinstance(entry, dict) else None
            folder = root / "node_modules" / name
            refused = _outside(folder, root)
            found = None if refused else read_json(folder / "package.json", package=True)
            version = found.get("version") if isinstance(found, dict) else None
            out.append(
                Dependency(
                    "node",
                    name,
                    f"{name}@{spec}",
                    "package.json",
                    str(version) if version else None,
                    str(folder) if version else None,
                    str(locked) if locked else None,
                    refused,
                )
            )
    return unique(out)


def _outside(folder: Path, root: Path) -> str | None:
    """Why a package folder is not read: a link (npm link, pnpm) leading out of the repository."""
    if not folder.is_symlink():
        return None
    target = folder.resolve()
    if target.is_relative_to(root.resolve()):
        return None
    return f"a link out of the repository ({target}); not read"


# ---- an installed package's files ------------------------------------------------------------------------------
MAX_PACKAGE_FILE_BYTES = 2 * 1024 * 1024
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", ".git"})


def package_files(dependency: Dependency) -> Iterator[tuple[str, bytes]]:
    """(path inside the package, bytes) of an installed dependency's regular files, as a copy to index: its folder (or
    its one module) under its own name, and for a Python distribution its long description as README.md. No link is
    followed (a linked file or folder is left out), nothing over MAX_PACKAGE_FILE_BYTES, no compiled caches."""
    if dependency.location is None or dependency.refused is not None:
        return
    top = Path(dependency.location)
    if not top.is_dir() and top.with_suffix(".py").is_file():
        top = top.with_suffix(".py")  # a distribution of one module (`six.py`)
    if top.is_symlink():
        return
    if top.is_file():
        yield from _file(top, top.name)
    for folder, subfolders, names in os.walk(top) if top.is_dir() else ():
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not Path(folder, d).is_symlink())
        for name in sorted(names):
            path = Path(folder, name)
            yield from _file(path, f"{top.name}/{path.relative_to(top).as_posix()}")
    description = read_text(Path(dependency.about)).partition("\n\n")[2].strip() if dependency.about else ""
    if description:
        front = f"---\ndescription: {dependency.name} {dependency.installed}, as its distribution describes it.\n---\n"
        yield "README.md", (front + description + "\n").encode("utf-8")


def _file(path: Path, inside: str) -> Iterator[tuple[str, bytes]]:
    if path.is_symlink() or not path.is_file() or path.suffix in {".pyc", ".so", ".dll", ".dylib"}:
        return
    if path.stat().st_size <= MAX_PACKAGE_FILE_BYTES and (data := read_unlinked(path)) is not None:
        yield inside, data


# ---- what an installed version defines ---------------------------------------------------------------------------
def installed_api(root: Path) -> Callable[[str], tuple[bool, str] | None]:
    """A check of a dotted name a doc writes (`click.shell_completion.CompletionItem`) against the installed Python
    dependency of `root` whose import name it starts with: None when it starts with none (or the manifests cannot be
    read: drift says nothing of versions then); (True, "") when that version defines it; (False, why) when it does
    not. Read from the installed files, never imported."""
    try:
        dependencies = resolve(root)
    except ConfigError:
        dependencies = []
    by_import = {
        Path(d.location).stem: d for d in dependencies if d.ecosystem == "python" and d.installed and d.location
    }

    def check(dotted: str) -> tuple[bool, str] | None:
        parts = dotted.split(".")
        dependency = by_import.get(parts[0])
        if dependency is None or len(parts) < 2 or dependency.location is None or parts[-1] in FILE_SUFFIXES:
            return None  # `mcp.json` is a file's name, not the mcp package's API
        defined = _defines(Path(dependency.location).parent, parts)
        if defined is None:
            return None
        said = f"`{dotted}` is not defined by {dependency.name} {dependency.installed}, the version installed here"
        return (True, "") if defined else (False, said)

    return check


def _defines(base: Path, parts: list[str]) -> bool | None:
    """Whether the modules under `base` define `parts` (a module path, then a name in it and a member of that);
    None when it cannot be told from the text (a module-level `__getattr__`, no module found)."""
    for cut in range(len(parts), 0, -1):
        module = base.joinpath(*parts[:cut])
        for candidate in (module / "__init__.py", module.with_suffix(".py")):
            if candidate.is_file():
                rest = parts[cut:]
                if not rest:
                    return True
                text = read_text(candidate)
                if re.search(r"(?m)^def __getattr__\(", text):
                    return None
                return _names(text, rest[0]) and (len(rest) < 2 or _names(text, rest[1], member=True))
    return None


def _names(text: str, name: str, member: bool = False) -> bool:
    """Whether module `text` defines, assigns or imports `name` (or, `member`: defines it indented, in a class)."""
    n = re.escape(name)
    if member:
        return re.search(rf"(?m)^\s+(?:async\s+def|def)\s+{n}\b|^\s+{n}\s*(?::[^=\n]*)?=", text) is not None
    return any(
        re.search(pattern, text)
        for pattern in (
            rf"(?m)^(?:async\s+def|def|class)\s+{n}\b",
            rf"(?m)^{n}\s*(?::[^=\n]*)?=",
            rf"(?m)^(?:from\s+\S+\s+)?import\s+[^\n(]*\b{n}\b",
            rf"(?ms)^from\s+\S+\s+import\s+\([^)]*\b{n}\b[^)]*\)",
        )
    )
