"""The training manifest (issue 42) names no evaluation material, and the miner strips the doc comments it asks with."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DO_NOT_TRAIN = ROOT.parent / "shared" / "do-not-train.txt"
sys.path.insert(0, str(ROOT / "training"))

import mine  # noqa: E402 - training/ is no package of knowledge's


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
    for source in manifest["sources"]:
        named = {normal(source["name"]), normal(source["package"].split()[0])}
        assert not named & reserved, source["name"]
        assert source.get("licence")
        assert source.get("version")


def test_a_mined_pair_asks_with_the_doc_comment_and_answers_without_it(tmp_path):
    (tmp_path / "lib.py").write_text(
        'def read_config_file(path):\n    """Read the settings file at path and return its values."""\n'
        "    return open(path).read()\n"
    )
    (tmp_path / "site-packages").mkdir()
    (tmp_path / "site-packages" / "other.py").write_text(
        'def taken_from_elsewhere():\n    """Never mined here."""\n    return 1\n'
    )
    pairs = list(mine.python_pairs(tmp_path, "test"))
    assert [(p["kind"], p["query"]) for p in pairs] == [
        ("docstring", "Read the settings file at path and return its values."),
        ("name", "read config file"),
    ]
    assert all('"""' not in p["positive"] and "return open(path).read()" in p["positive"] for p in pairs)
