"""`knowledge deps` (issue 71, item 1): the declared dependencies resolved to what is installed, in a real virtual
environment made by uv from real wheels and a real node_modules made by npm from a packed package, offline; nothing
of a package is imported or run, a link out of the repository is refused, a lockfile that disagrees is said."""

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.dependencies import resolve

from .conftest import make_wheel


@pytest.fixture
def python_repo(tmp_path):
    uv = shutil.which("uv")
    assert uv is not None, "the test extra installs uv"
    root = tmp_path / "repo"
    root.mkdir()
    marker = tmp_path / "imported"
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinyclick", "8.1.7", init=f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    make_wheel(wheels, "Tiny_Util", "2.0.0")
    subprocess.run([uv, "venv", "--no-config", "--quiet", str(root / ".venv")], check=True, cwd=tmp_path)
    subprocess.run(
        [uv, "pip", "install", "--no-config", "--quiet", "--no-index", "--find-links", str(wheels),
         "--python", str(root / ".venv" / "bin" / "python"), "tinyclick", "tiny-util"],
        check=True, cwd=tmp_path,
    )  # fmt: skip
    (root / "pyproject.toml").write_text(
        '[project]\nname = "app"\ndependencies = ["tinyclick>=8", "tiny.util"]\n\n'
        '[project.optional-dependencies]\ndocs = ["missing-pkg>=1"]\n'
    )
    (root / "uv.lock").write_text(
        'version = 1\n\n[[package]]\nname = "tinyclick"\nversion = "8.1.7"\n\n'
        '[[package]]\nname = "tiny-util"\nversion = "1.9.0"\n'
    )
    return root, marker


def answered(root, obj, *args):
    """The JSON answer of `knowledge -C root ARGS --json`, which must succeed."""
    said = CliRunner().invoke(cli, ["-C", str(root), *args, "--json"], obj=obj)
    assert said.exit_code == 0, said.output
    return json.loads(said.output)


def test_python_dependencies_are_found_with_their_version_and_a_lockfile_that_disagrees(python_repo):
    root, marker = python_repo
    found = {d.name: d for d in resolve(root)}
    assert sorted(found) == ["missing-pkg", "tiny.util", "tinyclick"]
    assert (found["tinyclick"].installed, found["tinyclick"].locked, found["tinyclick"].problem) == (
        "8.1.7",
        "8.1.7",
        None,
    )
    assert found["tinyclick"].location.endswith("site-packages/tinyclick")
    assert found["tiny.util"].installed == "2.0.0"  # Tiny_Util, tiny-util and tiny.util are one name
    assert found["tiny.util"].problem == "installed 2.0.0, the lockfile pins 1.9.0"
    assert found["missing-pkg"].problem == "not installed"
    assert not marker.exists()  # read by its METADATA: the package's code never ran
    result = CliRunner().invoke(cli, ["-C", str(root), "deps", "list"])
    assert result.exit_code == 0, result.output
    assert "installed 2.0.0, the lockfile pins 1.9.0" in result.output
    assert result.output.strip().splitlines()[-1] == "3 dependencies, 2 with a problem, 0 indexed"
    data = json.loads(CliRunner().invoke(cli, ["-C", str(root), "deps", "list", "--json"]).output)
    assert {row["name"]: row["installed"] for row in data["dependencies"]}["tinyclick"] == "8.1.7"
    assert not marker.exists()


def test_a_broken_manifest_is_one_line_naming_it(python_repo):
    root, _ = python_repo
    (root / "pyproject.toml").write_text("[project\ndependencies = [")
    result = CliRunner().invoke(cli, ["-C", str(root), "deps", "list"])
    assert result.exit_code != 0
    assert len(result.output.strip().splitlines()) == 1
    assert "pyproject.toml: not valid TOML" in result.output


def test_node_dependencies_come_from_node_modules_and_a_link_out_of_the_repository_is_refused(tmp_path):
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed on this machine")
    package = tmp_path / "leftpad"
    package.mkdir()
    (package / "package.json").write_text(json.dumps({"name": "leftpad", "version": "1.3.0", "main": "index.js"}))
    (package / "index.js").write_text("require('fs').writeFileSync('ran', 'x');\nmodule.exports = (s) => s;\n")
    subprocess.run([npm, "pack", "--silent", str(package)], cwd=tmp_path, check=True, capture_output=True)
    root = tmp_path / "web"
    root.mkdir()
    (root / "package.json").write_text(json.dumps({"name": "web", "version": "0.0.1"}))
    subprocess.run(
        [npm, "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "../leftpad-1.3.0.tgz"],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "package.json").write_text(json.dumps({"name": "linked", "version": "9.9.9"}))
    (root / "node_modules" / "linked").symlink_to(outside)
    manifest = json.loads((root / "package.json").read_text())
    manifest["devDependencies"] = {"linked": "^9.0.0"}
    (root / "package.json").write_text(json.dumps(manifest))
    found = {d.name: d for d in resolve(root)}
    assert (found["leftpad"].installed, found["leftpad"].locked, found["leftpad"].problem) == ("1.3.0", "1.3.0", None)
    assert found["leftpad"].wanted.startswith("leftpad@")
    assert found["linked"].installed is None
    assert found["linked"].problem.startswith("a link out of the repository")
    assert not (root / "ran").exists()


def test_a_dependency_is_indexed_once_at_its_installed_version_and_asked(python_repo, tmp_path, monkeypatch):
    """Issue 71: the installed code asked, not the latest release; one index per (ecosystem, name, version) in the
    user cache, shared by every repository that uses it; nothing of the package run."""
    from .conftest import HashingEmbedder

    root, marker = python_repo
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    package = root / ".venv" / "lib"
    source = next(package.glob("python3*/site-packages/tinyclick/__init__.py"))
    source.write_text(source.read_text() + "\n\ndef complete_shell_words(words):\n    return sorted(words)\n")
    indexed = {row["name"]: row["indexed"] for row in answered(root, obj, "deps", "list")["dependencies"]}
    assert indexed["tinyclick"] is None
    built = CliRunner().invoke(cli, ["-C", str(root), "deps", "index", "tinyclick"], obj=obj)
    assert built.exit_code == 0, built.output
    folder = tmp_path / "home" / "deps" / "python" / "tinyclick-8.1.7"
    indexed = {row["name"]: row["indexed"] for row in answered(root, obj, "deps", "list")["dependencies"]}
    assert (indexed["tinyclick"], indexed["tiny.util"]) == (str(folder), None)
    listed = CliRunner().invoke(cli, ["-C", str(root), "deps", "list"], obj=obj).output
    assert "tinyclick                8.1.7        indexed" in listed, listed
    assert built.output.startswith("tinyclick==8.1.7: indexed ")
    assert str(folder) in built.output
    answer = answered(root, obj, "deps", "search", "tinyclick", "complete shell words")
    assert (answer["source"], answer["results"][0]["path"]) == ("tinyclick==8.1.7", "tinyclick/__init__.py")
    assert not marker.exists()  # read as text: the package's code never ran
    other = tmp_path / "other"
    other.mkdir()
    (other / ".venv").symlink_to(root / ".venv")  # another repository on the same environment
    (other / "requirements.txt").write_text("tinyclick==8.1.7\n")
    again = CliRunner().invoke(cli, ["-C", str(other), "deps", "index", "tinyclick"], obj=obj)
    assert again.exit_code == 0, again.output
    assert "already indexed" in again.output
    assert "not rebuilt" in again.output
    # the same from `knowledge search --dep` (what MCP and HTTP pass as `dep`): the answer names its source
    words = ["-C", str(root), "search", "complete shell words", "--dep", "tinyclick"]
    searched = CliRunner().invoke(cli, words, obj=obj)
    assert searched.exit_code == 0, searched.output
    assert searched.output.startswith("from tinyclick==8.1.7:\n")
    assert "tinyclick/__init__.py" in searched.output
    as_json = json.loads(CliRunner().invoke(cli, [*words, "--json"], obj=obj).output)
    assert (as_json["source"], as_json["results"][0]["path"]) == ("tinyclick==8.1.7", "tinyclick/__init__.py")
    missing = CliRunner().invoke(cli, ["-C", str(root), "deps", "search", "missing-pkg", "x"], obj=obj)
    assert missing.exit_code != 0
    assert "missing-pkg is declared but not installed" in missing.output


def test_scope_all_interleaves_the_repository_and_its_dependencies_each_result_naming_its_source(
    python_repo, tmp_path, monkeypatch
):
    """Issue 71, item 3: `--scope all` asks the repository and every installed dependency in one answer, `--deps`
    (`--scope deps`) the dependencies alone; each result names its source, the same from the CLI and from the
    parameters MCP and HTTP pass."""
    from knowledge.api.request import SearchRequest
    from knowledge.dependency_kbs import search_scoped
    from knowledge.kb import KnowledgeBase

    from .conftest import HashingEmbedder, commit

    root, marker = python_repo
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    source = next((root / ".venv" / "lib").glob("python3*/site-packages/tinyclick/__init__.py"))
    source.write_text(source.read_text() + "\n\ndef complete_shell_words(words):\n    return sorted(words)\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(".venv/\n")
    commit(root, {"app/shell.py": "def complete_shell_words_for_app(words):\n    return list(words)\n"})
    assert CliRunner().invoke(cli, ["-C", str(root), "reindex-all", "--quiet"], obj=obj).exit_code == 0

    def asked(*words):
        result = CliRunner().invoke(cli, ["-C", str(root), "search", "complete shell words", "--json", *words], obj=obj)
        assert result.exit_code == 0, result.output
        return [(hit.get("source"), hit["path"]) for hit in json.loads(result.output)["results"]]

    everywhere = asked("--scope", "all", "--threshold", "0")
    assert ("tinyclick==8.1.7", "tinyclick/__init__.py") in everywhere
    assert ("", "app/shell.py") in everywhere
    assert {source for source, _ in asked("--deps", "--threshold", "0")} == {"tinyclick==8.1.7"}
    assert asked("--deps", "--threshold", "0") == asked("--scope", "deps", "--threshold", "0")
    assert all(source is None for source, _ in asked("--threshold", "0"))  # the repository alone, as before
    kb = KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())
    request = SearchRequest.from_params({"query": "complete shell words", "scope": "all", "threshold": 0})
    assert [(h.source, h.path) for h in search_scoped(kb, request).results] == everywhere
    text = CliRunner().invoke(cli, ["-C", str(root), "search", "complete shell words", "--deps"], obj=obj).output
    assert "tinyclick==8.1.7: tinyclick/__init__.py:" in text
    # a dependency's result is read by its id or its named path, from its copy at that version (`show`, `get_source`)
    words = ["-C", str(root), "search", "complete shell words", "--deps", "--json"]
    found = json.loads(CliRunner().invoke(cli, words, obj=obj).output)["results"][0]
    assert found["id"].startswith("tinyclick==8.1.7:tinyclick/__init__.py#")
    shown = CliRunner().invoke(cli, ["-C", str(root), "show", found["id"], "--json"], obj=obj)
    assert shown.exit_code == 0, shown.output
    lines = json.loads(shown.output)
    assert lines["path"] == "tinyclick==8.1.7:tinyclick/__init__.py"
    assert "def complete_shell_words(words):" in lines["lines"]
    spec = f"tinyclick==8.1.7:tinyclick/__init__.py:{found['line_start']}-{found['line_end']}"
    assert json.loads(CliRunner().invoke(cli, ["-C", str(root), "show", spec, "--json"], obj=obj).output) == lines
    stale = CliRunner().invoke(cli, ["-C", str(root), "show", "tinyclick==8.0.0:tinyclick/__init__.py"], obj=obj)
    assert stale.exit_code == 1
    assert "tinyclick is installed at 8.1.7 here, not 8.0.0; search again" in stale.output
    both = CliRunner().invoke(cli, ["-C", str(root), "search", "x", "--deps", "--scope", "all"], obj=obj)
    assert both.exit_code == 2
    assert "choose one of --deps and --scope all" in both.output
    assert not marker.exists()


def test_interleaving_keeps_each_sources_order_and_merges_by_static_similarity():
    from knowledge.dependency_kbs import interleaved
    from knowledge.records import SearchHit, SearchResponse

    def hit(path, similarity):
        return SearchHit(id=path, path=path, kind="code", score=None, title="", description="", section="",
                         line_start=1, line_end=2, content=None, tokens=10,
                         explain={"static_score": similarity})  # fmt: skip

    def answer(*hits):
        return SearchResponse(query="q", results=hits, tokens_used=0, budget=100, omitted=1, threshold=0.2,
                              full_threshold=0.5, model="m")  # fmt: skip

    merged = interleaved(
        [("", answer(hit("a", 0.5), hit("b", None), hit("c", 0.45))), ("x==1", answer(hit("d", 0.6), hit("e", 0.3)))],
        k=4,
    )
    # b, which the static list did not find, stands at c's similarity: its source's order is kept
    assert [(h.source, h.path) for h in merged.results] == [("x==1", "d"), ("", "a"), ("", "b"), ("", "c")]
    assert merged.omitted == 7 - 4


def test_scope_deps_asks_only_the_dependencies_that_may_hold_a_result(python_repo, tmp_path, monkeypatch):
    """A warm environment has dozens of dependencies: `--scope deps` asks those the question names, those defining a
    name it asks for, and those holding one of the k chunks nearest to it in the static stage's space (the shipped
    table, no transformer), and leaves the rest unasked."""
    from knowledge.api.request import SearchRequest
    from knowledge.dependency_kbs import ScopedSearch
    from knowledge.kb import KnowledgeBase

    root, _ = python_repo
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "tinyclick" / "__init__.py").write_text(
        'def complete_shell_words(words):\n    """Shell completion: the words a shell may complete."""\n'
        "    return sorted(words)\n"
    )
    util = next(p for p in site.iterdir() if p.is_dir() and p.name.lower() == "tiny_util")
    (util / "__init__.py").write_text('def add_numbers(a, b):\n    """The sum of two numbers."""\n    return a + b\n')
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    asked = []
    search = KnowledgeBase.search
    monkeypatch.setattr(
        KnowledgeBase, "search", lambda kb, *a, **kw: asked.append(kb.root.name) or search(kb, *a, **kw)
    )
    scoped = ScopedSearch(KnowledgeBase.open(root))
    first = scoped.search(SearchRequest(query="shell completion words", scope="deps", k=1))
    assert [hit.source for hit in first.results] == ["tinyclick==8.1.7"]
    assert set(asked) == {"tinyclick-8.1.7"}  # tiny.util holds nothing near: not asked
    asked.clear()
    scoped.search(SearchRequest(query="add_numbers", scope="deps", k=1))  # a name it defines
    assert "tiny-util-2.0.0" in asked
    asked.clear()
    scoped.search(SearchRequest(query="shell completion words in tiny.util", scope="deps", k=1))  # named
    assert set(asked) == {"tiny-util-2.0.0", "tinyclick-8.1.7"}


def test_drift_flags_an_api_the_installed_version_does_not_define(python_repo, tmp_path, monkeypatch):
    """Issue 71, item 4: a doc naming `tinyclick.shell_completion.CompletionItem` while tinyclick 8.1.7 installed here
    has no such module is broken, said with the version; what the installed version defines (a function, a class's
    method, a name its package re-exports) is not; the package is read, never imported."""
    from .conftest import HashingEmbedder, commit

    root, marker = python_repo
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    package = next((root / ".venv" / "lib").glob("python3*/site-packages/tinyclick"))
    (package / "__init__.py").write_text((package / "__init__.py").read_text() + "\nfrom .core import Group as Group\n")
    (package / "core.py").write_text("class Group:\n    def result_callback(self, f):\n        return f\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(".venv/\n")
    doc = (
        "---\ndescription: Using tinyclick.\n---\n# Commands\n\nGroups run `tinyclick.core.Group.result_callback` "
        "(also `tinyclick.Group`); completion comes from `tinyclick.shell_completion.CompletionItem`, and the old "
        "`tinyclick.core.Group.resultcallback` is gone; settings go in `tinyclick.toml`.\n"
    )
    commit(root, {"docs/commands.md": doc, "app/main.py": "def main():\n    return 1\n"})
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    for indexed in (False, True):  # with no index (a pre-commit hook), then with one
        if indexed:
            assert CliRunner().invoke(cli, ["-C", str(root), "reindex-all", "--quiet"], obj=obj).exit_code == 0
        said = CliRunner().invoke(cli, ["-C", str(root), "drift", "--json"], obj=obj)
        broken = {item["reference"]: item["summary"] for item in json.loads(said.output)["items"]}
        assert broken == {
            "symbol:tinyclick.shell_completion.CompletionItem": "`tinyclick.shell_completion.CompletionItem` is not "
            "defined by tinyclick 8.1.7, the version installed here",
            "symbol:tinyclick.core.Group.resultcallback": "`tinyclick.core.Group.resultcallback` is not defined by "
            "tinyclick 8.1.7, the version installed here",
        }, said.output
    assert not marker.exists()


def test_locate_in_a_dependency_names_its_files_by_their_source_and_show_reads_them(python_repo, tmp_path, monkeypatch):
    """Issue 71, item 3: `locate --dep NAME` answers where to change inside the installed version, each file and
    entity named by its source; `show` reads an entity it names."""
    from .conftest import HashingEmbedder

    root, marker = python_repo
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    package = next((root / ".venv" / "lib").glob("python3*/site-packages/tinyclick"))
    (package / "shell.py").write_text(
        "def complete_shell_words(words):\n    return list(words)\n\n\ndef other(value):\n    return value\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    issue = "complete_shell_words returns the words unsorted\n\nCalling `complete_shell_words(['b', 'a'])` gives b, a."
    said = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--dep", "tinyclick", "--json"], input=issue,
                              obj=obj)  # fmt: skip
    assert said.exit_code == 0, said.output
    first = json.loads(said.output)["files"][0]
    assert first["path"] == "tinyclick==8.1.7:tinyclick/shell.py"
    entity = first["entities"][0]
    assert entity["id"].startswith("tinyclick==8.1.7:tinyclick/shell.py#complete_shell_words")
    shown = CliRunner().invoke(cli, ["-C", str(root), "show", entity["id"], "--json"], obj=obj)
    assert json.loads(shown.output)["lines"][0] == "def complete_shell_words(words):"
    text = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--dep", "tinyclick"], input=issue, obj=obj)
    assert "tinyclick==8.1.7:tinyclick/shell.py" in text.output
    assert not marker.exists()


def test_locate_scope_all_asks_the_dependencies_a_traceback_points_into_beside_the_repository(
    python_repo, tmp_path, monkeypatch
):
    """Issue 71, item 3: `locate --scope all` merges the repository's files with those of the dependency a frame
    points into (its installed copy under site-packages), each named by its source; a dependency the issue does not
    point into is not asked (nor indexed); `--deps` with nothing pointed into is one clear error."""
    from .conftest import HashingEmbedder

    root, marker = python_repo
    home = tmp_path / "home"
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    package = next((root / ".venv" / "lib").glob("python3*/site-packages/tinyclick"))
    (package / "shell.py").write_text(
        "def other(value):\n    return value\n\n\ndef complete_shell_words(words):\n    return list(words)[0]\n"
    )
    (root / "app.py").write_text("from tinyclick.shell import complete_shell_words\n\n\ndef run(words):\n"
                                 "    return complete_shell_words(words)\n")  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    assert CliRunner().invoke(cli, ["-C", str(root), "reindex-all", "--quiet"], obj=obj).exit_code == 0
    issue = (
        "run fails on no words\n\nTraceback (most recent call last):\n"
        f'  File "{root}/app.py", line 5, in run\n    return complete_shell_words(words)\n'
        f'  File "{package}/shell.py", line 6, in complete_shell_words\n    return list(words)[0]\n'
        "IndexError: list index out of range\n"
    )
    said = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--scope", "all", "--json"], input=issue, obj=obj)
    assert said.exit_code == 0, said.output
    files = json.loads(said.output)["files"]
    paths = [file["path"] for file in files]
    assert {"app.py", "tinyclick==8.1.7:tinyclick/shell.py"} <= set(paths[:2]), paths
    shell = files[paths.index("tinyclick==8.1.7:tinyclick/shell.py")]
    assert shell["entities"][0]["id"] == "tinyclick==8.1.7:tinyclick/shell.py#complete_shell_words"
    assert not any(path.startswith("tiny-util") or path.startswith("tiny_util") for path in paths)
    assert not list((home / "deps" / "python").glob("tiny*util*")), "a dependency not pointed into was indexed"
    only = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--deps"], input=issue, obj=obj)
    assert only.exit_code == 0, only.output
    assert "app.py" not in only.output.split(), only.output
    nowhere = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--deps"], input="run is slow", obj=obj)
    assert nowhere.exit_code != 0
    assert "points into no installed dependency" in nowhere.output
    assert not marker.exists()


def test_rust_and_go_dependencies_are_found_in_cargos_registry_sources_and_gos_module_cache(tmp_path, monkeypatch):
    """Issue 71, item 1: `Cargo.toml` + `Cargo.lock` against the sources Cargo unpacked, `go.mod` against Go's module
    cache (laid out as the two tools lay them out: neither registry is reachable from here), with the version found,
    a pin whose folder is missing said beside the version that is there, and a crate asked by `--dep`."""
    from .conftest import HashingEmbedder

    cargo_home, module_cache, root = tmp_path / "cargo", tmp_path / "gomod", tmp_path / "repo"
    monkeypatch.setenv("CARGO_HOME", str(cargo_home))
    monkeypatch.setenv("GOMODCACHE", str(module_cache))
    monkeypatch.setenv("KNOWLEDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    registry = cargo_home / "registry" / "src" / "index.crates.io-1949cf8c6b5b557f"
    for crate, version in (("itoa", "1.0.11"), ("memchr", "2.7.1"), ("memchr", "2.7.4")):
        (registry / f"{crate}-{version}" / "src").mkdir(parents=True)
        (registry / f"{crate}-{version}" / "Cargo.toml").write_text(
            f'[package]\nname = "{crate}"\nversion = "{version}"\n'
        )
    (registry / "itoa-1.0.11" / "src" / "lib.rs").write_text(
        "/// Formats an integer into a stack buffer without allocating.\npub fn format_integer(value: i64) -> "
        "String {\n    value.to_string()\n}\n"
    )
    toml = module_cache / "github.com" / "!burnt!sushi" / "toml@v1.3.2"
    toml.mkdir(parents=True)
    (toml / "decode.go").write_text("package toml\n\n// Decode parses a TOML document.\nfunc Decode(data string) {}\n")
    root.mkdir()
    (root / "Cargo.toml").write_text(
        '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies]\nitoa = "1"\n'
        'fast-chr = { version = "2.7", package = "memchr" }\nlocal = { path = "../local" }\n\n'
        '[dev-dependencies]\nserde = "1"\n'
    )
    (root / "Cargo.lock").write_text(
        "version = 3\n\n"
        + "".join(
            f'[[package]]\nname = "{n}"\nversion = "{v}"\nsource = "registry+https://github.com/rust-lang/crates.io-index"'
            "\n\n"
            for n, v in (("itoa", "1.0.11"), ("memchr", "2.7.2"), ("serde", "1.0.200"))
        )
    )
    (root / "go.mod").write_text(
        "module example.com/app\n\ngo 1.22\n\nrequire (\n\tgithub.com/BurntSushi/toml v1.3.2\n"
        "\tgolang.org/x/sys v0.20.0 // indirect\n)\n\nrequire example.com/local v0.0.0\n\n"
        "replace example.com/local => ./local\n"
    )
    found = {d.name: d for d in resolve(root)}
    assert set(found) == {"itoa", "memchr", "serde", "github.com/BurntSushi/toml"}
    assert (found["itoa"].ecosystem, found["itoa"].installed, found["itoa"].problem) == ("cargo", "1.0.11", None)
    assert found["itoa"].location == str(registry / "itoa-1.0.11")
    assert found["memchr"].problem == "installed 2.7.4, the lockfile pins 2.7.2"
    assert found["serde"].problem == "not installed"
    assert (found["github.com/BurntSushi/toml"].installed, found["github.com/BurntSushi/toml"].location) == (
        "v1.3.2",
        str(toml),
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    answer = answered(root, obj, "search", "format an integer without allocating", "--dep", "itoa")
    assert (answer["source"], answer["results"][0]["path"]) == ("itoa==1.0.11", "itoa-1.0.11/src/lib.rs")
    listed = CliRunner().invoke(cli, ["-C", str(root), "deps", "list", "--json"], obj=obj)
    rows = {row["name"]: row for row in json.loads(listed.output)["dependencies"]}
    assert rows["github.com/BurntSushi/toml"]["installed"] == "v1.3.2"
    panic = f"panic: bad document\n\ngoroutine 1 [running]:\n\t{toml}/decode.go:4 +0x1d\n"
    said = CliRunner().invoke(cli, ["-C", str(root), "locate", "-", "--deps", "--json"], input=panic, obj=obj)
    assert said.exit_code == 0, said.output
    entity = json.loads(said.output)["files"][0]["entities"][0]
    assert entity["id"] == "github.com/BurntSushi/toml==v1.3.2:toml@v1.3.2/decode.go#Decode"
    shown = answered(root, obj, "show", entity["id"])
    assert shown["lines"][0] == "func Decode(data string) {}"
