"""A real HTTP server on 127.0.0.1 (port 0), real requests; the deterministic embedder keeps it fast."""

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.api.request import SearchRequest
from knowledge.cli import cli
from knowledge.errors import ConfigError
from knowledge.kb import KnowledgeBase
from knowledge.server.auth import bearer_ok, host_allowed, load_token, origin_allowed
from knowledge.server.backend import LocalBackend
from knowledge.server.http import KnowledgeHTTPServer

from .conftest import HashingEmbedder, commit

FIXTURES = Path(__file__).parent / "fixtures" / "docs"
TOKEN = "t0ken-for-tests-0123456789"


@pytest.fixture
def repo(git_repo):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    return git_repo


@pytest.fixture
def server(repo):
    kb = KnowledgeBase.open(repo, embedder_factory=lambda s: HashingEmbedder())
    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), TOKEN)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def call(url, path, body=None, token=TOKEN, headers=None, method=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method or ("POST" if data else "GET"))
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def cli_json(repo, *args, env=None):
    result = CliRunner(env=env).invoke(
        cli, ["-C", str(repo), *args], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_no_token_and_wrong_token_are_401(server):
    assert call(server, "/v1/status", token=None)[0] == 401
    assert call(server, "/v1/status", token="wrong-token-wrong-token")[0] == 401
    assert call(server, "/v1/search", {"query": "hooks"}, token=None)[0] == 401


def test_right_token_gives_the_same_results_as_the_cli(server, repo):
    body = {"query": "install the hook", "k": 3, "threshold": 0.0, "budget": 300}
    status, data = call(server, "/v1/search", body)
    assert status == 200
    assert data == cli_json(
        repo, "search", "install the hook", "-k", "3", "--threshold", "0", "--budget", "300", "--json"
    )
    assert data["results"]


def test_forged_host_and_foreign_origin_are_refused(server):
    assert call(server, "/v1/status", headers={"Host": "evil.example.com"})[0] == 403
    assert call(server, "/v1/status", headers={"Origin": "http://evil.example.com"})[0] == 403
    assert call(server, "/v1/status", headers={"Origin": "http://localhost:3000"})[0] == 200


def test_source_outside_the_root_is_refused(server):
    status, data = call(server, "/v1/source", {"path": "../../etc/passwd"})
    assert status == 403
    assert "outside the repository root" in data["error"]
    assert call(server, "/v1/source", {"path": "/etc/passwd"})[0] == 403
    assert call(server, "/v1/source", {"path": ".git/config"})[0] == 403
    status, data = call(server, "/v1/source", {"path": "docs/hooks.md", "start": 6, "end": 7})
    assert status == 200
    assert data["lines"] == ["# Git hooks", ""]


def test_bad_requests(server):
    assert call(server, "/v1/search", {"query": ""})[0] == 400
    assert call(server, "/v1/search", {"query": "x", "k": 10_000})[0] == 400
    assert call(server, "/v1/nope", {})[0] == 404
    big = {"query": "x" * (70 * 1024)}
    assert call(server, "/v1/search", big)[0] == 413
    request = urllib.request.Request(
        server + "/v1/search", data=b"{not json", method="POST", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 400


def test_a_stalled_client_does_not_block_others(server):
    host, port = server.removeprefix("http://").split(":")
    stalled = socket.create_connection((host, int(port)))
    stalled.sendall(b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
    started = time.monotonic()
    assert call(server, "/v1/status")[0] == 200
    assert time.monotonic() - started < 2
    stalled.close()


def test_server_sees_a_reindex_without_restart(server, repo):
    commit(repo, {"docs/new.md": "---\ndescription: n\n---\n# Zebra crossing\n\nzebra stripes\n"})
    KnowledgeBase.open(repo, embedder_factory=lambda s: HashingEmbedder()).reindex_changes()
    _, data = call(server, "/v1/search", {"query": "zebra stripes", "threshold": 0.0})
    assert data["results"][0]["path"] == "docs/new.md"


def test_docs_for_file_and_reindex(server):
    status, data = call(server, "/v1/docs-for-file", {"path": "README.md"})
    assert status == 200
    assert data["results"] == []
    status, data = call(server, "/v1/reindex", {})
    assert status == 200
    assert data["files_indexed"] == 0


def test_remote_cli_matches_local(server, repo):
    local = cli_json(repo, "search", "token budget", "--threshold", "0", "--json")
    remote = cli_json(
        repo, "search", "token budget", "--threshold", "0", "--json", "--remote", server, env={"KNOWLEDGE_TOKEN": TOKEN}
    )
    assert remote == local
    shown = CliRunner(env={"KNOWLEDGE_TOKEN": TOKEN}).invoke(
        cli, ["-C", str(repo), "show", "docs/hooks.md:6-6", "--remote", server]
    )
    assert shown.stdout == "6  # Git hooks\n"


def test_locate_over_http_and_remote_matches_local(server, repo):
    issue = "Hooks are not installed\n\n`knowledge hooks install` leaves nothing in .git/hooks"
    status, data = call(server, "/v1/locate", {"query": issue, "k": 3})
    assert status == 200
    assert data["files"]
    assert "query" not in data
    assert data["query_chars"] == len(issue)
    assert call(server, "/v1/locate", {"query": issue, "k": 0})[0] == 400
    assert call(server, "/v1/locate", {"query": issue, "kind": "docs"})[0] == 400  # not a locate parameter
    local = cli_json(repo, "locate", issue, "--json", "-k", "3")
    remote = cli_json(repo, "locate", issue, "--json", "-k", "3", "--remote", server, env={"KNOWLEDGE_TOKEN": TOKEN})
    assert remote == local == data


def test_every_declared_operation_has_its_route_on_the_server(server):
    from knowledge.server.operations import OPERATIONS

    bodies = {"source": {"path": "docs/hooks.md"}, "docs_for_file": {"path": "docs/hooks.md"}}
    bodies |= {"docs_for": {"target": "docs/hooks.md"}, "reindex": {}, "status": {"verbose": True}, "llms_txt": {}}
    for operation in OPERATIONS:
        assert call(server, operation.route, bodies.get(operation.name, {"query": "hooks"}))[0] == 200, operation
        if "format" in operation.request.__dataclass_fields__:  # the format is a field: text from the same route
            text = call(server, operation.route, bodies.get(operation.name, {"query": "hooks"}) | {"format": "text"})
            assert isinstance(text[1]["text"], str), operation
        if operation.takes_get:
            assert call(server, operation.route, None)[0] == 200, operation


def test_show_refuses_paths_outside_the_root(repo):
    for spec in ("../etc/passwd", "/etc/passwd"):
        result = CliRunner().invoke(cli, ["-C", str(repo), "show", spec])
        assert result.exit_code == 1
        assert "outside the repository root" in result.stderr


def test_token_sources(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="must not be readable by others"):
        load_token({}, path)
    path.chmod(0o600)
    assert load_token({}, path) == TOKEN
    assert load_token({"KNOWLEDGE_TOKEN": TOKEN}, None) == TOKEN
    assert load_token({}, None) is None
    with pytest.raises(ConfigError, match="shorter than"):
        load_token({"KNOWLEDGE_TOKEN": "short"}, None)


def test_auth_predicates():
    assert bearer_ok(f"Bearer {TOKEN}", TOKEN)
    assert not bearer_ok(TOKEN, TOKEN)
    assert not bearer_ok("Bearer x", TOKEN)
    assert host_allowed("127.0.0.1:8765", "127.0.0.1")
    assert host_allowed("localhost:8765", "127.0.0.1")
    assert host_allowed("[::1]:8765", "127.0.0.1")
    assert not host_allowed("attacker.example:8765", "127.0.0.1")
    assert not host_allowed("10.0.0.5:8765", "127.0.0.1")
    assert host_allowed("10.0.0.5:8765", "0.0.0.0")
    assert not host_allowed("rebind.example:8765", "0.0.0.0")
    assert host_allowed("devbox:8765", "0.0.0.0", frozenset({"devbox"}))
    assert not host_allowed(None, "127.0.0.1")
    assert origin_allowed(None)
    assert origin_allowed("http://127.0.0.1:5173")
    assert not origin_allowed("https://evil.example")


def test_serve_refuses_to_start_without_a_token(repo):
    result = CliRunner(env={"KNOWLEDGE_TOKEN": ""}).invoke(cli, ["-C", str(repo), "serve", "--port", "0"])
    assert result.exit_code == 1
    assert "needs a token" in result.stderr


def _raw(url, body: bytes, length: str):
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    connection.putrequest("POST", "/v1/search")
    connection.putheader("Authorization", f"Bearer {TOKEN}")
    connection.putheader("Content-Length", length)
    connection.endheaders()
    connection.send(body)
    response = connection.getresponse()
    status = response.status
    connection.close()
    return status


def test_hostile_bodies_get_4xx_not_a_dropped_connection(server):
    assert _raw(server, b"x" * 1000, "-1") == 400  # a negative length no longer skips the cap
    nested = b"[" * 100_000 + b"]" * 100_000
    assert _raw(server, nested[:60_000], str(60_000)) == 400
    status, data = call(server, "/v1/search", {"query": "hooks", "kind": ["docs"]})
    assert status == 400
    assert "kind" in data["error"]
    status, _ = call(server, "/v1/search", {"query": "hooks", "k": 4_000_000_000_000_000_000})
    assert status == 400


def test_a_busy_port_is_one_clear_line(repo, monkeypatch):
    import socket

    monkeypatch.setenv("KNOWLEDGE_TOKEN", TOKEN)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli,
            ["-C", str(repo), "serve", "--port", str(port)],
            obj={"embedder_factory": lambda s: HashingEmbedder()},
        )
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr


def test_status_is_one_document_on_the_cli_and_over_http(server, repo):
    code, over_http = call(server, "/v1/status")
    assert code == 200
    on_cli = cli_json(repo, "status", "--json")
    for document in (over_http, on_cli):
        document.pop("age_seconds")
    assert on_cli == over_http


def test_slow_header_clients_are_cut_at_the_deadline_and_connections_are_capped(repo, monkeypatch):
    """569400d: 300 connections trickling their headers each held a thread for 100 s and more, with no cap. Now a
    connection's headers have a deadline and the threads a cap: a request beyond it waits for a slot, not for ever."""
    import socket
    import time

    from knowledge.server import http as http_module

    monkeypatch.setattr(http_module, "HEADER_DEADLINE_SECONDS", 1.0)
    monkeypatch.setattr(http_module, "MAX_CONNECTIONS", 3)
    kb = KnowledgeBase.open(repo, embedder_factory=lambda s: HashingEmbedder())
    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), TOKEN)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    address = ("127.0.0.1", httpd.server_address[1])
    try:
        slow = [socket.create_connection(address, timeout=10) for _ in range(3)]
        for client in slow:
            client.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        time.sleep(0.3)
        started = time.monotonic()
        # every slot is held: a whole request waits for one (no thread of its own meanwhile), and the slow clients
        # are cut at the header deadline, so it is answered within about that
        status, _ = call(f"http://{address[0]}:{address[1]}", "/v1/status")
        assert status == 200
        assert time.monotonic() - started < 5
        for client in slow:
            assert client.recv(100) == b""  # cut at the header deadline
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_daemon_is_looked_for_once_a_process_unless_asked_afresh(tmp_path, monkeypatch):
    """The launcher looks for a daemon before click loads; when there is none, the CLI that answers next does not
    look again. `daemon start`, waiting for the one it started, looks afresh."""
    from knowledge.server import daemon_client, resolve

    looks = []
    monkeypatch.setattr(daemon_client, "find_socket", lambda start: looks.append(start))
    monkeypatch.setattr(resolve, "_NO_DAEMON", set())
    monkeypatch.delenv("KNOWLEDGE_NO_DAEMON", raising=False)
    assert resolve.daemon_answer(tmp_path, "search", {"query": "x"}) is None  # the launcher's look

    class Local:
        def call(self, operation, request):
            return {"answered": request.query}

    assert resolve.answer("search", SearchRequest("x"), start=tmp_path, local=Local) == {"answered": "x"}
    assert looks == [tmp_path.resolve()]
    assert resolve.daemon_answer(tmp_path, "status", fresh=True) is None
    assert len(looks) == 2


def test_every_operation_has_its_row_in_the_server_docs():
    from pathlib import Path

    from knowledge.server.operations import OPERATIONS

    documented = (Path(__file__).resolve().parent.parent / "docs" / "server.md").read_text()
    for operation in OPERATIONS:
        assert f"`POST {operation.route}" in documented, operation.route
        assert (f"`GET {operation.route}" in documented) == operation.takes_get, operation.route


def test_peers_without_the_token_cannot_hold_the_slots(server):
    """Security round four: 300 connections without a token, each sending a request now and then, kept their slots
    (a 401 left the connection open) and a real search timed out. A refusal now closes the connection, and peers
    that never authenticate hold at most UNPROVEN_CONNECTIONS slots: the oldest of them goes when a new one comes."""
    from knowledge.server.http import UNPROVEN_CONNECTIONS

    host, port = server.removeprefix("http://").split(":")
    address = (host, int(port))
    refused = []
    for _ in range(300):
        peer = socket.create_connection(address, timeout=10)
        peer.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        refused.append(peer)
    for peer in refused[:20]:
        answer = b""
        while chunk := peer.recv(4096):  # the whole answer, then the end: the server closed it
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 401")
        assert b"Connection: close" in answer
    silent = [socket.create_connection(address, timeout=10) for _ in range(UNPROVEN_CONNECTIONS + 40)]
    time.sleep(0.3)
    started = time.monotonic()
    assert call(server, "/v1/search", {"query": "hooks"})[0] == 200
    assert time.monotonic() - started < 3  # not the header deadline nor the socket timeout
    assert silent[0].recv(100) == b""  # the longest-waiting silent peer was let go
    for peer in refused + silent:
        peer.close()
