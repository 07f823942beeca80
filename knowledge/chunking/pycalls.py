"""Exact call targets for Python with `ast`: `self.m()` in a class, imported names and module attributes.

Targets are written "module:NAME::QUALNAME" (imports, resolved to a file later by module path) or "path::QUALNAME"
(same file); calls `ast` cannot pin down are left to the name-based resolution of the call graph.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath


def _module_of(path: str) -> list[str]:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def _imports(tree: ast.Module, path: str) -> dict[str, str]:
    """Local name -> "module:DOTTED" (a module) or "module:DOTTED::NAME" (a name in a module)."""
    package = _module_of(path)[:-1] if not path.endswith("__init__.py") else _module_of(path)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = f"module:{alias.name}"
                else:
                    names[alias.name.split(".")[0]] = f"module:{alias.name.split('.')[0]}"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                names[alias.asname or alias.name] = f"module:{base}::{alias.name}"
    return names


def python_calls(source: str, path: str) -> dict[int, set[str]]:
    """Exact targets of the calls in each function or method, keyed by its 1-based first line (decorators excluded)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    imports = _imports(tree, path)
    out: dict[int, set[str]] = {}

    def visit(node: ast.AST, owner: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                targets: set[str] = set()
                for call in ast.walk(child):
                    if not isinstance(call, ast.Call):
                        continue
                    func = call.func
                    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                        receiver = func.value.id
                        if receiver in {"self", "cls"} and owner:
                            targets.add(f"{path}::{owner}.{func.attr}")
                        elif receiver in imports and "::" not in imports[receiver]:
                            targets.add(f"{imports[receiver]}::{func.attr}")
                    elif isinstance(func, ast.Name) and func.id in imports and "::" in imports[func.id]:
                        targets.add(imports[func.id])
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out[child.lineno] = targets
                out.setdefault(first, targets)
                visit(child, owner)

    visit(tree, None)
    return out
