"""Imports flow one way: frontends -> facade -> use cases -> adapters -> leaves -> shared records. A module imports from
its own component, or from a layer below it; never from one above, never in a cycle, and across components of one
layer only where SIDEWAYS says why. Frontends reach only the facade and the shared records (and what FRONTEND_REACH
names). Imports inside functions count too: they are imports all the same."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "knowledge"

LAYERS = {
    "frontends": ("knowledge.cli", "knowledge.server", "knowledge.client", "knowledge.launcher", "knowledge.__main__"),
    "facade": ("knowledge.kb", "knowledge.admin", "knowledge.model_access", "knowledge.dependency_kbs"),
    "use cases": (
        "knowledge.indexer",
        "knowledge.embed_pass",
        "knowledge.chunk_files",
        "knowledge.answer",
        "knowledge.model_stages",
        "knowledge.search",
        "knowledge.search_options",
        "knowledge.retrieval",
        "knowledge.grep",
        "knowledge.kind",
        "knowledge.hooks",
        "knowledge.drift",
        "knowledge.drift_notes",
        "knowledge.docs_for",
        "knowledge.doc_lint",
        "knowledge.tree_chunks",
        "knowledge.members",
        "knowledge.findability",
        "knowledge.ranking",
        "knowledge.pieces",
        "knowledge.focus",
        "knowledge.serving",
        "knowledge.status",
        "knowledge.teams",
        "knowledge.llms_txt",
        "knowledge.agent_config",
        "knowledge.locate",
        "knowledge.locate_answer",
    ),
    "adapters": (
        "knowledge.store",
        "knowledge.embedding",
        "knowledge.git",
        "knowledge.corpus",
        "knowledge.chunking",
        "knowledge.path_gate",
        "knowledge.history",
        "knowledge.snapshot_fetch",
        "knowledge.dependencies",
        "knowledge.dependency_caches",
        "knowledge.dependency_files",
    ),
    "leaves": (
        "knowledge.fs",
        "knowledge.child",
        "knowledge.trusted",
        "knowledge.config",
        "knowledge.lexical",
        "knowledge.budget",
        "knowledge.render",
        "knowledge.callgraph",
        "knowledge.api",
        "knowledge.secrets",
        "knowledge.references",
        "knowledge.globs",
        "knowledge.patterns",
        "knowledge.config_edit",
        "knowledge.quiet",
        "knowledge.modules",
        "knowledge.issue",
        "knowledge.interrupts",
    ),
    "shared": ("knowledge.records", "knowledge.errors", "knowledge.version"),
}
ORDER = list(LAYERS)

# What a frontend may reach below the facade: the request it sends, the operation it calls, the rendering of the answer
# it gets, and the budget that holds what it prints.
FRONTEND_REACH = {"knowledge.api", "knowledge.render", "knowledge.budget"}

# Imports across components of one layer, each with its reason. Anything else across a layer is a defect.
SIDEWAYS = {
    # facade: the knowledge base holds the model access; admin reads an index's variant through the knowledge base
    ("knowledge.kb", "knowledge.model_access"): "the facade's model half",
    ("knowledge.admin", "knowledge.kb"): "its operations take the knowledge base they work on; a dependency's it opens",
    ("knowledge.admin", "knowledge.model_access"): "the variant an existing index was built with, for `config`",
    ("knowledge.dependency_kbs", "knowledge.kb"): "a dependency's index is a knowledge base, asked as the repository's",
    # use cases work on one index of one kind: KindIndex is their common ground
    ("knowledge.indexer", "knowledge.kind"): "indexes a KindIndex",
    ("knowledge.search", "knowledge.kind"): "searches KindIndexes",
    ("knowledge.retrieval", "knowledge.kind"): "reads a KindIndex's candidates",
    ("knowledge.grep", "knowledge.kind"): "greps the files a KindIndex holds",
    ("knowledge.serving", "knowledge.kind"): "a chunk's current lines",
    ("knowledge.status", "knowledge.kind"): "counts and freshness of KindIndexes",
    ("knowledge.drift_notes", "knowledge.kind"): "notes valid for one docs index",
    ("knowledge.findability", "knowledge.kind"): "asks a docs KindIndex",
    # one request answered: the model's check, the pipeline, what the answer leaves behind
    ("knowledge.answer", "knowledge.search"): "runs the search pipeline",
    ("knowledge.answer", "knowledge.kind"): "answers over KindIndexes",
    ("knowledge.answer", "knowledge.model_stages"): "the stage each source answers with",
    ("knowledge.model_stages", "knowledge.kind"): "each index checked against the model that built it",
    ("knowledge.answer", "knowledge.drift_notes"): "the last drift run's notes on the doc sections answered",
    ("knowledge.locate", "knowledge.kind"): "locates over KindIndexes",
    (
        "knowledge.locate",
        "knowledge.ranking",
    ): "names compared as ranking compares them; the one reciprocal-rank fusion",
    ("knowledge.locate", "knowledge.pieces"): "an entity made whole from its parts by search's rule",
    ("knowledge.locate_answer", "knowledge.locate"): "the evidence fused into files",
    ("knowledge.locate_answer", "knowledge.kind"): "answers over KindIndexes",
    ("knowledge.locate_answer", "knowledge.model_stages"): "the stage each source answers with, as search's",
    # the search pipeline's own steps
    ("knowledge.search", "knowledge.retrieval"): "step 1, retrieve",
    ("knowledge.search", "knowledge.ranking"): "step 2, the ranking (rules, diversity) and step 3, the cut",
    ("knowledge.search", "knowledge.search_options"): "what one search runs with",
    ("knowledge.search_options", "knowledge.ranking"): "the ranking policy one search runs with",
    ("knowledge.search", "knowledge.pieces"): "step 4, parts of one entity merged",
    ("knowledge.search", "knowledge.members"): "a container's answer: its declaration and its members' outline",
    ("knowledge.search", "knowledge.focus"): "step 5, a long text narrowed to the lines that matched",
    ("knowledge.focus", "knowledge.pieces"): "an entity's signature and doc comment stay above the lines shown",
    ("knowledge.search", "knowledge.grep"): "--exact/--substring/--regex answer by occurrences",
    ("knowledge.grep", "knowledge.ranking"): "a qualified name read as ranking reads it, its definition listed first",
    ("knowledge.retrieval", "knowledge.ranking"): "fusion, and the asked names whose definitions join the candidates",
    ("knowledge.ranking", "knowledge.pieces"): "a chunk's entity key",
    ("knowledge.findability", "knowledge.search"): "findability asks through the product's own search",
    # indexing, phase one then phase two
    ("knowledge.indexer", "knowledge.chunk_files"): "chunks files in worker processes",
    ("knowledge.embed_pass", "knowledge.indexer"): "phase two reuses phase one's cache and callbacks",
    ("knowledge.tree_chunks", "knowledge.chunk_files"): "chunks the working tree as indexing does",
    # adapters
    ("knowledge.corpus", "knowledge.git"): "discovery lists git's files",
    ("knowledge.corpus", "knowledge.path_gate"): "discovery reads files through the read gate",
    ("knowledge.dependencies", "knowledge.path_gate"): "manifests and installed metadata read through the read gate",
    ("knowledge.dependency_files", "knowledge.path_gate"): "manifests and lockfiles read through the read gate",
    ("knowledge.dependencies", "knowledge.dependency_files"): "the record of a dependency; manifests read once",
    ("knowledge.dependencies", "knowledge.dependency_caches"): "Rust's and Go's, beside Python's and Node's",
    ("knowledge.dependency_caches", "knowledge.dependency_files"): "the record of a dependency; manifests read once",
    ("knowledge.path_gate", "knowledge.git"): "the read gate asks git whether a path is ignored",
    ("knowledge.history", "knowledge.git"): "the commits' messages and files, read from git",
    ("knowledge.store", "knowledge.git"): "a shared store keys an index by repository identity and branch; an "
    "imported snapshot's chunks are held against the files at its commit",
    ("knowledge.store", "knowledge.path_gate"): "an imported snapshot's chunks are held against the files as read",
    ("knowledge.snapshot_fetch", "knowledge.store"): "a fetched snapshot lands in the index's own folder",
    # leaves
    ("knowledge.config", "knowledge.fs"): "the user config file is read and written privately",
    ("knowledge.config", "knowledge.patterns"): "settings' globs and regexes are checked as they will run",
    ("knowledge.config", "knowledge.trusted"): "what the user allowed a tracked knowledge.toml to decide",
    ("knowledge.trusted", "knowledge.fs"): "the user's consent is written privately, through the gate",
    ("knowledge.globs", "knowledge.patterns"): "globs compile to linear-time patterns",
    ("knowledge.secrets", "knowledge.patterns"): "`secret_patterns` run in linear time",
    ("knowledge.api", "knowledge.patterns"): "request globs are checked as the settings' are",
    ("knowledge.callgraph", "knowledge.quiet"): "callers in tests and examples are listed after the others",
    ("knowledge.modules", "knowledge.quiet"): "a test's subject: only a test, an example or a benchmark has one",
}


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


def component(module: str) -> str:
    """`knowledge.store.local` -> `knowledge.store`: a package and its modules are one component."""
    return ".".join(module.split(".")[:2])


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


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """module -> {imported module: line}; a name imported from a package counts as the package unless it is a
    module of it."""
    modules = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}

    def existing(target: str) -> str:
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        return target

    graph: dict[str, dict[str, int]] = {}
    for me, path in modules.items():
        edges = graph.setdefault(me, {})
        for target, line in imported_modules(path, root):
            found = existing(target)
            if found != me and found in modules:
                edges.setdefault(found, line)
    return graph


def upward_imports(root: Path) -> list[str]:
    problems = []
    for me, edges in sorted(import_graph(root).items()):
        mine = layer_of(me)
        for target, line in sorted(edges.items()):
            if layer_of(target) < mine:
                problems.append(f"{me}:{line} ({ORDER[mine]}) imports {target} ({ORDER[layer_of(target)]})")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def import_cycles(root: Path) -> list[list[str]]:
    """Cycles between modules, then between components (`knowledge.store` as one node)."""
    graph = import_graph(root)
    modules = {me: set(edges) for me, edges in graph.items()}
    components: dict[str, set[str]] = {}
    for me, edges in graph.items():
        components.setdefault(component(me), set()).update(
            component(target) for target in edges if component(target) != component(me)
        )
    return cycles(modules) + cycles(components)


def unlisted_crossings(root: Path) -> list[str]:
    """Imports across components of one layer not in SIDEWAYS, and frontend imports past the facade."""
    problems = []
    for me, edges in sorted(import_graph(root).items()):
        mine = layer_of(me)
        for target, line in sorted(edges.items()):
            theirs = layer_of(target)
            pair = (component(me), component(target))
            if ORDER[mine] == "frontends" and me != "knowledge":
                allowed = ORDER[theirs] in {"frontends", "facade", "shared"} or component(target) in FRONTEND_REACH
                if not allowed:
                    problems.append(f"{me}:{line} (a frontend) reaches past the facade to {target}")
            elif theirs == mine and pair[0] != pair[1] and pair not in SIDEWAYS:
                problems.append(
                    f"{me}:{line} imports {target} sideways ({ORDER[mine]}): list it in SIDEWAYS or move it"
                )
    return problems


def test_no_module_imports_from_a_layer_above_it():
    assert upward_imports(PACKAGE) == []


def test_no_import_cycle_between_modules_or_components():
    assert import_cycles(PACKAGE) == []


def test_every_import_across_a_layer_is_listed_and_frontends_stop_at_the_facade():
    assert unlisted_crossings(PACKAGE) == []


def test_every_listed_sideways_import_still_exists():
    graph = import_graph(PACKAGE)
    used = {(component(me), component(target)) for me, edges in graph.items() for target in edges}
    assert sorted(set(SIDEWAYS) - used) == []


# Pairs that may never meet, whatever SIDEWAYS says: the ranking reads chunk records, never how they were chunked
NEVER = {("knowledge.ranking", "knowledge.chunking"): "ranking reads records.CONTAINERS, not the chunker's tables"}


def test_the_ranking_never_imports_the_chunker():
    graph = import_graph(PACKAGE)
    crossings = [
        f"{me} imports {target}: {why}"
        for me, edges in graph.items()
        for target in edges
        for (importer, imported), why in NEVER.items()
        if component(me) == importer and component(target) == imported
    ]
    assert crossings == []


def fake_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "knowledge"
    for rel, text in {"__init__.py": "", "store/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_no_module_above_the_adapters_names_an_index_file():
    """Where an index lives and in which files is the store's (and a cache's, its own): a use case, the facade or a
    frontend asks an engine (issue 68: snapshot export and import are the engine's methods)."""
    above = ORDER.index("adapters")
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if layer_of(module_name(path)) >= above:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if re.search(r"\.(sqlite|usearch)\b", text):
                named.append(f"{module_name(path)}:{node.lineno}: {node.value[:60]!r}")
    assert named == []


def test_the_check_catches_an_upward_import(tmp_path):
    fake = fake_package(tmp_path, {"store/local.py": "def f():\n    from ..kb import KnowledgeBase\n", "kb.py": ""})
    assert upward_imports(fake) == ["knowledge.store.local:2 (adapters) imports knowledge.kb (facade)"]


def test_the_check_catches_a_cycle(tmp_path):
    fake = fake_package(
        tmp_path,
        {"search.py": "from .ranking import rules\n", "ranking.py": "def f():\n    from .search import search\n"},
    )
    assert import_cycles(fake) == [["knowledge.ranking", "knowledge.search"]] * 2  # as modules and as components


def test_the_check_catches_a_cycle_between_packages(tmp_path):
    fake = fake_package(
        tmp_path,
        {"store/local.py": "from ..chunking import ids\n", "chunking/__init__.py": "", "chunking/ids.py": "",
         "chunking/code.py": "from ..store import local\n"},
    )  # fmt: skip
    assert import_cycles(fake) == [["knowledge.chunking", "knowledge.store"]]


def test_the_check_catches_an_unlisted_sideways_import_and_a_frontend_past_the_facade(tmp_path):
    fake = fake_package(
        tmp_path,
        {"drift.py": "from .teams import setup\n", "teams.py": "", "config.py": "",
         "cli/__init__.py": "from ..config import load_settings\n"},
    )  # fmt: skip
    assert unlisted_crossings(fake) == [
        "knowledge.cli:1 (a frontend) reaches past the facade to knowledge.config",
        "knowledge.drift:1 imports knowledge.teams sideways (use cases): list it in SIDEWAYS or move it",
    ]


@pytest.mark.parametrize("module", ["knowledge.store.local", "knowledge.kb", "knowledge.cli.daemon"])
def test_every_module_has_a_layer(module):
    assert layer_of(module) in range(len(ORDER))


def test_every_module_of_the_layers_is_in_the_architecture_diagram():
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    diagram = doc.split("```\n", 2)[1]
    words = set(diagram.replace("/", " ").replace("(", " ").replace(")", " ").replace(",", " ").split())
    missing = [name for layer in LAYERS.values() for name in layer if name.rsplit(".", 1)[-1] not in words]
    assert missing == [], f"add them to docs/architecture.md's diagram: {missing}"
