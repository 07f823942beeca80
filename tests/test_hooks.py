"""Real hooks firing on real git commands, with the real MiniLM model in the background process."""

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge import hooks
from knowledge.fs import is_locked
from knowledge.kb import KnowledgeBase
from knowledge.store import lock_path
from knowledge.store.local import LocalStore

from .conftest import commit, git, model_home, write

ROOT = Path(__file__).parent.parent
DOC = "---\ndescription: {d}\n---\n# {t}\n\n{body}\n"


def doc(title, body="some text"):
    return DOC.format(d=f"about {title}", t=title, body=body)


@pytest.fixture
def hooked_repo(git_repo, monkeypatch):
    home = model_home()
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    commit(git_repo, {"docs/a.md": doc("Alpha"), "README.md": "# Readme\n"}, "initial")
    hooks.install(git_repo)
    return git_repo


def log_lines(root):
    log = root / hooks.LOG
    return log.read_text().splitlines() if log.exists() else []


def wait_for_runs(root, count, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log_lines(root)
        if len(lines) >= count and not is_locked(lock_path(root)):
            time.sleep(0.3)  # a run may start right after another released the lock
            if not is_locked(lock_path(root)) and len(log_lines(root)) == len(lines):
                return lines
        time.sleep(0.1)
    raise AssertionError(f"expected {count} hook runs in {root}, log: {log_lines(root)}")


def snapshot(root):
    store = LocalStore.open(root)
    return sorted((c.id, c.content_hash, c.line_start, c.line_end) for c in store.all_chunks().values())


def assert_equals_clean_rebuild(root):
    incremental = snapshot(root)
    KnowledgeBase.open(root).reindex_all()
    assert incremental == snapshot(root)
    return incremental


def test_hook_scripts_match_the_template():
    assert (ROOT / "hooks" / "knowledge-hook").read_text() == hooks.TEMPLATE


def test_install_chains_existing_hook_and_uninstall_restores_it(git_repo):
    hook_dir = git_repo / ".git" / "hooks"
    legacy = hook_dir / "post-commit"
    legacy.write_text('#!/bin/sh\necho legacy-ran >> "$(git rev-parse --show-toplevel)/legacy.txt"\n')
    legacy.chmod(0o755)
    states = {s.name: s for s in hooks.install(git_repo)}
    assert all(s.state == "installed" for s in states.values())
    assert states["post-commit"].chained
    assert os.stat(hook_dir / "post-commit").st_mode & stat.S_IXUSR
    commit(git_repo, {"x.txt": "x"})
    assert (git_repo / "legacy.txt").read_text() == "legacy-ran\n"
    hooks.install(git_repo)  # idempotent: ours is replaced, the legacy hook stays
    assert (hook_dir / "post-commit.legacy").exists()
    states = {s.name: s for s in hooks.uninstall(git_repo)}
    assert states["post-commit"].state == "foreign"
    assert states["post-merge"].state == "missing"
    assert "legacy-ran" in (hook_dir / "post-commit").read_text()


def test_core_hooks_path_is_refused_clearly(git_repo):
    git(git_repo, "config", "core.hooksPath", ".husky")
    with pytest.raises(Exception, match=r"core\.hooksPath is set to '\.husky'"):
        hooks.install(git_repo)


@pytest.mark.model
def test_every_git_event_keeps_the_index_equal_to_a_clean_rebuild(hooked_repo):
    repo = hooked_repo
    wait_for_runs(repo, 0)
    commit(repo, {"docs/b.md": doc("Beta")}, "add b")
    lines = wait_for_runs(repo, 1)
    assert "post-commit: indexed" in lines[-1]
    assert {c[0] for c in assert_equals_clean_rebuild(repo)} >= {"docs/a.md#alpha", "docs/b.md#beta"}

    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"docs/c.md": doc("Gamma")}, "add c")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "--", "README.md")  # a file checkout: no run
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    lines = wait_for_runs(repo, 5)  # checkout -b, commit, checkout main, merge
    assert any("post-merge" in line for line in lines)
    assert any("post-checkout" in line for line in lines)
    assert "docs/c.md#gamma" in {c[0] for c in assert_equals_clean_rebuild(repo)}

    git(repo, "mv", "docs/b.md", "docs/renamed.md")
    git(repo, "rm", "-q", "docs/a.md")
    git(repo, "commit", "-q", "-m", "move and remove")
    lines = wait_for_runs(repo, 6)
    assert "removed" in lines[-1]
    ids = {c[0] for c in assert_equals_clean_rebuild(repo)}
    assert "docs/renamed.md#beta" in ids
    assert not {"docs/a.md#alpha", "docs/b.md#beta"} & ids

    write(repo, {"docs/renamed.md": doc("Beta", "amended text")})
    git(repo, "commit", "-q", "-a", "--amend", "-m", "amended")
    wait_for_runs(repo, 8)  # post-commit and post-rewrite
    assert_equals_clean_rebuild(repo)


@pytest.mark.model
def test_missed_hook_heals_on_next_run(hooked_repo):
    repo = hooked_repo
    commit(repo, {"docs/b.md": doc("Beta")}, "b")
    wait_for_runs(repo, 1)
    write(repo, {"docs/missed.md": doc("Missed")})
    git(repo, "add", "-A")
    git(repo, "-c", "core.hooksPath=/nonexistent", "commit", "-q", "--no-verify", "-m", "no hooks ran")
    assert len(log_lines(repo)) == 1
    commit(repo, {"docs/next.md": doc("Next")}, "normal")
    wait_for_runs(repo, 2)
    ids = {c[0] for c in assert_equals_clean_rebuild(repo)}
    assert {"docs/missed.md#missed", "docs/next.md#next"} <= ids


@pytest.mark.model
def test_rebase_runs_one_reindex_not_one_per_commit(hooked_repo):
    repo = hooked_repo
    git(repo, "-c", "core.hooksPath=/nonexistent", "checkout", "-q", "-b", "topic")
    for i in range(6):
        write(repo, {f"docs/t{i}.md": doc(f"Topic {i}")})
        git(repo, "add", "-A")
        git(repo, "-c", "core.hooksPath=/nonexistent", "commit", "-q", "-m", f"t{i}")
    git(repo, "-c", "core.hooksPath=/nonexistent", "checkout", "-q", "main")
    write(repo, {"docs/main.md": doc("Main")})
    git(repo, "add", "-A")
    git(repo, "-c", "core.hooksPath=/nonexistent", "commit", "-q", "-m", "main moves")
    git(repo, "-c", "core.hooksPath=/nonexistent", "checkout", "-q", "topic")
    assert log_lines(repo) == []
    env = {
        **os.environ,
        "GIT_SEQUENCE_EDITOR": "sed -i -e '2s/^pick/reword/' -e '3s/^pick/squash/'",
        "GIT_EDITOR": "true",
    }
    subprocess.run(["git", "rebase", "-q", "-i", "main"], cwd=repo, env=env, check=True, capture_output=True)
    lines = wait_for_runs(repo, 1)
    time.sleep(1)
    lines = log_lines(repo)
    assert len(lines) == 1, lines
    assert "post-rewrite" in lines[0]
    ids = {c[0] for c in assert_equals_clean_rebuild(repo)}
    assert {"docs/main.md#main", "docs/t5.md#topic-5"} <= ids


@pytest.mark.model
def test_worktree_gets_hooks_and_its_own_index(hooked_repo, tmp_path):
    repo = hooked_repo
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "wt")
    wait_for_runs(worktree, 1)  # post-checkout in the new worktree
    commit(worktree, {"docs/w.md": doc("Worktree")}, "in worktree")
    wait_for_runs(worktree, 2)
    assert "docs/w.md#worktree" in {c[0] for c in assert_equals_clean_rebuild(worktree)}
    assert log_lines(repo) == []


@pytest.mark.model
def test_two_quick_commits_leave_one_consistent_index(hooked_repo):
    repo = hooked_repo
    commit(repo, {"docs/one.md": doc("One")}, "one")
    commit(repo, {"docs/two.md": doc("Two")}, "two")
    wait_for_runs(repo, 2)
    ids = {c[0] for c in assert_equals_clean_rebuild(repo)}
    assert {"docs/one.md#one", "docs/two.md#two"} <= ids


def test_commit_succeeds_whatever_state_knowledge_is_in(git_repo, monkeypatch, tmp_path):
    commit(git_repo, {"docs/a.md": doc("Alpha")}, "initial")
    hooks.install(git_repo, python=str(tmp_path / "no-such-python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no knowledge on PATH either
    (git_repo / ".knowledge").mkdir(exist_ok=True)
    (git_repo / ".knowledge" / ".gitignore").write_text("*\n")  # as knowledge makes it: never committed
    (git_repo / ".knowledge" / "docs.meta.json").write_text("corrupt")
    started = time.monotonic()
    commit(git_repo, {"docs/b.md": doc("Beta")}, "still commits")
    assert time.monotonic() - started < 5
    assert git(git_repo, "log", "-1", "--format=%s").strip() == "still commits"
    deadline = time.monotonic() + 10
    while not log_lines(git_repo) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "nothing indexed: knowledge is not installed" in log_lines(git_repo)[0]
    assert git(git_repo, "status", "--porcelain") == ""  # never leaves untracked or modified files


@pytest.mark.model
def test_bad_model_is_logged_and_commit_succeeds(hooked_repo, monkeypatch):
    monkeypatch.setenv("KNOWLEDGE_MODEL", "no-such-model")
    commit(hooked_repo, {"docs/b.md": doc("Beta")}, "b")
    lines = wait_for_runs(hooked_repo, 1)
    assert "nothing indexed: unknown model 'no-such-model'" in lines[0]
    assert git(hooked_repo, "status", "--porcelain") == ""


def test_other_repositories_run_the_lint_llms_txt_and_drift_hooks_through_pre_commit(tmp_path):
    """`pre-commit try-repo` builds the hooks' own environment from this repository, as another project's
    .pre-commit-config.yaml would, and runs them on a scratch repository."""
    project = Path(__file__).parent.parent
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    git(scratch, "init", "-q")
    write(scratch, {"docs/a.md": "---\ndescription: a page\n---\n# Page\n\ntext\n", "docs/b.md": "# Bare\n\nbare\n"})
    git(scratch, "add", "-A")
    git(scratch, "commit", "-qm", "docs")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def hook(name, stage="pre-commit"):
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "try-repo", str(project), name, "--all-files", "--hook-stage", stage],
            cwd=scratch, env=env, capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip

    lint = hook("knowledge-lint")
    assert lint.returncode == 1
    assert "docs/b.md: no `description` in front matter" in lint.stdout
    stale = hook("knowledge-llms-txt")
    assert stale.returncode == 1
    assert "llms.txt: out of date with the docs' front matter; run `knowledge llms-txt`" in stale.stdout
    subprocess.run([sys.executable, "-m", "knowledge", "llms-txt"], cwd=scratch, check=True, capture_output=True)
    git(scratch, "add", "-A")
    git(scratch, "commit", "-qm", "llms.txt")
    assert hook("knowledge-llms-txt").returncode == 0
    # drift needs no index and no model in the hook's own environment: it reads the files and the history
    write(scratch, {"docs/c.md": "---\ndescription: c\n---\n# C\n\nSee [the parser](../src/parser.py).\n",
                    "src/parser.py": "def parse_config(p):\n    return p\n"})  # fmt: skip
    git(scratch, "add", "-A")
    git(scratch, "commit", "-qm", "parser")
    assert hook("knowledge-drift", "pre-push").returncode == 0
    git(scratch, "rm", "-q", "src/parser.py")
    git(scratch, "commit", "-qm", "parser gone")
    drift = hook("knowledge-drift", "pre-push")
    assert drift.returncode == 1
    assert "src/parser.py was deleted" in drift.stdout
    assert not (scratch / ".knowledge").exists()
