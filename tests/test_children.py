"""A cloned repository never runs its own code through knowledge: every child interpreter knowledge starts (the fill,
the daemon, the git hook, pip for `model install`, the agents' `python -m knowledge mcp` fallback) runs with the
repository as its working folder, and a `knowledge/` or `pip/` package planted there must not be imported."""

import os
import subprocess
import sys
import time

import pytest

from knowledge import agent_config, hooks
from knowledge.api.request import ReindexRequest
from knowledge.child import knowledge_argv
from knowledge.embedding import fetch
from knowledge.fs import is_locked
from knowledge.kb import KnowledgeBase
from knowledge.server.backend import LocalBackend
from knowledge.store import embed_lock_path, lock_path

from .conftest import commit, git, model_home

DOC = "---\ndescription: Notes.\n---\n# Notes\n\nHow the widgets are packed.\n"


def plant(root, marker, package="knowledge"):
    """A package that records its import in `marker` and then stops the interpreter."""
    body = f"open({str(marker)!r}, 'a').write('ran\\n')\nraise SystemExit(0)\n"
    (root / package).mkdir(exist_ok=True)
    (root / package / "__init__.py").write_text(body)
    (root / package / "__main__.py").write_text(body)


@pytest.fixture
def hostile(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("KNOWLEDGE_HOME", str(model_home()))  # the built MiniLM: the children start at once
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    marker = tmp_path / "ran-the-repository's-code"
    commit(git_repo, {"docs/notes.md": DOC}, "initial")
    plant(git_repo, marker)
    plant(git_repo, marker, "pip")
    commit(git_repo, {}, "planted packages")
    return git_repo, marker


def wait_for(condition, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def fill_finished(root):
    log = root / ".knowledge" / "logs" / "embed.log"
    return log.exists() and log.stat().st_size > 0 and not is_locked(embed_lock_path(root))


def test_the_background_fill_imports_the_installed_knowledge(hostile, monkeypatch):
    root, marker = hostile
    monkeypatch.chdir(root)
    kb = KnowledgeBase.open(root)
    kb.reindex_all()
    assert kb.embed_in_background()
    wait_for(lambda: fill_finished(root), "the fill's child")
    assert not marker.exists()
    assert "Traceback" not in (root / ".knowledge" / "logs" / "embed.log").read_text()


def test_the_mcp_reindex_tool_starts_the_fill_without_the_repository_on_its_path(hostile, monkeypatch):
    root, marker = hostile
    monkeypatch.chdir(root)
    answer = LocalBackend(KnowledgeBase.open(root)).call("reindex", ReindexRequest(full=True))
    assert answer["chunks_total"] > 0
    if answer["filling"]:  # a server with its model loaded embeds inline; else the detached fill, as the CLI's
        wait_for(lambda: fill_finished(root), "the fill started by the reindex tool")
    assert not marker.exists()


def test_the_daemon_starts_from_the_installed_knowledge(hostile):
    root, marker = hostile
    env = {**os.environ, "KNOWLEDGE_FILL": "0"}

    def knowledge(*args):
        # the user's own `python -m knowledge` from inside the checkout would import the checkout's package: the
        # console script is what users run, and the child knowledge starts must be the installed one
        command = [os.path.join(os.path.dirname(sys.executable), "knowledge"), *args]
        return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)

    assert knowledge("reindex-all", "--quiet").returncode == 0
    started = knowledge("daemon", "start", "--wait", "60")
    try:
        assert started.returncode == 0, started.stderr
        assert "daemon ready" in started.stderr
    finally:
        knowledge("daemon", "stop")
    assert not marker.exists()


def test_the_git_hook_runs_the_installed_knowledge(hostile):
    root, marker = hostile
    hooks.install(root)
    commit(root, {"docs/more.md": DOC.replace("Notes", "More")}, "a commit the hook indexes")
    log = root / hooks.LOG
    wait_for(lambda: log.exists() and log.stat().st_size > 0, "the hook's run")
    wait_for(lambda: not is_locked(lock_path(root)), "the hook's run to finish")
    assert not marker.exists()
    assert "nothing indexed" not in log.read_text()


def test_model_install_runs_this_environments_pip_not_the_repositorys(hostile, monkeypatch):
    root, marker = hostile
    (root / "knowledge.toml").write_text('model = "all-MiniLM-L6-v2"\n')
    monkeypatch.chdir(root)
    done = fetch._run([*fetch.installer_command(["--version"])[:4], "--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("pip ")
    assert not marker.exists()


def test_the_agents_fallback_command_never_imports_the_checkout(hostile, tmp_path):
    root, marker = hostile
    command = agent_config.server_command(None, str(tmp_path / "no-venv" / "python"))
    assert command[1] == "-P"
    done = subprocess.run(
        [sys.executable, *command[1:-1], "--version"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_every_child_argv_is_safe_path():
    assert knowledge_argv(git_root := os.getcwd(), "status")[1:4] == ["-P", "-m", "knowledge"]
    assert git_root in knowledge_argv(git_root, "status")
    assert hooks.render_hook("/usr/bin/python3").count("-P ") == 2


def test_a_planted_package_would_run_without_safe_path(hostile):
    """The trial itself: without -P the same command does import the checkout's package (so the tests above can
    fail)."""
    root, marker = hostile
    subprocess.run([sys.executable, "-m", "knowledge", "--version"], cwd=root, capture_output=True, timeout=60)
    assert marker.exists()
    git(root, "status")


def test_a_hook_written_before_safe_path_is_said_outdated_and_replaced(git_repo):
    folder = git_repo / ".git" / "hooks"
    hooks.install(git_repo)
    old = hooks.render_hook().replace(" -P -m knowledge", " -m knowledge").replace(" -P -c ", " -c ")
    (folder / "post-commit").write_text(old)
    states = {s.name: s.state for s in hooks.status(git_repo)}
    assert states["post-commit"] == "outdated"
    assert states["post-merge"] == "installed"
    hooks.install(git_repo)
    assert {s.state for s in hooks.status(git_repo)} == {"installed"}
