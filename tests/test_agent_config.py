"""`knowledge agents install`: each client's config parses, other entries stay byte-for-byte, a second run changes
nothing, uninstall restores the file, and the written command line starts an MCP server the official client talks to."""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge import agent_config
from knowledge.agent_config import CLIENTS, INSTRUCTIONS
from knowledge.cli import cli
from knowledge.config_edit import _Scanner
from knowledge.errors import KnowledgeError

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


def test_a_bare_repository_gets_a_project_mcp_json_and_agents_md_and_is_told_so(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    commit(git_repo, {"README.md": "# r\n"})
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "agents", "install"])
    assert result.exit_code == 0, result.output
    assert "no agent's config folder found here: wrote the project's .mcp.json" in result.output
    assert "knowledge" in json.loads((git_repo / ".mcp.json").read_text())["mcpServers"]
    assert "knowledge:begin" in (git_repo / "AGENTS.md").read_text()
    assert not (git_repo / "CLAUDE.md").exists()
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "agents", "uninstall", "--scope", "user"])
    assert result.exit_code == 1  # nothing to guess for the home folder
    assert "no agent's config folder found in" in result.output


def test_a_local_server_config_needs_the_mcp_sdk_and_says_how_to_add_it(git_repo, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    commit(git_repo, {"README.md": "# r\n"})
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "agents", "install", "--client", "claude"])
    assert result.exit_code == 1
    assert "pip install 'mcp>=2.0,<3'" in result.output
    assert not (git_repo / ".mcp.json").exists()


def test_the_config_names_the_full_path_of_a_knowledge_inside_a_virtualenv(tmp_path):
    from knowledge.agent_config import server_command

    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "knowledge").write_text("#!/bin/sh\n")
    python = str(bin_dir / "python")
    assert server_command(str(bin_dir / "knowledge"), python, in_virtualenv=True) == [str(bin_dir / "knowledge"), "mcp"]
    assert server_command(str(bin_dir / "knowledge"), python, in_virtualenv=False) == ["knowledge", "mcp"]


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


REFERENCE = re.compile(r"\$\{env:(\w+)\}|\$\{(\w+)\}|\{env:(\w+)\}")  # the clients' documented variable forms


def remote_endpoint(name: str, entry: dict, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The URL and headers a client sends, its variable references resolved as that client resolves them."""
    if name == "codex":
        return entry["url"], {"Authorization": f"Bearer {env[entry['bearer_token_env_var']]}"}
    url = entry.get("url") or entry["httpUrl"]
    headers = {key: REFERENCE.sub(lambda m: env[next(g for g in m.groups() if g)], value) for key, value in
               entry["headers"].items()}  # fmt: skip
    return url, headers


async def _initialize_and_list_over_http(url: str, headers: dict[str, str]):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        return initialized, await session.list_tools()


@pytest.fixture(scope="module")
def mcp_over_http(tmp_path_factory):
    """One `knowledge mcp --http` with a token, as a team or a devbox runs it."""
    root = tmp_path_factory.mktemp("served")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    with pytest.MonkeyPatch.context() as patch:  # module scope: before the per-test git identity is set
        for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
            patch.setenv(name, "Test")
        for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
            patch.setenv(name, "test@example.com")
        commit(root, {"docs/a.md": "---\ndescription: a\n---\n# A\n\ntext\n"})
    token = "agents-http-token-0123456789"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "KNOWLEDGE_HOME": str(model_home()), "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2",
           "KNOWLEDGE_TOKEN": token}  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-m", "knowledge", "-C", str(root), "mcp", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp", token
    server.terminate()
    server.wait(timeout=30)


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_an_http_entry_names_the_token_variable_and_reaches_the_server_with_it(git_repo, name, mcp_over_http):
    url, token = mcp_over_http
    run(git_repo, "install", "--client", name, "--url", url)
    written = (git_repo / CLIENTS[name].project_file).read_text()
    assert token not in written
    assert "KNOWLEDGE_TOKEN" in written
    entry = server_entry(name, parsed(git_repo / CLIENTS[name].project_file))
    assert "command" not in entry
    assert run(git_repo, "install", "--client", name, "--url", url).stderr.startswith("nothing to change")
    endpoint, headers = remote_endpoint(name, entry, {"KNOWLEDGE_TOKEN": token})
    initialized, tools = asyncio.run(_initialize_and_list_over_http(endpoint, headers))
    assert initialized.server_info.name == "knowledge"
    assert {"search", "get_source", "docs_for"} <= {tool.name for tool in tools.tools}


def test_markers_out_of_order_are_refused_and_the_users_text_kept(tmp_path):
    """569400d: `knowledge:end` before `knowledge:begin` duplicated the user's text on every run."""
    root = tmp_path / "repo"
    root.mkdir()
    text = f"# Agents\n{agent_config.END}\nMy own rules.\n{agent_config.BEGIN}\nMore.\n"
    (root / "AGENTS.md").write_text(text)
    with pytest.raises(KnowledgeError, match=r"AGENTS\.md: its .* lines are not one pair in that order"):
        agent_config.plan(root, tmp_path / "home", ["claude"], "project", ["knowledge", "mcp"])
    assert (root / "AGENTS.md").read_text() == text


def test_markers_named_in_prose_are_prose(tmp_path):
    """569400d: both markers named inside a line of prose split the line, and uninstall lost the sentence."""
    root = tmp_path / "repo"
    root.mkdir()
    sentence = f"We write {agent_config.BEGIN} and {agent_config.END} around generated text.\n"
    (root / "AGENTS.md").write_text("# Agents\n" + sentence)
    home = tmp_path / "home"
    agent_config.apply(
        agent_config.plan(root, home, ["claude"], "project", ["knowledge", "mcp"], documents=("AGENTS.md",))
    )
    installed = (root / "AGENTS.md").read_text()
    assert installed.startswith("# Agents\n" + sentence)
    assert installed.count("## Searching this repository") == 1
    agent_config.apply(
        agent_config.plan(root, home, ["claude"], "project", ["knowledge", "mcp"], documents=("AGENTS.md",))
    )
    assert (root / "AGENTS.md").read_text() == installed  # a second install changes nothing
    agent_config.apply(
        agent_config.plan(
            root, home, ["claude"], "project", ["knowledge", "mcp"], remove=True, documents=("AGENTS.md",)
        )
    )
    assert (root / "AGENTS.md").read_text() == "# Agents\n" + sentence


def test_codex_config_whose_servers_are_an_inline_table_gets_an_inline_entry(tmp_path):
    """569400d: `mcp_servers = { other = {…} }` was an internal error (exit 3)."""
    from knowledge.config_edit import toml_table_set

    text = 'model = "o3"\nmcp_servers = { other = { command = "x" } }\n'
    path = tmp_path / "config.toml"
    installed = toml_table_set(text, path, ["mcp_servers", "knowledge"], {"command": "knowledge", "args": ["mcp"]})
    assert tomllib.loads(installed)["mcp_servers"] == {
        "other": {"command": "x"},
        "knowledge": {"command": "knowledge", "args": ["mcp"]},
    }
    assert toml_table_set(installed, path, ["mcp_servers", "knowledge"], None) == text
