"""What a user waits for: commits that change nothing indexed load no model; the daemon answers like the cold path."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.server.daemon_client import request, socket_path

from .conftest import commit, git, model_home

pytestmark = pytest.mark.model
FIXTURES = Path(__file__).parent / "fixtures" / "docs"
PROBE = """
import sys
from knowledge.cli import main
try:
    main()
except SystemExit:
    pass
loaded = sorted(m for m in ("onnxruntime", "usearch", "tokenizers", "numpy") if m in sys.modules)
# VmHWM is this process's own peak (ru_maxrss would carry the pytest parent's across exec).
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM"))
print("LOADED", ",".join(loaded), peak, file=sys.stderr)
"""

LAUNCHER_PROBE = """
import sys
from knowledge.launcher import main
main()
print("CLICK", "click" in sys.modules, file=sys.stderr)
"""


@pytest.fixture
def env(monkeypatch, tmp_path):
    home = model_home()
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    return {**os.environ, "KNOWLEDGE_HOME": str(home), "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2"}


def knowledge(root, env, *args, probe=False):
    command = [sys.executable, "-c", PROBE, *args] if probe else [sys.executable, "-m", "knowledge", *args]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_commit_touching_no_indexed_file_loads_no_model_and_writes_no_chunks(git_repo, env):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    assert knowledge(git_repo, env, "reindex-all", "--wait", "--quiet").returncode == 0
    written = [git_repo / ".knowledge" / name for name in ("docs.usearch", "docs.meta.json", "code.meta.json")]
    before = json.loads(knowledge(git_repo, env, "status", "--json").stdout)
    commit(git_repo, {"notes.bin": b"\0binary, not indexed"})
    stamps = [path.stat().st_mtime_ns for path in written]
    result = knowledge(git_repo, env, "reindex-from-changes", probe=True)
    assert result.returncode == 0, result.stderr
    line = next(row for row in result.stderr.splitlines() if row.startswith("LOADED"))
    _, loaded, peak_kb = line.split(" ")
    assert not {"onnxruntime", "tokenizers", "usearch"} & set(loaded.split(","))
    assert int(peak_kb) < 150 * 1024  # KiB on Linux
    after = json.loads(knowledge(git_repo, env, "status", "--json").stdout)
    assert after["commit"] == git(git_repo, "rev-parse", "HEAD").strip() != before["commit"]
    assert after["chunks"] == before["chunks"]
    assert [path.stat().st_mtime_ns for path in written] == stamps


def test_daemon_answers_like_the_cold_path_on_an_owner_only_socket(git_repo, env):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    assert knowledge(git_repo, env, "reindex-all", "--wait", "--quiet").returncode == 0
    cold = knowledge(git_repo, {**env, "KNOWLEDGE_NO_DAEMON": "1"}, "search", "token budget", "--json")
    started = knowledge(git_repo, env, "daemon", "start", "--idle-timeout", "60")
    assert started.returncode == 0, started.stderr
    try:
        where = socket_path(git_repo / ".knowledge")
        assert stat.S_IMODE(where.stat().st_mode) == 0o600
        assert request(git_repo / ".knowledge", "GET", "/v1/status")["chunks"] > 0
        begin = time.monotonic()
        warm = knowledge(git_repo, env, "search", "token budget", "--json")
        assert time.monotonic() - begin < 5
        assert json.loads(warm.stdout) == json.loads(cold.stdout)
        text_cold = knowledge(git_repo, {**env, "KNOWLEDGE_NO_DAEMON": "1"}, "search", "token budget")
        assert knowledge(git_repo, env, "search", "token budget").stdout == text_cold.stdout
        cold_env = {**env, "KNOWLEDGE_NO_DAEMON": "1"}
        for options in (["-k", "2", "--kind", "docs"], ["--files"], ["--budget", "80", "--metadata-only"]):
            asked = ("search", "token budget", *options)
            assert knowledge(git_repo, env, *asked).stdout == knowledge(git_repo, cold_env, *asked).stdout
        launched = subprocess.run(
            [sys.executable, "-c", LAUNCHER_PROBE, "search", "token budget", "-k", "2"],
            cwd=git_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert launched.stdout == knowledge(git_repo, cold_env, "search", "token budget", "-k", "2").stdout
        assert "CLICK False" in launched.stderr  # answered by the daemon before click was imported
        assert (
            knowledge(git_repo, env, "show", "docs/search.md:1-3").stdout
            == knowledge(git_repo, {**env, "KNOWLEDGE_NO_DAEMON": "1"}, "show", "docs/search.md:1-3").stdout
        )
    finally:
        knowledge(git_repo, env, "daemon", "stop")
    deadline = time.monotonic() + 10
    while where.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not where.exists()
    assert knowledge(git_repo, env, "daemon", "status").returncode == 1
