"""The perimeter, attacked as a hostile contributor would: symlinked directories at any depth, links into .git,
back to the root, to sibling repositories and in loops, secrets files, and the index folder itself. Every reader
(indexing, the CLI's show, the HTTP server, MCP over stdio, the daemon) goes through the one path gate."""

import asyncio
import json
import os
import stat
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.errors import KnowledgeError
from knowledge.kb import KnowledgeBase
from knowledge.path_gate import resolve_inside, servable
from knowledge.server.backend import LocalBackend
from knowledge.server.daemon import DaemonServer
from knowledge.server.daemon_client import request, socket_path
from knowledge.server.http import KnowledgeHTTPServer

from .conftest import HashingEmbedder, commit, git, model_home

TOKEN = "perimeter-token-0123456789"
SECRET = "OutsideSecret-7f3a"

# (path asked for, what a leak would print); every one must be refused by every reader
ATTACKS = [
    ("etcdir/passwd", "root:"),  # a tracked link to /etc
    ("outdir/secret.txt", SECRET),  # a link to a folder outside the repository
    ("deep/a/b/c/out/secret.txt", SECRET),  # the same, four folders down
    ("gitlink/config", "[core]"),  # a link to .git
    ("self/.env.local", "LOCAL_ENV_SECRET"),  # a link to the root, then a gitignored secrets file
    ("self/.gitignore-d/ignored.txt", "IGNORED_CONTENT"),  # a link to the root, then a gitignored file
    ("docs/up/sibling/notes.md", "SIBLING_SECRET"),  # docs/up -> ../.. reaches a sibling repository
    ("loop/x", None),  # a symlink loop
    (".pgpass", "PgpassSecret9"),  # a secrets file by name, not gitignored
    (".netrc", "NetrcSecret9"),
    ("config/credentials.json", "CredSecret9"),
    (".knowledge/docs.meta.json", '"model_id"'),
    (".git/config", "[core]"),
    ("docs/../../sibling/notes.md", "SIBLING_SECRET"),
    ("docs/guide.md\0.txt", None),  # NUL in the path
]


@pytest.fixture
def hostile(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "notes.md").write_text("SIBLING_SECRET\n")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(
        root,
        {
            "docs/guide.md": "---\ndescription: A guide.\n---\n# Guide\n\nHow to set things up.\n",
            ".gitignore": ".env.local\n.gitignore-d/\n",
            ".pgpass": "db:5432:app:app:PgpassSecret9\n",
            ".netrc": "machine example.com login me password NetrcSecret9\n",
            "config/credentials.json": '{"key": "CredSecret9"}\n',
            "docs/alias/real.md": "---\ndescription: Reached through a link inside the repository.\n---\n# Real\n",
        },
    )
    (root / ".env.local").write_text("LOCAL_ENV_SECRET=1\n")
    (root / ".gitignore-d").mkdir()
    (root / ".gitignore-d" / "ignored.txt").write_text("IGNORED_CONTENT\n")
    os.symlink("/etc", root / "etcdir")
    os.symlink(outside, root / "outdir")
    (root / "deep" / "a" / "b" / "c").mkdir(parents=True)
    os.symlink(outside, root / "deep" / "a" / "b" / "c" / "out")
    os.symlink(".git", root / "gitlink")
    os.symlink(".", root / "self")
    os.symlink("../..", root / "docs" / "up")
    os.symlink("loop", root / "loop")
    os.symlink("alias/real.md", root / "docs" / "inside-link.md")  # inside, to inside: keeps working
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "links")
    KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    return root


def leaked(text: str, marker: str | None) -> bool:
    return marker is not None and marker in text


@pytest.mark.parametrize(("path", "marker"), ATTACKS)
def test_the_facade_refuses_every_escape(hostile, path, marker):
    kb = KnowledgeBase.open(hostile, embedder_factory=lambda s: HashingEmbedder())
    with pytest.raises(KnowledgeError) as caught:
        kb.source(path)
    assert not leaked(str(caught.value), marker)


def test_the_cli_refuses_every_escape_with_one_line_and_exit_1(hostile):
    for path, marker in ATTACKS:
        if "\0" in path:
            continue  # not expressible as a command-line argument
        result = CliRunner().invoke(
            cli, ["-C", str(hostile), "show", path], obj={"embedder_factory": lambda s: HashingEmbedder()}
        )
        assert result.exit_code == 1, (path, result.output)
        assert not leaked(result.output, marker), path
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_links_inside_the_repository_keep_working(hostile):
    kb = KnowledgeBase.open(hostile, embedder_factory=lambda s: HashingEmbedder())
    assert kb.source("docs/inside-link.md").lines[-1] == "# Real"
    assert kb.source("self/docs/guide.md").lines[3] == "# Guide"  # a link to the root, then a normal file
    indexed = set(kb.index("docs").store.files())
    assert {"docs/guide.md", "docs/inside-link.md"} <= indexed
    assert not any(p.startswith(("etcdir", "outdir", "gitlink", "self/")) for p in indexed)


def test_indexing_never_reads_secrets_or_links_out(hostile):
    kb = KnowledgeBase.open(hostile, embedder_factory=lambda s: HashingEmbedder())
    everything = " ".join(c.content for index in kb.indexes() for c in index.all_chunks().values())
    for _, marker in ATTACKS:
        assert not leaked(everything, marker)


def test_git_check_ignore_failing_is_a_refusal(hostile):
    # git answers 128 ("beyond a symbolic link") for etcdir/passwd: that must never read as "not ignored"
    refused = servable(hostile, "etcdir/passwd", (), in_git=True)
    assert not isinstance(refused, Path)
    assert not isinstance(resolve_inside(hostile, "self/.env.local", (".env.*",)), Path)


def serve_http(kb):
    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), TOKEN)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def post(url, route, body):
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode()
    req = urllib.request.Request(url + route, data=data, method="POST")
    req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_http_server_refuses_every_escape_with_4xx(hostile):
    httpd = serve_http(KnowledgeBase.open(hostile, embedder_factory=lambda s: HashingEmbedder()))
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        for path, marker in ATTACKS:
            status, body = post(url, "/v1/source", {"path": path})
            assert status in {400, 403}, (path, status, body)
            assert not leaked(body, marker), path
        status, body = post(url, "/v1/source", {"path": "docs/inside-link.md"})
        assert (status, "# Real" in body) == (200, True)
        for bad in ({"query": None}, {"query": "a\ud800b"}, {"query": "x", "k": "3"}):
            assert post(url, "/v1/search", bad)[0] == 400, bad
        assert post(url, "/v1/reindex", {"full": "yes"})[0] == 400
        assert post(url, "/v1/docs-for-file", {"path": "etcdir/passwd\0"})[0] == 400
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_daemon_refuses_every_escape(hostile):
    kb = KnowledgeBase.open(hostile, embedder_factory=lambda s: HashingEmbedder())
    folder = hostile / ".knowledge"
    server = DaemonServer(socket_path(folder), LocalBackend(kb), idle_seconds=60)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for path, marker in ATTACKS:
            with pytest.raises(KnowledgeError) as caught:
                request(folder, "POST", "/v1/source", {"path": path})
            assert not leaked(str(caught.value), marker), path
        assert request(folder, "POST", "/v1/source", {"path": "docs/inside-link.md"})["lines"][-1] == "# Real"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.model
def test_mcp_over_stdio_refuses_every_escape(hostile):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    home = str(model_home())
    env = {"KNOWLEDGE_HOME": home, "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2", "PATH": os.environ["PATH"]}

    async def calls():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "knowledge", "-C", str(hostile), "mcp"], env=env
        )
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [
                    (marker, await session.call_tool("get_source", {"path": path})) for path, marker in ATTACKS
                ], await session.call_tool("get_source", {"path": "docs/inside-link.md"})

    answers, inside = asyncio.run(calls())
    for marker, answer in answers:
        text = "".join(part.text for part in answer.content if getattr(part, "type", "") == "text")
        assert answer.is_error, text
        assert not leaked(text, marker)
    assert not inside.is_error


def test_the_index_folder_is_ignored_and_owner_only_from_its_first_file(git_repo):
    commit(git_repo, {"docs/a.md": "---\ndescription: A.\n---\n# A\n\ntext\n"})
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    folder = git_repo / ".knowledge"
    assert (folder / ".gitignore").read_text() == "*\n"
    git(git_repo, "add", "-A")
    assert ".knowledge" not in git(git_repo, "status", "--porcelain")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.rglob("*"):
        if path.is_file() and path.name != ".gitignore":
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_outside_git_show_honours_a_folders_gitignore_as_indexing_does(tmp_path):
    root = tmp_path / "plain"
    (root / "notes" / "private").mkdir(parents=True)
    (root / "notes" / ".gitignore").write_text("private/\n*.secret.md\n")
    (root / "notes" / "private" / "plan.md").write_text("# Plan\n")
    (root / "notes" / "x.secret.md").write_text("# X\n")
    (root / "notes" / "open.md").write_text("# Open\n")
    for rel in ("notes/private/plan.md", "notes/x.secret.md"):
        result = CliRunner().invoke(cli, ["-C", str(root), "show", rel])
        assert result.exit_code == 1, result.output
        assert "ignored by a .gitignore" in result.output
    assert CliRunner().invoke(cli, ["-C", str(root), "show", "notes/open.md"]).exit_code == 0


def test_mcp_over_stdio_answers_a_request_holding_a_lone_surrogate(git_repo):
    """`"\\ud800"` is valid JSON and no UTF-8: the SDK's reader dropped such a line without a reply. It is read as
    U+FFFD now, so the request is answered, and so is the next."""
    import select
    import subprocess

    commit(git_repo, {"docs/a.md": "# A\n\nText.\n"})
    process = subprocess.Popen(
        [sys.executable, "-m", "knowledge", "-C", str(git_repo), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )

    def send(message: str) -> None:
        process.stdin.write(message.encode() + b"\n")
        process.stdin.flush()

    def reply() -> dict:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, "no reply"
        return json.loads(process.stdout.readline())

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert reply()["id"] == 1
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{"x":"a \\ud800"}}}'
        send(call)
        assert reply()["id"] == 2
        # 569400d: a line nested 5,000 deep holding one killed the reader (RecursionError), and so the server
        send('{"jsonrpc":"2.0","id":9,"method":"ping","params":' + "[" * 5000 + '"\\ud800"' + "]" * 5000 + "}")
        send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}')
        answered = reply()
        answered = reply() if answered.get("id") != 3 else answered  # the nested line's own error may come first
        assert answered["id"] == 3
    finally:
        process.kill()
        process.wait()
