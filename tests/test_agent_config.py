"""`knowledge agents install`: each client's config parses, other entries stay byte-for-byte, a second run changes
nothing, uninstall restores the file, and the written command line starts an MCP server the official client talks to."""

import asyncio
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.agent_config import CLIENTS, INSTRUCTIONS, _Scanner
from knowledge.cli import cli

from .conftest import commit, model_home

EXISTING = {
    "claude": (".mcp.json", '{\n  "mcpServers": {\n    "other": {"command": "other-server", "args": []}\n  }\n}\n'),
    "cursor": (
        ".cursor/mcp.json",
        '{\n  // my servers\n  "mcpServers": {\n    "other": {"command": "x"},\n  },\n  "theme": 1\n}\n',
    ),
    "vscode": (
        ".vscode/mcp.json",
        '{\n\t"inputs": [],\n\t"servers": {\n\t\t"other": {"type": "stdio", "command": "y"}\n\t}\n}\n',
    ),
    "codex": (".codex/config.toml", 'model = "o4"\n\n[mcp_servers.other]\ncommand = "z"\nargs = ["a"]\n'),
    "gemini": (".gemini/settings.json", '{"theme": "dark", "mcpServers": {"other": {"command": "g"}}}\n'),
    "opencode": ("opencode.json", '{\n  "$schema": "https://opencode.ai/config.json",\n  "model": "m"\n}\n'),
}


def run(root, *args):
    result = CliRunner().invoke(cli, ["-C", str(root), "agents", *args])
    assert result.exit_code == 0, result.output
    return result


def parsed(path: Path) -> dict:
    text = path.read_text()
    if path.suffix == ".toml":
        return tomllib.loads(text)

    def plain(value):
        if hasattr(value, "members"):
            return {key: plain(member[3]) for key, member in value.members.items()}
        return [plain(v) for v in value] if isinstance(value, list) else value

    scanner = _Scanner(text, path)
    scanner.skip()
    return plain(scanner.object())


def server_entry(name: str, config: dict) -> dict:
    if name == "codex":
        return config["mcp_servers"]["knowledge"]
    container = config
    for key in CLIENTS[name].container:
        container = container[key]
    return container["knowledge"]


def command_line(name: str, entry: dict) -> list[str]:
    return entry["command"] if name == "opencode" else [entry["command"], *entry["args"]]


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_install_merges_is_idempotent_and_uninstall_restores(git_repo, name):
    relative, original = EXISTING[name]
    commit(git_repo, {relative: original, "AGENTS.md": "# Agents\n\nBe kind.\n"})
    run(git_repo, "install", "--client", name)
    path = git_repo / relative
    config = parsed(path)
    entry = server_entry(name, config)
    assert command_line(name, entry)[-1] == "mcp"
    # everything that was there is still there, as it was written
    for line in original.splitlines():
        if name != "gemini" and any(word in line for word in ("other", "theme", "model", "$schema")):
            assert line.rstrip(",") in path.read_text(), line
    agents = (git_repo / "AGENTS.md").read_text()
    assert agents.startswith("# Agents\n\nBe kind.\n\n")
    assert agents.endswith(INSTRUCTIONS)
    before = {p: p.read_bytes() for p in git_repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    second = run(git_repo, "install", "--client", name)
    assert "nothing to change" in second.stderr
    assert before == {p: p.read_bytes() for p in git_repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    run(git_repo, "uninstall", "--client", name)
    assert path.read_text() == original
    assert (git_repo / "AGENTS.md").read_text() == "# Agents\n\nBe kind.\n"


def test_dry_run_prints_the_diff_and_writes_nothing(git_repo):
    commit(git_repo, {"README.md": "# r\n"})
    (git_repo / ".cursor").mkdir()
    result = run(git_repo, "install", "--dry-run")  # detected: .cursor exists
    assert "+++ b/.cursor/mcp.json" in result.stdout
    assert '+    "knowledge": {' in result.stdout
    assert "+++ b/AGENTS.md" in result.stdout
    assert not (git_repo / ".cursor" / "mcp.json").exists()
    assert not (git_repo / "AGENTS.md").exists()


def test_no_client_found_is_one_line_naming_the_option(git_repo):
    commit(git_repo, {"README.md": "# r\n"})
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "agents", "install"])
    assert result.exit_code == 1
    assert "no agent's config folder found in this repository; name one: --client claude|codex|" in result.output


def test_a_broken_config_is_refused_in_one_line_and_left_alone(git_repo):
    commit(git_repo, {".cursor/mcp.json": '{"mcpServers": {"other": }\n'})
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "agents", "install", "--client", "cursor"])
    assert result.exit_code == 1
    assert ".cursor/mcp.json: not valid JSON at line 1" in result.output
    assert (git_repo / ".cursor/mcp.json").read_text() == '{"mcpServers": {"other": }\n'


async def _initialize_and_list(command: list[str], cwd: Path, env: dict[str, str]):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            return initialized, await session.list_tools()


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_the_written_command_line_starts_a_server_the_official_client_talks_to(git_repo, name):
    commit(git_repo, {"docs/a.md": "---\ndescription: a\n---\n# A\n\ntext\n"})
    run(git_repo, "install", "--client", name)
    entry = server_entry(name, parsed(git_repo / CLIENTS[name].project_file))
    env = {"PATH": os.environ["PATH"], "KNOWLEDGE_HOME": str(model_home()), "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2"}
    initialized, tools = asyncio.run(_initialize_and_list(command_line(name, entry), git_repo, env))
    assert initialized.server_info.name == "knowledge"
    assert {"search", "get_source", "docs_for"} <= {tool.name for tool in tools.tools}
