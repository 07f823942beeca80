"""The training manifest (issue 42) names no evaluation material, and the miner strips the doc comments it asks with."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DO_NOT_TRAIN = ROOT.parent / "shared" / "do-not-train.txt"
sys.path.insert(0, str(ROOT / "training"))

import chunk_pairs  # noqa: E402 - training/ is no package of knowledge's

# the localization benchmark's repositories: their fixes are in their histories
SWE_DEV_REPOS = {"sympy/sympy", "psf/requests", "pallets/flask"}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def test_the_manifest_names_nothing_reserved_for_evaluation():
    if not DO_NOT_TRAIN.is_file():
        pytest.skip(f"{DO_NOT_TRAIN} is not on this machine")
    reserved = set()
    for line in DO_NOT_TRAIN.read_text().splitlines():
        if line and not line.startswith("#"):
            kind, _, name = line.partition(" ")
            reserved |= {normal(name), normal(name.rsplit("/", 1)[-1])} if kind == "repo" else {normal(name)}
    manifest = json.loads((ROOT / "training" / "manifest.json").read_text())
    assert manifest["sources"]
    for source in manifest["commit_sources"]:  # commit-message pairs: nothing reserved, no swe-dev repository
        assert not {normal(source["repo"]), normal(source["repo"].rsplit("/", 1)[-1])} & reserved, source["repo"]
        assert source["repo"] not in SWE_DEV_REPOS, source["repo"]
        assert source.get("licence")
        assert len(source["commit"]) == 40
    for source in manifest["sources"]:
        named = {normal(source["name"]), normal(source["name"].rsplit("/", 1)[-1].removeprefix("pypi:"))}
        named |= {normal(source[key].split()[0]) for key in ("package", "import") if key in source}
        assert not named & reserved, source["name"]
        assert source.get("licence")
        assert source.get("version") or len(source.get("commit", "")) == 40


def test_a_mined_pair_asks_with_the_doc_comment_and_answers_without_it():
    text = (
        'def read_config_file(path):\n    """Read the settings file at path and return its values.\n\n'
        '    More.\n    """\n    return open(path).read()\n'
    )
    pairs = list(chunk_pairs.file_pairs("pkg/config.py", text, "test", len))
    assert [p["query"] for p in pairs] == ["Read the settings file at path and return its values."]
    positive = pairs[0]["positive"]
    assert positive.startswith("pkg/config.py (python) function read_config_file")  # the header knowledge embeds
    assert "return open(path).read()" in positive
    assert "settings file" not in positive


def test_doc_comments_above_a_declaration_ask_for_it_in_other_languages():
    go = (
        "package x\n\n// ParseDuration parses a duration string such as 1h30m.\n"
        "func ParseDuration(s string) int {\n\treturn 0\n}\n"
    )
    rust = (
        "/// Opens the file at the given path for reading.\n#[inline]\n"
        "pub fn open(p: &str) -> File {\n    File::new(p)\n}\n"
    )
    java = (
        "class A {\n  /**\n   * Returns the number of elements in this list.\n   * @return the size\n   */\n"
        "  @Override\n  public int size() {\n    return n;\n  }\n}\n"
    )
    found = {
        name: [(p["query"], p["positive"]) for p in chunk_pairs.file_pairs(name, text, "test", len)]
        for name, text in (("x.go", go), ("lib.rs", rust), ("A.java", java))
    }
    assert found["x.go"][0][0] == "ParseDuration parses a duration string such as 1h30m."
    assert found["lib.rs"][0][0] == "Opens the file at the given path for reading."
    assert ("Returns the number of elements in this list.") in [query for query, _ in found["A.java"]]
    for pairs in found.values():
        assert all("//" not in positive and "/**" not in positive for _, positive in pairs)


def test_tests_and_vendored_code_are_never_mined():
    text = 'def helper_for_tests(x):\n    """Build a fixture object for the tests."""\n    return x\n'
    for path in ("tests/test_x.py", "pkg/tests/helpers.py", "vendor/lib.py", "src/thing_test.go"):
        assert not list(chunk_pairs.file_pairs(path, text, "test", len)), path


def test_a_long_doc_comment_also_gives_prose_that_its_summary_asks_for():
    text = (
        'def walk(graph):\n    """Sum the weights of a graph.\n\n'
        "    Every node is visited once; the weights of the edges met on the way are added up, cycles are skipped, "
        "and a graph with no edge sums to zero in the end.\n\n"
        '    Args:\n        graph: the graph\n    """\n    return 0\n'
    )
    prose = [p for p in chunk_pairs.file_pairs("pkg/walk.py", text, "test", len) if p["kind"] == "doc-prose"]
    assert [p["query"] for p in prose] == ["Sum the weights of a graph."]
    assert prose[0]["positive"].startswith("Every node is visited once;")
    assert "Args" not in prose[0]["positive"]


def test_a_commit_asks_with_its_message_and_answers_with_the_entity_it_changed_most():
    import commit_pairs

    assert commit_pairs.message_of("Bump version to 2.0 (#12)", "") == ""
    assert commit_pairs.message_of("Merge pull request #4 from x/y", "") == ""
    asked = commit_pairs.message_of("Fix crash when the config file is empty (#812)", "Signed-off-by: A <a@b.c>\nMore.")
    assert asked == "Fix crash when the config file is empty\nMore."
    text = "import os\n\n\ndef read(path):\n    return open(path).read()\n\n\ndef write(path, data):\n    pass\n"
    assert "function write" in commit_pairs.changed_entity("pkg/io.py", text, {8, 9}, len).split("\n", 1)[0]
    assert commit_pairs.changed_entity("pkg/io.py", text, {1}, len) == ""  # an import changed: no entity
