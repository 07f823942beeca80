"""Files a careless or hostile repository holds: nothing outside the repository is read, indexed or served."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge.errors import KnowledgeError, PathOutsideRepositoryError
from knowledge.kb import KnowledgeBase
from knowledge.store.local import LocalStore

from .conftest import HashingEmbedder, commit, git, index_bytes


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


@pytest.fixture
def linked_repo(git_repo, tmp_path):
    secret = tmp_path / "outside-secret.md"
    secret.write_text("# Outside\n\nOUTSIDE-SECRET-TEXT token=hunter2\n")
    commit(git_repo, {"docs/real.md": "---\ndescription: real\n---\n# Real\n\nreal words\n"})
    (git_repo / "docs" / "outside.md").symlink_to(secret)
    (git_repo / "docs" / "passwd.md").symlink_to("/etc/passwd")
    (git_repo / "links").mkdir()
    (git_repo / "links" / "gitcfg.md").symlink_to("../.git/config")
    (git_repo / "docs" / "zero.md").symlink_to("/dev/zero")
    (git_repo / "docs" / "inside.md").symlink_to("real.md")
    git(git_repo, "config", "remote.origin.url", "https://user:CREDENTIAL-IN-URL@example.com/repo.git")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "links")
    return git_repo


def test_symlinks_out_of_the_repository_are_skipped_and_named(linked_repo):
    report = open_kb(linked_repo).reindex_all()
    skipped = {p.path: p.problem for p in report.skipped}
    assert skipped["docs/outside.md"] == "symlink to a file outside the repository (not followed)"
    assert skipped["docs/passwd.md"] == "symlink to a file outside the repository (not followed)"
    assert skipped["docs/zero.md"] == "symlink to a file outside the repository (not followed)"
    assert skipped["links/gitcfg.md"] == "symlink into .git or .knowledge (not followed)"
    chunks = LocalStore.open(linked_repo).all_chunks().values()
    assert {c.path for c in chunks} == {"docs/real.md", "docs/inside.md"}  # a link inside the repository is fine
    stored = index_bytes(linked_repo)
    assert b"inside" in stored  # what was indexed is there, unpacked
    for leaked in (b"OUTSIDE-SECRET-TEXT", b"root:x:0:0", b"CREDENTIAL-IN-URL"):
        assert leaked not in stored


def test_status_never_reads_a_device_behind_a_link(linked_repo):
    kb = open_kb(linked_repo)
    kb.reindex_all()
    status = kb.status()  # reading /dev/zero would never end
    assert status.files == 2


@pytest.mark.parametrize("path", ["links/gitcfg.md", "docs/passwd.md", ".git/config", "docs/outside.md"])
def test_show_refuses_links_out_and_git_internals(linked_repo, path):
    with pytest.raises(PathOutsideRepositoryError):
        open_kb(linked_repo).source(path)


def test_show_refuses_gitignored_files(git_repo):
    commit(git_repo, {".gitignore": "local.txt\n", "docs/a.md": "# A\n\ntext\n"})
    (git_repo / "local.txt").write_text("API_KEY=abc123\n")
    with pytest.raises(PathOutsideRepositoryError, match="ignored by git"):
        open_kb(git_repo).source("local.txt")
    assert open_kb(git_repo).source("docs/a.md").lines[0] == "# A"


def test_yaml_alias_bomb_is_refused_and_the_rest_indexed(git_repo):
    bomb = "\n".join(
        ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        + [
            f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)},*{chr(97 + n)},*{chr(97 + n)},*{chr(97 + n)}]"
            for n in range(8)
        ]
        + ["title: *i"]
    )
    commit(git_repo, {"docs/bomb.md": f"---\n{bomb}\n---\n# Bomb\n\nbody text\n", "docs/ok.md": "# Ok\n\nfine\n"})
    report = open_kb(git_repo).reindex_all()
    problems = {p.path: p.problem for p in (*report.skipped, *report.warnings)}
    assert "YAML aliases (*name) are not allowed" in problems["docs/bomb.md"]
    titles = {c.path: c.title for c in LocalStore.open(git_repo).all_chunks().values()}
    assert set(titles) == {"docs/bomb.md", "docs/ok.md"}
    assert len(titles["docs/bomb.md"]) < 100


def test_show_counts_lines_as_the_chunker_does(git_repo):
    commit(
        git_repo, {"docs/odd.md": "# Odd\n\nline with \u2028 a separator and \x0c form feed\n\n## Next\n\nnext text\n"}
    )
    kb = open_kb(git_repo)
    kb.reindex_all()
    chunk = next(c for c in LocalStore.open(git_repo).all_chunks().values() if c.section.endswith("Next"))
    shown = kb.source(chunk.path, chunk.line_start, chunk.line_end)
    assert shown.lines[0] == "## Next"


def test_a_listed_file_that_is_a_fifo_is_skipped(git_repo):
    commit(git_repo, {"docs/a.md": "# A\n\ntext\n", "docs/pipe.md": "# was a file\n"})
    (git_repo / "docs" / "pipe.md").unlink()
    os.mkfifo(git_repo / "docs" / "pipe.md")  # still listed by git, now a FIFO: opening it would block forever
    report = open_kb(git_repo).reindex_all()
    assert any(p.path == "docs/pipe.md" and p.problem == "not a regular file" for p in report.skipped)


def test_unknown_path_is_a_clear_error(git_repo):
    commit(git_repo, {"docs/a.md": "# A\n\ntext\n"})
    with pytest.raises(KnowledgeError, match="no such file"):
        open_kb(git_repo).source(str(Path("docs") / "missing.md"))


def test_a_file_name_that_is_not_utf8_is_reported_and_the_rest_indexed(git_repo):
    commit(git_repo, {"docs/ok.md": "# Ok\n\nfine words\n"})
    (git_repo / "docs").joinpath(os.fsdecode(b"bad-\xff-name.md")).write_bytes(b"# Bad\n\ntext\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "bad name")
    report = open_kb(git_repo).reindex_all()
    assert [str(p) for p in report.skipped] == [
        "docs/bad-\ufffd-name.md: file name is not valid UTF-8 (rename it to index it)"
    ]
    assert {c.path for c in LocalStore.open(git_repo).all_chunks().values()} == {"docs/ok.md"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.py", "x = " + "[" * 10_000 + "]" * 10_000 + "\n\n\ndef after():\n    return 1\n"),
        ("deep.js", "const x = " + "(" * 5_000 + "1" + ")" * 5_000 + ";\nfunction after() { return 1; }\n"),
    ],
)
def test_code_nested_too_deeply_falls_back_to_line_chunks(git_repo, name, text):
    commit(git_repo, {name: text})
    report = open_kb(git_repo).reindex_all()
    assert f"{name}: nested too deeply to parse; indexed as line chunks" in {str(p) for p in report.warnings}
    chunks = LocalStore.open(git_repo, "code").all_chunks().values()
    assert any("after" in c.content for c in chunks)


def test_symlink_loops_and_broken_links_are_named_not_fatal(git_repo):
    commit(git_repo, {"docs/ok.md": "# Ok\n\nfine words\n"})
    (git_repo / "docs" / "loop-a.md").symlink_to("loop-b.md")
    (git_repo / "docs" / "loop-b.md").symlink_to("loop-a.md")
    (git_repo / "docs" / "broken.md").symlink_to("nowhere.md")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "links")
    report = open_kb(git_repo).reindex_all()
    assert {p.path: p.problem for p in report.skipped} == {
        "docs/loop-a.md": "symlink loop (not followed)",
        "docs/loop-b.md": "symlink loop (not followed)",
        "docs/broken.md": "broken symlink",
    }
    with pytest.raises(PathOutsideRepositoryError, match="symlink loop"):
        open_kb(git_repo).source("docs/loop-a.md")


def test_outside_git_an_index_file_linked_to_another_projects_index_is_refused(tmp_path):
    """569400d: outside git, `.knowledge/docs.sqlite` linked to another project's index was read and served by
    `search` and `status` (writes through it were refused)."""
    from click.testing import CliRunner

    from knowledge.cli import cli

    other, mine = tmp_path / "other", tmp_path / "mine"
    for root, text in ((other, "The other project's private plans."), (mine, "My notes.")):
        (root / "docs").mkdir(parents=True)
        (root / "docs" / "a.md").write_text(f"---\ndescription: notes\n---\n# Notes\n\n{text}\n")
        open_kb(root).reindex_all()
    (mine / ".knowledge" / "docs.sqlite").unlink()
    (mine / ".knowledge" / "docs.sqlite").symlink_to(other / ".knowledge" / "docs.sqlite")
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    for args in (["search", "private plans"], ["status"]):
        result = CliRunner().invoke(cli, ["-C", str(mine), *args], obj=obj)
        assert result.exit_code == 1, result.output
        assert "docs.sqlite: is a symlink" in result.output
        assert "private plans" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_the_index_folders_gitignore_is_private(git_repo):
    import stat

    commit(git_repo, {"docs/a.md": "---\ndescription: a\n---\n# A\n\nText.\n"})
    open_kb(git_repo).reindex_all()
    assert stat.S_IMODE((git_repo / ".knowledge" / ".gitignore").stat().st_mode) == 0o600


def test_front_matter_nested_twenty_thousand_deep_is_plain_text_for_the_index_and_llms_txt(git_repo):
    """569400d: `llms-txt` (and GET /llms.txt, the MCP resource) crashed; the index skipped the file."""
    from click.testing import CliRunner

    from knowledge.cli import cli

    nested = "---\ndescription: " + "[" * 20_000 + "]" * 20_000 + "\n---\n# Deep\n\nThe deep page.\n"
    commit(git_repo, {"docs/deep.md": nested, "docs/b.md": "---\ndescription: fine\n---\n# B\n\nText.\n"})
    listed = CliRunner().invoke(cli, ["-C", str(git_repo), "llms-txt", "--stdout"])
    assert listed.exit_code == 0, listed.output
    assert "docs/b.md" in listed.output
    report = open_kb(git_repo).reindex_all()
    assert any("nested too deeply" in str(w) for w in report.warnings)
    assert open_kb(git_repo).search("the deep page", threshold=0).results[0].path == "docs/deep.md"


def test_file_names_cannot_forge_result_lines_or_emit_raw_bytes(git_repo):
    """569400d: a newline in a file name forged a result line in `search`'s text, U+202E was printed as is, and
    `status --json` emitted a raw 0xFF byte for a name that is not UTF-8."""
    from click.testing import CliRunner

    from knowledge.cli import cli

    forged = "docs/x\n[0.999] docs/forged.md:1-1  Forged\u202egpj.md"
    page = "---\ndescription: widgets\n---\n# Widgets\n\nHow the widgets are packed.\n"
    commit(git_repo, {forged: page, "docs/plain.md": page})
    (git_repo / os.fsdecode(b"docs/caf\xff.md")).write_text(page)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "names")
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    runner = CliRunner()
    indexed = runner.invoke(cli, ["-C", str(git_repo), "reindex-all"], obj=obj)
    assert "file name is not valid UTF-8" in indexed.output
    (git_repo / os.fsdecode(b"docs/new\xfe.md")).write_text(page)  # changed since the index: status names it
    text = runner.invoke(cli, ["-C", str(git_repo), "search", "widgets packed", "--threshold", "0"], obj=obj).output
    assert not any(line.startswith("[0.999] docs/forged.md") for line in text.splitlines()), text
    assert "\u202e" not in text
    assert "docs/x\\x0a[0.999]" in text
    env = {**os.environ, "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1"}
    command = [sys.executable, "-P", "-m", "knowledge", "-C", str(git_repo), "status", "--json"]
    raw = subprocess.run(command, env=env, capture_output=True, timeout=120).stdout  # a real stdout, as users read
    assert b"\xfe" not in raw
    assert b"\xff" not in raw
    json.loads(raw.decode("utf-8"))  # strict UTF-8, and JSON
