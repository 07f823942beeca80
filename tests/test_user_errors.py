"""Situations a user meets every day end in one line they can act on, never in "internal error"."""

import json
import os
import stat

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.errors import IndexIncompatibleError
from knowledge.kb import KnowledgeBase

from .conftest import HashingEmbedder, commit, git

DOC = "---\ndescription: d\n---\n# Title\n\n## Install\n\nrun the installer twice\n\n## Usage\n\nuse it daily\n"


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


def run(root, *args):
    return CliRunner().invoke(cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()})


@pytest.fixture
def indexed(git_repo):
    commit(git_repo, {"docs/a.md": DOC}, "one")
    commit(git_repo, {"docs/b.md": "# B\n\nsecond file\n"}, "two")
    open_kb(git_repo).reindex_all()
    return git_repo


def test_reset_outside_hooks_shows_not_at_head(indexed):
    git(indexed, "reset", "-q", "--hard", "HEAD~1")  # no hook fires: the index still holds b.md
    status = open_kb(indexed).status()
    assert status.commits_behind is None
    assert status.commit_relation.startswith("not at HEAD")
    assert "docs/b.md" in status.changed_files
    assert "not at HEAD: history moved" in run(indexed, "status").stdout


def test_behind_counts_commits_when_head_descends(indexed):
    commit(indexed, {"docs/c.md": "# C\n\nthird\n"}, "three")
    status = open_kb(indexed).status()
    assert (status.commits_behind, status.commit_relation) == (1, "1 commit(s) behind HEAD")


def test_stale_results_are_marked_in_text_and_show_gives_current_lines(indexed):
    (indexed / "docs/a.md").write_text("---\ndescription: d\n---\n# Title\n\nshort now\n")
    found = run(indexed, "search", "installer twice", "--threshold", "-1")
    assert found.exit_code == 0, found.output
    assert "docs/a.md" in found.stdout
    line = next(line for line in found.stdout.splitlines() if "docs/a.md" in line and "Install" in line)
    assert line.endswith("[stale: file changed since indexing]")
    hits = json.loads(run(indexed, "search", "installer twice", "--threshold", "-1", "--json").stdout)["results"]
    hit = next(h for h in hits if h["path"] == "docs/a.md" and h["section"].endswith("Install"))
    assert hit["stale"] is True
    shown = run(indexed, "show", "--id", hit["id"])
    assert shown.exit_code == 0, shown.output
    assert "changed since it was indexed" in shown.stderr
    assert shown.stdout.splitlines()[-1].endswith("short now")


def test_show_of_a_deleted_file_says_so(indexed):
    (indexed / "docs/b.md").unlink()
    hits = json.loads(run(indexed, "search", "second file", "--threshold", "-1", "--json").stdout)["results"]
    shown = run(indexed, "show", "--id", next(h["id"] for h in hits if h["path"] == "docs/b.md"))
    assert shown.exit_code == 1
    assert "docs/b.md: deleted since indexing" in shown.stderr


def test_git_failure_is_one_line_not_internal(indexed):
    with (indexed / ".git" / "config").open("a") as config:
        config.write("[core\nbroken")  # every git command now fails
    result = run(indexed, "status")
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output
    assert "`git rev-parse --show-toplevel` failed" in result.stderr
    assert "bad config line" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_read_only_index_folder_is_one_line(indexed):
    folder = indexed / ".knowledge"
    modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
    for path in modes:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR if path.is_dir() else stat.S_IRUSR)
    try:
        (indexed / "docs/c.md").write_text("# C\n\nnew\n")
        result = run(indexed, "reindex-from-changes", "--worktree")
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert result.exit_code == 1, result.output
    assert "cannot write" in result.stderr
    assert "internal error" not in result.stderr


def test_read_only_errors_are_named_for_a_user():
    import errno
    import sqlite3

    from knowledge.cli.guard import storage_problem

    assert storage_problem(OSError(errno.ENOSPC, "No space left on device", "/r/.knowledge/docs.sqlite")) == (
        "cannot write /r/.knowledge/docs.sqlite: No space left on device"
    )
    assert "read-only" in storage_problem(sqlite3.OperationalError("attempt to write a readonly database"))
    assert storage_problem(ValueError("x")) is None


def test_model_mismatch_is_said_before_any_model_is_built(indexed, isolated_env):
    (indexed / "knowledge.toml").write_text('model = "all-MiniLM-L6-v2"\nmodel_variant = "int8"\n')
    kb = KnowledgeBase.open(indexed)  # the real model path: nothing injected, nothing built yet
    with pytest.raises(IndexIncompatibleError) as caught:
        kb.search("installer")
    message = str(caught.value)
    assert "built with hashing-test" in message
    assert "ask for all-MiniLM-L6-v2 int8" in message
    assert "knowledge reindex-all" in message
    assert not (isolated_env / "models").exists() or not any((isolated_env / "models").iterdir())
