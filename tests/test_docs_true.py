"""The docs say what the code does: every JSON field documented, example thresholds the calibrated ones, every
command line in the docs one the CLI accepts, the status example in the real format."""

import json
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.embedding.models import DEFAULT_MODEL, MODELS
from knowledge.kb import KnowledgeBase
from knowledge.render import status_to_text

from .conftest import HashingEmbedder, commit

ROOT = Path(__file__).parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_BLOCK = re.compile(r"```(?:bash|text|sh|console)?\n(.*?)```", re.DOTALL)


@pytest.fixture
def answered(git_repo):
    commit(
        git_repo,
        {
            "docs/a.md": "---\ndescription: about hooks\n---\n# Hooks\n\n## Install\n\nrun hooks install\n",
            "src/app.py": "def helper():\n    return 1\n\n\ndef install_hooks():\n    return helper()\n",
        },
    )
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    args = ["-C", str(git_repo), "search", "install hooks", "--json", "--explain", "--expand", "--kind", "all"]
    result = CliRunner().invoke(cli, args, obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_search_field_is_in_the_example_and_the_table(answered):
    doc = (ROOT / "docs" / "json-output.md").read_text()
    example = json.loads(CODE_BLOCK.search(doc.replace("```json", "```")).group(1))
    table = "\n".join(line for line in doc.splitlines() if line.startswith("| `"))
    assert set(answered) == set(example), "top-level keys of the example"
    # format 2 leaves unset optional keys out: the example shows a plain answer's, this one asked --explain too
    assert set(example["results"][0]) <= set(answered["results"][0]), "result keys of the example"
    for key in answered:
        assert f"`{key}`" in table, f"{key} has no row in json-output.md"
    for key in answered["results"][0]:
        assert f"`results[].{key}`" in table or re.search(rf"\| `results\[\]\.\w+`(, `\w+`)*, `{key}`", table), key


def test_examples_show_the_calibrated_thresholds():
    spec = MODELS[DEFAULT_MODEL]
    doc = (ROOT / "docs" / "json-output.md").read_text()
    assert f'"threshold": {spec.threshold},' in doc
    assert f'"full_threshold": {spec.full_threshold},' in doc
    for path in DOCS:
        for found in re.findall(r"thresholds: similarity ([0-9.]+), full content ([0-9.]+)", path.read_text()):
            assert found == (str(spec.threshold), str(spec.full_threshold)), path.name


def test_the_status_example_has_the_real_labels(answered, git_repo):
    real = status_to_text(KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).status())
    label = re.compile(r"^([a-z]+):\s{2,}", re.MULTILINE)
    usage = (ROOT / "docs" / "usage.md").read_text()
    example = usage[usage.index("$ knowledge status\n") :]
    example = example[: example.index("```")]
    documented = set(label.findall(example))
    assert set(label.findall(real)) <= documented, "a status line the docs do not show"
    assert documented <= set(label.findall(real)) | {"problems", "secrets", "reindex"}


def _command_lines() -> list[tuple[str, str]]:
    lines = []
    for path in DOCS:
        for block in CODE_BLOCK.findall(path.read_text()):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                for part in re.split(r"&&|\|", line):
                    part = part.split("  #")[0].strip()
                    if part.startswith("knowledge ") and "…" not in part and "..." not in part:
                        lines.append((path.name, part))
    return lines


@pytest.mark.parametrize(("doc", "line"), _command_lines())
def test_every_command_in_the_docs_is_one_the_cli_accepts(doc, line):
    words = shlex.split(line)[1:]
    command: click.Command = cli
    options: set[str] = set()
    while isinstance(command, click.Group):
        options |= {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        while words and words[0].startswith("-"):  # group options such as -C PATH
            taken = words.pop(0)
            if taken in {"-C", "--model", "--variant"} and words:
                words.pop(0)
        assert words, f"{doc}: `{line}` names no command"
        name = words.pop(0)
        assert name in command.commands, f"{doc}: `{line}`: no command {name!r}"
        command = command.commands[name]
    options |= {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    for word in words:
        if word.startswith("-") and word != "-":  # a lone `-` is the argument that reads stdin
            assert word.split("=")[0] in options, f"{doc}: `{line}`: {command.name} has no option {word}"


def test_server_doc_lists_every_kind():
    row = next(line for line in (ROOT / "docs" / "server.md").read_text().splitlines() if "POST /v1/search" in line)
    assert "`docs`/`code`/`all`" in row


def test_every_setting_has_a_row_in_configuration_md():
    from knowledge.config import Settings

    doc = (ROOT / "docs" / "configuration.md").read_text()
    for name in Settings.__dataclass_fields__:
        if name != "home":  # KNOWLEDGE_HOME has its own row
            assert f"| `{name}`" in doc, f"configuration.md has no row for {name}"


def test_server_doc_has_a_row_for_every_mcp_tool():
    import asyncio

    from knowledge.server.mcp import build_server

    tools = [tool.name for tool in asyncio.run(build_server(object()).list_tools())]  # the server as clients see it
    assert {"search", "docs_for", "reindex"} <= set(tools)
    doc = (ROOT / "docs" / "server.md").read_text()
    for name in tools:
        assert f"| `{name}(" in doc, f"docs/server.md's MCP table has no row for {name}"


def test_the_committed_llms_txt_is_current():
    expected = KnowledgeBase.open(ROOT, embedder_factory=lambda s: HashingEmbedder()).llms_txt()["llms.txt"]
    assert (ROOT / "llms.txt").read_text() == expected, "llms.txt is stale: run `knowledge llms-txt`"


def test_the_docs_name_every_ranking_rule_and_no_other():
    """agents.md's and json-output.md's `rule_*` names are the RULES table's, compared as lists (issue 53.4)."""
    import re

    from knowledge.ranking import RULES

    table = {f"rule_{row.rule.value}" for row in RULES}
    for doc in ("agents.md", "json-output.md"):
        named = set(re.findall(r"`(rule_[a-z_]+)`", (ROOT / "docs" / doc).read_text()))
        assert named == table, f"docs/{doc}: {sorted(named ^ table)}"


def test_the_cli_reference_is_what_the_commands_print():
    """docs/cli.md is made from every command's --help (issue 69): change a command, then run
    `python -m knowledge.cli.reference > docs/cli.md`."""
    from knowledge.cli.reference import reference

    written = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    made = reference()
    assert written == made, "docs/cli.md is stale: run `python -m knowledge.cli.reference > docs/cli.md`"
    assert all(f"## knowledge {name}\n" in made for name in cli.list_commands(click.Context(cli)))
