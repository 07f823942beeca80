"""Imports flow one way: frontends -> facade -> use cases -> adapters -> leaves. A module may import from its own
layer or any layer below it, never from one above."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "knowledge"

LAYERS = {
    "frontends": ("knowledge.cli", "knowledge.server", "knowledge.client", "knowledge.launcher", "knowledge.__main__"),
    "facade": ("knowledge.kb", "knowledge.model_access"),
    "use cases": (
        "knowledge.indexer",
        "knowledge.embed_pass",
        "knowledge.serving",
        "knowledge.status",
        "knowledge.drift_notes",
        "knowledge.doc_lint",
        "knowledge.chunk_files",
        "knowledge.search",
        "knowledge.search_options",
        "knowledge.retrieval",
        "knowledge.grep",
        "knowledge.kind",
        "knowledge.hooks",
        "knowledge.drift",
        "knowledge.docs_for",
        "knowledge.findability",
        "knowledge.ranking",
        "knowledge.pieces",
        "knowledge.teams",
        "knowledge.llms_txt",
        "knowledge.agent_config",
    ),
    "adapters": ("knowledge.store", "knowledge.embedding", "knowledge.git", "knowledge.corpus", "knowledge.chunking"),
    "leaves": (
        "knowledge.records",
        "knowledge.errors",
        "knowledge.fs",
        "knowledge.config",
        "knowledge.lexical",
        "knowledge.budget",
        "knowledge.render",
        "knowledge.callgraph",
        "knowledge.request",
        "knowledge.version",
        "knowledge.secrets",
        "knowledge.references",
        "knowledge.path_gate",
        "knowledge.policy",
        "knowledge.globs",
    ),
}
ORDER = list(LAYERS)


def layer_of(module: str) -> int:
    if module == "knowledge":  # the package's public names: what a frontend (a user's program) imports
        return 0
    best = None
    for rank, name in enumerate(ORDER):
        for prefix in LAYERS[name]:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (rank, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def module_name(path: Path, package_dir: Path = PACKAGE) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package_dir: Path = PACKAGE) -> list[tuple[str, int]]:
    """Every knowledge module `path` imports (functions included), with the line."""
    me = module_name(path, package_dir)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.startswith("knowledge")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("knowledge"):
                continue
            if node.module is None:  # `from . import git`: the names are modules
                found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((target, node.lineno))
    return found


def upward_imports(root: Path) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        me = module_name(path, root)
        mine = layer_of(me)
        for target, line in imported_modules(path, root):
            if layer_of(target) < mine:
                problems.append(f"{path.name}:{line} {me} ({ORDER[mine]}) imports {target} ({ORDER[layer_of(target)]})")
    return problems


def test_no_module_imports_from_a_layer_above_it():
    assert upward_imports(PACKAGE) == []


def test_the_check_catches_an_upward_import(tmp_path):
    fake = tmp_path / "knowledge"
    (fake / "store").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "store" / "__init__.py").write_text("")
    (fake / "store" / "local.py").write_text("def f():\n    from ..kb import KnowledgeBase\n")
    problems = upward_imports(fake)
    assert problems == ["local.py:2 knowledge.store.local (adapters) imports knowledge.kb (facade)"]


@pytest.mark.parametrize("module", ["knowledge.store.local", "knowledge.kb", "knowledge.cli.daemon"])
def test_every_module_has_a_layer(module):
    assert layer_of(module) in range(len(ORDER))
