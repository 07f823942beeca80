"""Are callers complete? knowledge's `called_by` against the call sites a parser finds, in two languages.

    python bench/callgraph_recall.py --work /tmp/symbol-set --out bench/results/callgraph-recall.json

Uses the trees bench/symbol_set.py checks out (structlog, Python; logrus, Go) and a third, poetry (Python, typed
attributes throughout; checked out here). A parser of its own walks each tree: Python's `ast`, and tree-sitter-go
walked here (not knowledge's entity table). It keeps the call sites whose target it can pin down without type
inference: a plain call `f()` of a function defined once in the repository, `self.m()` in a method of a class that
defines `m`, `x.m()` and `self.x.m()` where the code states `x`'s class (an annotated parameter, `x = Cls(...)`,
`self.x: Cls`, a parameter stored as `self.x`), and in Go `F()`, `pkg.F()` of a function defined once and `x.M()` of
a method name defined once. Each is looked up in what `search` shows for the callee (`called_by`): found when the
caller is listed, at its line when the site's line is among the caller's `sites`; `name` edges (guesses) counted
apart. Tests and vendored code are left out as callers and callees, as search demotes them.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPOS = {"structlog": "python", "logrus": "go", "poetry": "python"}
POETRY = ("python-poetry+poetry", "f46702336862f30050d5c641d5ed6f7568ded793")  # the third: typed attributes


def python_sites(tree: Path) -> list[dict]:
    """(caller, callee, line) for every call site of `tree`'s Python files that names its target without doubt: a
    function defined once, `self.m()` of the class's own method, and `x.m()` / `self.x.m()` where the code states
    `x`'s class (a parameter annotated with it, `x = Cls(...)`, `self.x: Cls`, `self.x = Cls(...)` or a parameter
    annotated `Cls` stored as `self.x`), the class defined once and defining `m`."""
    from knowledge.quiet import QUIET_PATH

    files = {p.relative_to(tree).as_posix(): p for p in tree.rglob("*.py") if not QUIET_PATH.search(str(p))}
    parsed = {rel: ast.parse(p.read_text(encoding="utf-8")) for rel, p in files.items()}
    functions: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    where: dict[str, str] = {}
    methods_of: dict[str, set[str]] = {}
    for rel, module in parsed.items():
        for node in module.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[node.name] += 1
                where[node.name] = rel
            elif isinstance(node, ast.ClassDef):
                classes[node.name] += 1
                where["class " + node.name] = rel
                methods_of[node.name] = {
                    n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
    known = Known(functions, where, {c: m for c, m in methods_of.items() if classes[c] == 1})
    sites = []
    for rel, module in parsed.items():
        for top in module.body:
            if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
                sites += _calls_in(top, rel, "", None, known, {})
            elif isinstance(top, ast.ClassDef):
                methods = {n.name for n in top.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
                attributes = _stated_attributes(top, known)
                for node in top.body:
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                        sites += _calls_in(node, rel, top.name, methods, known, attributes)
    return sites


class Known:
    """What the repository defines once: functions, and classes with their methods."""

    def __init__(self, functions: Counter[str], where: dict[str, str], classes: dict[str, set[str]]) -> None:
        self.functions, self.where, self.classes = functions, where, classes

    def stated(self, node: ast.expr | None) -> str | None:
        """The class an annotation or a constructing call states, when it is one of ours: `Cls`, `"Cls"`, `Cls(...)`,
        `Cls | None`, `Optional[Cls]`, `mod.Cls`."""
        if node is None:
            return None
        if isinstance(node, ast.Call):
            return self.stated(node.func)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self.stated(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            left, right = self.stated(node.left), self.stated(node.right)
            return left or right if not (left and right) else None
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Optional":
            return self.stated(node.slice)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name if name in self.classes else None


def _parameters(fn: ast.AST, known: Known) -> dict[str, str]:
    arguments = fn.args  # type: ignore[attr-defined]
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return {a.arg: found for a in every if (found := known.stated(a.annotation))}


def _stated_attributes(cls: ast.ClassDef, known: Known) -> dict[str, str]:
    """`self.NAME` -> class, where the class's code states it (one class only: a name stated twice is dropped)."""
    seen: dict[str, set[str]] = {}
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and (t := known.stated(node.annotation))
        ):
            seen.setdefault(node.target.id, set()).add(t)
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        parameters = _parameters(method, known)
        for node in ast.walk(method):
            if isinstance(node, ast.AnnAssign):
                target, stated = node.target, known.stated(node.annotation)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                stated = parameters.get(value.id) if isinstance(value, ast.Name) else None
                stated = stated or (known.stated(value) if isinstance(value, ast.Call) else None)
            else:
                continue
            is_self = (
                isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
            )
            if stated and is_self:
                seen.setdefault(target.attr, set()).add(stated)  # type: ignore[attr-defined]
    return {name: next(iter(types)) for name, types in seen.items() if len(types) == 1}


def _calls_in(
    fn: ast.AST, rel: str, cls: str, methods: set[str] | None, known: Known, attributes: dict[str, str]
) -> list[dict]:
    name = getattr(fn, "name", "")
    caller = f"{cls}.{name}" if cls else name
    local = dict(_parameters(fn, known))
    for node in ast.walk(fn):
        named = isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        if named and isinstance(node.value, ast.Call) and (stated := known.stated(node.value)):  # type: ignore[attr-defined]
            local.setdefault(node.targets[0].id, stated)  # type: ignore[attr-defined]
    out = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        target = node.func
        if isinstance(target, ast.Name) and known.functions[target.id] == 1:
            callee = {"path": known.where[target.id], "name": target.id}
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and methods is not None
            and target.attr in methods
        ):
            callee = {"path": rel, "name": f"{cls}.{target.attr}"}
        elif isinstance(target, ast.Attribute) and (owner := _receiver_class(target.value, local, attributes)):
            if target.attr not in known.classes[owner]:
                continue
            callee = {"path": known.where["class " + owner], "name": f"{owner}.{target.attr}"}
        else:
            continue
        if callee["name"] != caller or callee["path"] != rel:
            out.append({"caller": {"path": rel, "name": caller}, "callee": callee, "line": node.lineno})
    return out


def _receiver_class(value: ast.expr, local: dict[str, str], attributes: dict[str, str]) -> str | None:
    if isinstance(value, ast.Name) and value.id not in {"self", "cls"}:
        return local.get(value.id)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return attributes.get(value.attr)
    return None


def go_sites(tree: Path) -> list[dict]:
    from knowledge.chunking.tree import parser_for
    from knowledge.quiet import QUIET_PATH

    parser = parser_for("tree_sitter_go", "language")
    files = {
        p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*.go") if not QUIET_PATH.search(str(p))
    }
    roots = {rel: parser.parse(src).root_node for rel, src in files.items()}
    functions: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    where: dict[tuple[str, str], tuple[str, str]] = {}  # ("f"|"m", name) -> (path, qualified name)
    for rel, root in roots.items():
        for node in root.children:
            name = node.child_by_field_name("name")
            if name is None:
                continue
            text = files[rel][name.start_byte : name.end_byte].decode()
            if node.type == "function_declaration":
                functions[text] += 1
                where[("f", text)] = (rel, text)
            elif node.type == "method_declaration":
                methods[text] += 1
                where[("m", text)] = (rel, f"{_receiver(node, files[rel])}.{text}")
    sites = []
    for rel, root in roots.items():
        src = files[rel]
        for node in root.children:
            if node.type not in {"function_declaration", "method_declaration"}:
                continue
            name = src[node.child_by_field_name("name").start_byte : node.child_by_field_name("name").end_byte].decode()
            caller = f"{_receiver(node, src)}.{name}" if node.type == "method_declaration" else name
            for call in _walk(node):
                if call.type != "call_expression":
                    continue
                fn = call.child_by_field_name("function")
                if fn is None:
                    continue
                if fn.type == "identifier":
                    text, kinds = src[fn.start_byte : fn.end_byte].decode(), ("f",)
                elif fn.type == "selector_expression":
                    field = fn.child_by_field_name("field")
                    text, kinds = src[field.start_byte : field.end_byte].decode(), ("m", "f")
                else:
                    continue
                kind = next((k for k in kinds if (functions if k == "f" else methods)[text] == 1), None)
                if kind is None or (kind == "f" and fn.type == "selector_expression" and methods[text]):
                    continue
                path, qualified = where[(kind, text)]
                if (path, qualified) != (rel, caller):
                    callee = {"path": path, "name": qualified}
                    sites.append({"caller": {"path": rel, "name": caller}, "callee": callee,
                                  "line": call.start_point[0] + 1})  # fmt: skip
    return sites


def _receiver(node: object, src: bytes) -> str:
    receiver = node.child_by_field_name("receiver")  # type: ignore[attr-defined]
    text = src[receiver.start_byte : receiver.end_byte].decode()
    return text.strip("()").split()[-1].lstrip("*").split("[")[0]


def _walk(node: object) -> list:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.children)  # type: ignore[attr-defined]
    return out


def check(tree: Path, home: Path, sites: list[dict]) -> dict:
    from knowledge.kb import KnowledgeBase

    kb = KnowledgeBase.open(tree, overrides={"home": str(home), "fill": False})
    kb.reindex_changes(embed=False)
    index = kb.index("code")
    graph = index.call_graph()
    chunks = list(index.all_chunks().values())
    by_name: dict[tuple[str, str], object] = {}
    for chunk in chunks:
        if chunk.symbol:
            name = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
            by_name.setdefault((chunk.path, name), chunk)
    found = at_line = guessed = missing_callee = 0
    misses = []
    for site in sites:
        callee = by_name.get((site["callee"]["path"], site["callee"]["name"]))
        if callee is None:
            missing_callee += 1
            misses.append({**site, "why": "callee not an entity"})
            continue
        refs = [r for r in graph.called_by(callee) if (r["path"], r["name"]) == tuple(site["caller"].values())]
        if not refs:
            misses.append({**site, "why": "caller not listed"})
            continue
        found += 1
        guessed += refs[0]["resolved"] == "name"
        at_line += site["line"] in refs[0].get("sites", [])
    total = len(sites)
    return {
        "call_sites": total,
        "callers_found": found / total,
        "site_lines_found": at_line / total,
        "guesses_among_found": guessed / max(1, found),
        "callee_not_an_entity": missing_callee,
        "misses": misses[:40],
    }


def checkout_poetry(tree: Path, mirror: Path) -> None:
    """The third tree, as bench/symbol_set.py checks out its own (structlog, logrus): an archive at a pinned commit."""
    import subprocess

    folder, commit = POETRY
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={mirror / folder / 'repo'}", "archive", commit], check=True,
                             capture_output=True)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for step in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"]):
        subprocess.run(["git", *step], cwd=tree, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/symbol-set"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    home = args.work / "home"
    result = {}
    for repo, language in REPOS.items():
        tree = args.work / "trees" / repo
        if repo == "poetry" and not tree.is_dir():
            checkout_poetry(tree, args.mirror)
        sites = python_sites(tree) if language == "python" else go_sites(tree)
        result[repo] = {"language": language, **check(tree, home, sites)}
        print(repo, json.dumps({k: v for k, v in result[repo].items() if k != "misses"}), flush=True)
    every = sum(r["call_sites"] for r in result.values())
    result["all"] = {
        "call_sites": every,
        "callers_found": sum(r["callers_found"] * r["call_sites"] for r in result.values()) / every,
        "site_lines_found": sum(r["site_lines_found"] * r["call_sites"] for r in result.values()) / every,
    }
    print("all", json.dumps(result["all"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
