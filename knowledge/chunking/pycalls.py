"""Exact call targets for Python with `ast`: `self.m()` in a class, imported names and module attributes.

Targets are written "module:NAME::QUALNAME" (imports, resolved to a file later by module path) or "path::QUALNAME"
(same file); calls `ast` cannot pin down are left to the name-based resolution of the call graph.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
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


def _type_name(node: ast.expr | None) -> str | None:
    """The class an annotation or a constructing call names: `KB`, `kb.KB`, `"KB"`, `KB | None`, `KB.open(...)`."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _type_name(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # `KB | None`
        left, right = _type_name(node.left), _type_name(node.right)
        return left if right in {None, "None"} else right if left in {None, "None"} else None
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Optional":
        return _type_name(node.slice)
    if isinstance(node, ast.Call):  # `KB(...)`, and a classmethod constructor `KB.open(...)`
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id[:1].isupper():
            return func.value.id
        return _type_name(func) if isinstance(func, ast.Name | ast.Attribute) else None
    if isinstance(node, ast.Name) and node.id[:1].isupper():
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr[:1].isupper():
        return f"{node.value.id}.{node.attr}"  # a class of an imported module: `requests.Session`
    return None


def _attribute_types(cls: ast.ClassDef, value_type: Callable[[ast.expr], str | None]) -> dict[str, str]:
    """`self.NAME` -> class, from `self.kb = KB(...)`, `self.kb = kb` (a parameter annotated `KB`), `self.kb: KB`
    and class-level `kb: KB` annotations."""
    types = {
        node.target.id: found
        for node in cls.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and (found := _type_name(node.annotation))
    }
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        local = _local_types(method, value_type)
        for node in ast.walk(method):
            target: ast.expr
            if isinstance(node, ast.AnnAssign):
                target, found = node.target, _type_name(node.annotation)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                value = node.value
                target = node.targets[0]
                found = local.get(value.id) if isinstance(value, ast.Name) else value_type(value)
            else:
                continue
            if (
                found
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                types.setdefault(target.attr, found)
    return types


def _local_types(
    function: ast.FunctionDef | ast.AsyncFunctionDef, value_type: Callable[[ast.expr], str | None]
) -> dict[str, str]:
    """Local name -> class, from annotated parameters and `x = KB(...)`, `x = make_kb()`, `x: KB`, `with KB() as x`."""
    arguments = function.args
    types = {
        a.arg: found
        for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        if (found := _type_name(a.annotation))
    }
    for node in ast.walk(function):
        target: ast.expr
        if isinstance(node, ast.AnnAssign):
            target, found = node.target, _type_name(node.annotation)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, found = node.targets[0], value_type(node.value)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            target, found = node.optional_vars, value_type(node.context_expr)
        else:
            continue
        if found and isinstance(target, ast.Name):
            types.setdefault(target.id, found)
    return types


def _aliases(function: ast.FunctionDef | ast.AsyncFunctionDef, attributes: dict[str, str]) -> dict[str, str]:
    """Local name -> class for `config = self.config` where the class knows `self.config`'s (uvicorn's
    `Server._serve`: `config = self.config; config.load()`)."""
    return {
        node.targets[0].id: attributes[node.value.attr]
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
        and node.value.attr in attributes
    }


def python_calls(source: str, path: str) -> dict[int, set[str]]:
    """Exact targets of the calls in each function or method, keyed by its 1-based first line (decorators excluded):
    `self.m()`, `f()` and `mod.f()` of imported names, and `x.m()` / `self.x.m()` where `x`'s class is known from an
    annotation or the call that made it (`kb = KnowledgeBase.open(...)`, `self.kb = kb` annotated `KnowledgeBase`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    imports = _imports(tree, path)
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    returns = {  # this file's functions that say what they return: `def _open(ctx) -> KnowledgeBase`
        node.name: found
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (found := _type_name(node.returns))
    }
    out: dict[int, set[str]] = {}

    def value_type(value: ast.expr) -> str | None:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in returns:
            return returns[value.func.id]
        return _type_name(value) if isinstance(value, ast.Call) else None

    def method_of(class_name: str, method: str) -> str | None:
        if class_name in classes:
            return f"{path}::{class_name}.{method}"
        module, _, name = class_name.rpartition(".")
        if module:  # `requests.Session`: the module's class, this repository's or another library's
            where = imports.get(module, "")
            return f"{where}::{name}.{method}" if where and "::" not in where else None
        where = imports.get(class_name, "")
        return f"{where}.{method}" if "::" in where else None

    def visit(node: ast.AST, owner: str | None, attributes: dict[str, str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name, _attribute_types(child, value_type))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                local = {**_aliases(child, attributes), **_local_types(child, value_type)}
                targets: set[str] = set()
                for call in ast.walk(child):
                    if not isinstance(call, ast.Call):
                        continue
                    func = call.func
                    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                        receiver = func.value.id
                        if receiver in {"self", "cls"} and owner:
                            targets.add(f"{path}::{owner}.{func.attr}")
                        elif receiver in local and (target := method_of(local[receiver], func.attr)):
                            targets.add(target)
                        elif receiver in imports and "::" not in imports[receiver]:
                            targets.add(f"{imports[receiver]}::{func.attr}")
                    elif (
                        isinstance(func, ast.Attribute)
                        and isinstance(func.value, ast.Attribute)
                        and isinstance(func.value.value, ast.Name)
                        and func.value.value.id == "self"
                        and func.value.attr in attributes
                        and (target := method_of(attributes[func.value.attr], func.attr))
                    ):
                        targets.add(target)
                    elif (
                        isinstance(func, ast.Attribute)
                        and isinstance(func.value, ast.Call)
                        and (made := value_type(func.value))
                        and (target := method_of(made, func.attr))
                    ):
                        targets.add(target)  # `_open(ctx).reindex_changes()`
                    elif isinstance(func, ast.Name) and func.id in imports and "::" in imports[func.id]:
                        targets.add(imports[func.id])
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out[child.lineno] = targets
                out.setdefault(first, targets)
                visit(child, owner, attributes)

    visit(tree, None, {})
    return out
