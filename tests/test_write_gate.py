"""The write gate (issue 40): nothing a repository commits makes knowledge write outside it or through a link.

Each attack is what a hostile contributor commits (a symlink at a path knowledge writes), run through the real CLI;
the last test walks every writer of the package with a link planted at its target."""

import ast
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge import admin, agent_config, hooks
from knowledge.cli import cli
from knowledge.errors import KnowledgeError, StorageError, WriteRefusedError
from knowledge.fs import append_file, atomic_write, file_lock, open_append, private_dir, try_lock, write_file
from knowledge.store.asked import ASKED_FILE, record_asked

from .conftest import HashingEmbedder, commit, git

PACKAGE = Path(__file__).resolve().parent.parent / "knowledge"
DOCS = {"docs/a.md": "---\ndescription: Alpha.\n---\n# Alpha\nHow hooks are installed.\n"}


def run_cli(root, *args, env=None):
    result = CliRunner(env=env).invoke(
        cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    return result.exit_code, result.output


@pytest.fixture
def victim(tmp_path):
    """A folder outside the repository holding a file a link will point at, and its untouched content."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "authorized_keys").write_text("ssh-ed25519 AAAA mine\n")
    return folder


def untouched(victim: Path) -> bool:
    return (
        sorted(p.name for p in victim.iterdir()) == ["authorized_keys"]
        and (victim / "authorized_keys").read_text() == "ssh-ed25519 AAAA mine\n"
    )


def test_llms_txt_refuses_a_committed_symlink_and_folds_a_title_newline(git_repo, victim):
    os.symlink(victim / "authorized_keys", git_repo / "llms.txt")
    commit(git_repo, {**DOCS, "docs/b.md": '---\ntitle: "B\\nssh-rsa EVIL attacker"\ndescription: B.\n---\n# B\n'})
    code, out = run_cli(git_repo, "llms-txt")
    assert code == 1, out
    assert "outside what knowledge may write" in out, out
    assert len(out.strip().splitlines()) == 1, out
    assert untouched(victim)
    code, out = run_cli(git_repo, "llms-txt", "--stdout")
    assert code == 0, out
    assert "\nssh-rsa EVIL" not in out
    assert "- [B ssh-rsa EVIL attacker](docs/b.md)" in out


def test_llms_txt_writes_through_a_link_to_a_file_of_the_repository(git_repo):
    commit(git_repo, {**DOCS, "generated/llms.txt": "old\n"})
    os.symlink("generated/llms.txt", git_repo / "llms.txt")
    assert run_cli(git_repo, "llms-txt")[0] == 0
    assert (git_repo / "llms.txt").is_symlink()
    assert "docs/a.md" in (git_repo / "generated/llms.txt").read_text()


@pytest.mark.parametrize(("link", "target"), [("llms.txt", ".env"), ("llms.txt", "notes/private.md")])
def test_llms_txt_never_writes_through_a_link_into_the_users_ignored_or_secret_files(git_repo, link, target):
    """569400d: a committed `llms.txt -> .env` made `llms-txt` overwrite the user's .env."""
    commit(git_repo, {**DOCS, ".gitignore": ".env\nnotes/\n"})
    write_target = git_repo / target
    write_target.parent.mkdir(parents=True, exist_ok=True)
    write_target.write_text("API_TOKEN=mine\n")
    os.symlink(target, git_repo / link)
    commit(git_repo, {}, "a committed link")
    code, out = run_cli(git_repo, "llms-txt")
    assert code == 1, out
    assert f"a link to {target}" in out, out
    assert len(out.strip().splitlines()) == 1, out
    assert write_target.read_text() == "API_TOKEN=mine\n"


def test_agents_install_never_appends_to_the_users_ignored_files_through_a_link(git_repo, tmp_path, monkeypatch):
    """569400d: a committed `CLAUDE.md -> .env.local` got the instructions appended to the user's .env.local."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    commit(git_repo, {**DOCS, ".gitignore": ".env.local\n"})
    (git_repo / ".env.local").write_text("DB_PASSWORD=mine\n")
    os.symlink(".env.local", git_repo / "CLAUDE.md")
    commit(git_repo, {}, "a committed link")
    code, out = run_cli(git_repo, "agents", "install", "--client", "claude")
    assert code == 1, out
    assert "CLAUDE.md: a link to .env.local" in out, out
    assert (git_repo / ".env.local").read_text() == "DB_PASSWORD=mine\n"


def test_agents_install_writes_nothing_outside_the_repository(git_repo, victim, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    commit(git_repo, DOCS)
    (git_repo / ".claude").mkdir()
    # the old scratch name: a link there once received AGENTS.md
    os.symlink(victim / "bashrc", git_repo / ".AGENTS.md.knowledge-tmp")
    assert run_cli(git_repo, "agents", "install", "--client", "claude")[0] == 0
    assert untouched(victim)
    assert "knowledge:begin" in (git_repo / "AGENTS.md").read_text()

    (git_repo / "CLAUDE.md").unlink()
    os.symlink(victim / "authorized_keys", git_repo / "CLAUDE.md")  # a private key copied into a committable file
    code, out = run_cli(git_repo, "agents", "install", "--client", "claude")
    assert code == 1, out
    assert "CLAUDE.md" in out, out
    assert len(out.strip().splitlines()) == 1, out
    assert untouched(victim)
    assert (git_repo / "CLAUDE.md").is_symlink()

    os.symlink(victim, git_repo / ".cursor")  # a project-scope install must not edit a file outside the project
    code, out = run_cli(git_repo, "agents", "install", "--client", "cursor")
    assert code == 1, out
    assert ".cursor" in out, out
    assert untouched(victim)


def test_a_claude_md_linked_to_agents_md_gets_one_section(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    commit(git_repo, {**DOCS, "AGENTS.md": "# Agents\n"})
    os.symlink("AGENTS.md", git_repo / "CLAUDE.md")
    assert run_cli(git_repo, "agents", "install", "--client", "claude")[0] == 0
    assert (git_repo / "CLAUDE.md").is_symlink()
    assert (git_repo / "AGENTS.md").read_text().count("knowledge:begin") == 1


def test_a_user_config_linked_into_the_home_folder_is_written_through(tmp_path, git_repo, monkeypatch):
    home = tmp_path / "home"
    (home / "dotfiles").mkdir(parents=True)
    (home / "dotfiles" / "claude.json").write_text('{"theme": "dark"}\n')
    os.symlink("dotfiles/claude.json", home / ".claude.json")
    monkeypatch.setenv("HOME", str(home))
    assert run_cli(git_repo, "agents", "install", "--client", "claude", "--scope", "user")[0] == 0
    assert (home / ".claude.json").is_symlink()
    assert "mcpServers" in (home / "dotfiles" / "claude.json").read_text()
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}\n")
    (home / ".claude.json").unlink()
    os.symlink(outside, home / ".claude.json")
    code, out = run_cli(git_repo, "agents", "install", "--client", "claude", "--scope", "user")
    assert code == 1, out
    assert outside.read_text() == "{}\n", out


def test_a_committed_knowledge_folder_or_link_is_refused_in_one_line(git_repo, victim, tmp_path):
    commit(git_repo, DOCS)
    (git_repo / ".knowledge").mkdir()
    os.symlink(victim / "authorized_keys", git_repo / ".knowledge" / ASKED_FILE)
    git(git_repo, "add", "-f", ".knowledge/" + ASKED_FILE)
    git(git_repo, "commit", "-q", "-m", "plant")
    for args in (("reindex-all", "--quiet"), ("search", "hooks"), ("status",)):
        code, out = run_cli(git_repo, *args)
        assert code == 1, out
        assert "git rm -r --cached .knowledge" in out, out
        assert len(out.strip().splitlines()) == 1, out
    record_asked(git_repo / ".knowledge", ["docs/$(touch pwned).md"])  # the hint itself never follows the link
    assert untouched(victim)

    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, DOCS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, other / ".knowledge")
    code, out = run_cli(other, "reindex-all", "--quiet")
    assert code == 1, out
    assert "is a symlink" in out, out
    assert "rm " in out, out
    assert list(elsewhere.iterdir()) == []


def test_the_hook_writes_private_files_and_nothing_through_a_link(git_repo, victim):
    commit(git_repo, DOCS)
    hooks.install(git_repo)
    commit(git_repo, {"docs/b.md": "# B\n"})
    folder = git_repo / ".knowledge"
    deadline = time.monotonic() + 30
    while not (folder / "logs" / "hook.log").exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # the hook's background half opens its log
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "logs" / "hook.log").stat().st_mode) == 0o600

    linked = git_repo.parent / "linked"
    linked.mkdir()
    git(linked, "init", "-q", "-b", "main")
    os.symlink(victim, linked / ".knowledge")
    commit(linked, DOCS)
    hooks.install(linked)
    commit(linked, {"docs/b.md": "# B\n"})
    assert untouched(victim)


def test_a_repository_removed_during_a_fill_is_not_recreated(tmp_path):
    gone = tmp_path / "gone"
    with pytest.raises(StorageError, match="gone"):
        private_dir(gone / ".knowledge" / "logs")
    assert not gone.exists()


def test_every_writer_refuses_a_symlink_planted_at_its_target(git_repo, victim, tmp_path, monkeypatch):
    """Each writer of the package, with a link to a file outside the repository planted where it writes."""
    commit(git_repo, DOCS)
    index = git_repo / ".knowledge"
    private_dir(index / "logs")
    target = victim / "authorized_keys"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def plant(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        os.symlink(target, path)
        return path

    writers = {
        "write_file": lambda: write_file(git_repo, plant(git_repo / "x.txt"), "evil"),
        "append_file": lambda: append_file(git_repo, plant(index / "x"), "evil"),
        "open_append": lambda: os.close(open_append(git_repo, plant(index / "logs" / "embed.log"))),
        "file_lock": lambda: file_lock(plant(index / "index.lock")).__enter__(),
        "try_lock": lambda: try_lock(plant(index / "embed.lock")).__enter__(),
        "admin.write_log": lambda: admin.write_log(git_repo, (plant(index / "logs" / "last-error.log")).name, "e"),
        "admin.open_log": lambda: admin.open_log(git_repo, plant(index / "logs" / "daemon.log").name),
        "admin.write_generated": lambda: admin.write_generated(git_repo, plant(git_repo / "llms.txt").name, "e"),
        "agent_config.plan": lambda: agent_config.plan(
            git_repo, tmp_path / "home", ["claude"], "project", ["knowledge", "mcp"]
        ),
        "hooks.install": lambda: hooks.install(git_repo),
    }
    plant(git_repo / "AGENTS.md")
    hooks_folder = Path(git(git_repo, "rev-parse", "--absolute-git-dir").strip()) / "hooks"
    plant(hooks_folder / "post-commit.legacy")  # the name install would move a foreign hook to: refused below
    plant(hooks_folder / "post-commit")
    for name, writer in writers.items():
        with pytest.raises((WriteRefusedError, KnowledgeError)):
            writer()
        assert untouched(victim), name
    record_asked(index, ["a.md"])
    plant(index / ASKED_FILE)
    record_asked(index, ["b.md"])
    assert untouched(victim)
    plant(index / "docs.meta.json")
    atomic_write(index / "docs.meta.json", "{}")  # a replace swaps the link itself, never what it points at
    assert untouched(victim)
    assert not (index / "docs.meta.json").is_symlink()


def test_no_module_writes_files_except_through_the_gate():
    """Every call that opens a file for writing lives in `knowledge/fs.py`; the exceptions write only inside a
    folder knowledge made itself with mkdtemp (the model build) or hand a path to SQLite under a checked index."""
    allowed = {
        "knowledge/fs.py": "the write gate",
        "knowledge/embedding/install.py": "the model's files, inside a mkdtemp folder of the user cache",
        "knowledge/embedding/static.py": "the static table, inside the model's own cache folder",
        "knowledge/cli/guard.py": "stdout pointed at /dev/null when the reader of a pipe went away",
        "knowledge/path_gate.py": "the read gate: a file opened read-only, never through a link in its place",
    }
    writes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            mode = next((a.value for a in node.args[:1] if isinstance(a, ast.Constant)), None)
            opens_to_write = name == "open" and isinstance(mode, str) and any(c in mode for c in "wax+")
            if name in {"write_text", "write_bytes", "mkstemp", "symlink_to"} or opens_to_write:
                writes.append(f"{rel}:{node.lineno} {name}")
            if isinstance(func, ast.Attribute) and name == "open" and getattr(func.value, "id", "") == "os":
                writes.append(f"{rel}:{node.lineno} os.open")
    stray = [w for w in writes if w.split(":")[0] not in allowed]
    assert stray == [], stray


def test_hook_script_refuses_links_before_writing(git_repo, victim):
    text = hooks.render_hook(None)
    assert "umask 077" in text
    assert '[ -L "$top/.knowledge" ] && exit 0' in text
    subprocess.run(["sh", "-n"], input=text, text=True, check=True)


def test_the_daemon_client_sends_nothing_to_a_socket_another_user_owns(tmp_path):
    """A `daemon.sock` someone else made (or a folder others may write) never receives the query."""
    import contextlib
    import socket
    import threading

    from knowledge.server import daemon_client

    folder = tmp_path / ".knowledge"
    folder.mkdir(mode=0o700)
    where = daemon_client.socket_path(folder)
    received: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(where))
    server.listen(1)

    def serve() -> None:
        try:
            connection, _ = server.accept()
        except OSError:  # the server closed at the end, no client having come: what the test wants
            return
        with connection, contextlib.suppress(OSError):  # the probe below hangs up without asking
            received.append(connection.recv(65536))
            connection.sendall(b'HTTP/1.0 200 OK\r\n\r\n{"forged": true}')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:  # our own server: SO_PEERCRED names us
        probe.connect(str(where))
        assert daemon_client.peer_uid(probe) == os.getuid()
    thread.join(5)
    received.clear()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    if os.getuid() == 0:
        os.chown(where, 65534, -1, follow_symlinks=False)
        assert daemon_client.request(folder, "POST", "/v1/search", {"query": "secret plans"}) is None
        os.chown(where, 0, -1, follow_symlinks=False)
    folder.chmod(0o777)  # a folder others may write: someone could have swapped the socket
    assert daemon_client.request(folder, "POST", "/v1/search", {"query": "secret plans"}) is None
    assert received == []
    server.close()


SECRET_NAMES = [
    ".envrc",
    ".htpasswd",
    "prod.tfstate",
    "terraform.tfstate.backup",
    "prod.tfvars",
    ".streamlit/secrets.toml",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_more_secret_files_are_never_read(name):
    from knowledge.config import DEFAULT_SECRET_FILES
    from knowledge.path_gate import is_secret_file

    assert is_secret_file(name, DEFAULT_SECRET_FILES)
