"""`search --exact/--substring/--regex` find every line `grep -rn` finds: attribute, dotted and string uses included."""

import json
import subprocess
import time

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.kb import KnowledgeBase

from .conftest import HashingEmbedder, commit

FILES = {
    "src/kb.py": (
        "class KnowledgeBase:\n"
        "    def reindex_changes(self):\n"
        "        return self.reindex_changes_inner()\n"
        "\n"
        "    def again(self):\n"
        "        return self.reindex_changes()\n"
    ),
    "src/hooks.py": (
        "from kb import KnowledgeBase\n"
        "\n"
        "\n"
        "def run(kb):\n"
        "    kb.reindex_changes()\n"
        "    self_kb = kb\n"
        "    self_kb.kb.reindex_changes(paths=None)\n"
        "    name = 'reindex_changes'\n"
        '    log("reindex_changes done")  # reindex_changes again on one line\n'
        '    return getattr(kb, "reindex_changes")\n'
    ),
    "src/long.py": "VALUE = [" + ", ".join(str(i) for i in range(3000)) + "]  # reindex_changes after a long line\n",
    "docs/guide.md": "---\ndescription: the guide\n---\n# Guide\n\nCall `kb.reindex_changes()` after a commit.\n",
}


@pytest.fixture
def repo(git_repo):
    commit(git_repo, FILES)
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    return git_repo


class NoEmbedding(HashingEmbedder):
    def embed_query(self, text):
        raise AssertionError("grep modes never embed the query")


def knowledge_lines(root, *args):
    result = CliRunner().invoke(
        cli,
        ["-C", str(root), "search", *args, "-k", "100", "--budget", "50000"],
        obj={"embedder_factory": lambda s: NoEmbedding()},
    )
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def grep_lines(root, *args):
    found = subprocess.run(
        ["git", "grep", "-n", "--no-color", *args], cwd=root, capture_output=True, text=True, check=False
    ).stdout.splitlines()
    return [line.replace(":", ": ", 2).replace(": ", ":", 1) for line in found]


@pytest.mark.parametrize(
    ("ours", "grep"),
    [
        (["reindex_changes", "--exact"], ["-w", "reindex_changes"]),
        (["kb.reindex_changes", "--exact"], ["-w", "-F", "kb.reindex_changes"]),
        (["reindex_change", "--substring"], ["-F", "reindex_change"]),
        ([r"self(_kb)?\.[\w.]+\(", "--regex"], ["-E", r"self(_kb)?\.[[:alnum:]_.]+\("]),
    ],
)
def test_every_line_grep_finds_and_no_other(repo, ours, grep):
    expected = grep_lines(repo, *grep)
    assert len(expected) >= 3
    assert knowledge_lines(repo, *ours) == expected


def test_the_word_mode_counts_equal_grep_rnw_on_attribute_and_string_uses(repo):
    expected = subprocess.run(
        ["grep", "-rnw", "--include=*.py", "--include=*.md", "reindex_changes", "src", "docs"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    ours = knowledge_lines(repo, "reindex_changes", "--exact", "--json")
    data = json.loads("\n".join(ours))
    assert sorted(f"{r['path']}:{r['match_line']}" for r in data["results"]) == sorted(
        line.split(":", 2)[0] + ":" + line.split(":", 2)[1] for line in expected
    )
    assert len(data["results"]) == 9  # attribute, self., keyword call, strings, a comment, a 20 kB line, the doc


def test_context_lines_print_as_grep_c_does(repo):
    lines = knowledge_lines(repo, "self_kb", "--exact", "-C", "1", "--kind", "code")
    assert lines == [
        "src/hooks.py-5- " + "    kb.reindex_changes()",
        "src/hooks.py:6: " + "    self_kb = kb",
        "src/hooks.py:7: " + "    self_kb.kb.reindex_changes(paths=None)",
        "src/hooks.py-8- " + "    name = 'reindex_changes'",
    ]


def test_a_regex_that_backtracks_forever_in_python_answers_in_linear_time(repo):
    """RE2 runs every user regex in time linear in the text: the patterns that hang a backtracking engine answer."""
    (repo / "src" / "ones.py").write_text("x = '" + "1" * 40 + "'\n")
    for pattern in ("(a+)+$", "(.*1){14}x", "\\d*\\d*\\d*\\d*\\d*\\d*\\d*\\d*x"):
        started = time.monotonic()
        result = CliRunner().invoke(
            cli, ["-C", str(repo), "search", pattern, "--regex"], obj={"embedder_factory": lambda s: NoEmbedding()}
        )
        assert result.exit_code == 0, result.output
        assert time.monotonic() - started < 10
    bad = CliRunner().invoke(
        cli, ["-C", str(repo), "search", "(unclosed", "--regex"], obj={"embedder_factory": lambda s: NoEmbedding()}
    )
    assert bad.exit_code == 1
    assert "'(unclosed' is not a regular expression RE2 runs (missing )" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
