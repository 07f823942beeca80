"""`knowledge agents install`: the MCP server entry in each coding agent's own config file, and a short instructions
section in AGENTS.md / CLAUDE.md, merged into what is there without touching anything else.

JSON (and JSONC) files are edited as text at the one member that changes, so every other entry, comment and the
file's formatting stay byte-for-byte; Codex's TOML gets its `[mcp_servers.knowledge]` table replaced or appended.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .child import python_argv
from .config_edit import json_member_set, only_empty_containers, toml_table_set
from .errors import KnowledgeError
from .fs import gated_path, remove_file, write_file
from .path_gate import generated_file

SERVER_NAME = "knowledge"
SCOPES = ("project", "user")
BEGIN, END = "<!-- knowledge:begin -->", "<!-- knowledge:end -->"
INSTRUCTIONS = f"""{BEGIN}
## Searching this repository (knowledge)

This repository is indexed by `knowledge` (MCP server `knowledge`; the same as the `knowledge` command line).
- Ask `search` first, in plain words ("how are hooks installed"), before reading files or grepping: it returns the
  doc sections and functions that answer, best first, with `path:line_start-line_end` to cite.
- Results carry their text while the token `budget` lasts (default 2,000); the rest are pointers: open them with
  `get_source` (path and lines, or the result's `id`) only when you need them.
- `metadata_only: true` is the cheapest call when you only need where something is; `kind: "code"` or `"docs"`
  narrows it; `exact: true` lists every line with a name, as grep does (`match: "regex"` for a pattern).
- Given a task or an issue, `locate` with its text as filed (title, body, tracebacks) answers which files and
  functions to change, best first, with the evidence for each: read those before exploring.
- Before changing code, `docs_for` (a path, `path:LINE` or a symbol) lists the docs that describe it.
{END}
"""


@dataclass(frozen=True, slots=True)
class Remote:
    """A `knowledge mcp --http` (or `serve`) at `url`: clients send the bearer token from `token_variable`, which the
    config names and never holds."""

    url: str
    token_variable: str = "KNOWLEDGE_TOKEN"


@dataclass(frozen=True, slots=True)
class Client:
    name: str
    title: str
    project_file: str | None  # relative to the repository
    user_file: str | None  # relative to the home folder
    markers: tuple[str, ...]  # folders or files whose presence means the client is used (relative to root or home)
    entry: Callable[[list[str]], dict[str, object]]
    remote: Callable[[Remote], dict[str, object]] | None = None  # the entry for an HTTP server, as documented
    container: tuple[str, ...] = ("mcpServers",)
    instructions: str = "AGENTS.md"


def _stdio(command: list[str]) -> dict[str, object]:
    return {"command": command[0], "args": command[1:]}


def _bearer(reference: str) -> dict[str, object]:
    return {"headers": {"Authorization": f"Bearer {reference}"}}


def _codex(server: list[str] | Remote) -> dict[str, object]:
    """Codex's `[mcp_servers.knowledge]` table (TOML): a command, or a URL with the token's variable."""
    if isinstance(server, Remote):
        return {"url": server.url, "bearer_token_env_var": server.token_variable}
    return {"command": server[0], "args": server[1:]}


CLIENTS = {
    client.name: client
    for client in (
        Client(
            "claude", "Claude Code", ".mcp.json", ".claude.json", (".claude", ".mcp.json", "CLAUDE.md"),
            lambda c: {"type": "stdio", **_stdio(c)},
            lambda r: {"type": "http", "url": r.url, **_bearer(f"${{{r.token_variable}}}")},
            instructions="CLAUDE.md",
        ),
        Client(
            "cursor", "Cursor", ".cursor/mcp.json", ".cursor/mcp.json", (".cursor",), _stdio,
            lambda r: {"url": r.url, **_bearer(f"${{env:{r.token_variable}}}")},
        ),
        Client(
            "vscode", "VS Code", ".vscode/mcp.json", ".config/Code/User/mcp.json", (".vscode", ".config/Code"),
            lambda c: {"type": "stdio", **_stdio(c)},
            lambda r: {"type": "http", "url": r.url, **_bearer(f"${{env:{r.token_variable}}}")},
            container=("servers",),
        ),
        Client("codex", "Codex CLI", ".codex/config.toml", ".codex/config.toml", (".codex",), _stdio),
        Client(
            "gemini", "Gemini CLI", ".gemini/settings.json", ".gemini/settings.json", (".gemini",), _stdio,
            lambda r: {"httpUrl": r.url, **_bearer(f"${{{r.token_variable}}}")},
        ),
        Client(
            "opencode", "OpenCode", "opencode.json", ".config/opencode/opencode.json",
            ("opencode.json", "opencode.jsonc", ".opencode", ".config/opencode"),
            lambda c: {"type": "local", "command": c, "enabled": True},
            lambda r: {"type": "remote", "url": r.url, "enabled": True, **_bearer(f"{{env:{r.token_variable}}}")},
            container=("mcp",),
        ),
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Change:
    path: Path  # the file itself: a symlink's target, once the write gate allowed it
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file is to be removed (it held nothing but our entry)
    within: Path  # the folder the write must stay in: the repository, or the home folder for `--scope user`
    mode: int = 0o644  # a new file's mode: a repository's config is shared, a user's own is private

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, root: Path) -> str:
        name = str(self.path.relative_to(root)) if self.path.is_relative_to(root) else str(self.path)
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=f"a/{name}" if self.before is not None else "/dev/null",
            tofile=f"b/{name}" if self.after is not None else "/dev/null",
        )
        return "".join(lines)


def detect(root: Path, home: Path, scope: str) -> list[str]:
    """The clients whose config folders or files exist (in the repository for `project`, the home folder for `user`)."""
    base = root if scope == "project" else home
    return [name for name, client in CLIENTS.items() if any((base / m).exists() for m in client.markers)]


def plan(
    root: Path,
    home: Path,
    clients: list[str],
    scope: str,
    command: list[str] | Remote,
    remove: bool = False,
    documents: tuple[str, ...] | None = None,
) -> list[Change]:
    """The file changes that install (or with `remove`, uninstall) the server entry and the instructions: a local
    server started by `command` (stdio), or a `Remote` one over HTTP with a bearer token."""
    changes = []
    for name in clients:
        client = CLIENTS[name]
        relative = client.project_file if scope == "project" else client.user_file
        if relative is None:
            raise KnowledgeError(f"{client.title} has no {scope}-scope config file")
        within = root if scope == "project" else home
        path = (
            generated_file(root, root / relative)
            if scope == "project"
            else gated_path(within, within / relative, follow_final=True)
        )
        before = _read(path)
        if path.suffix == ".toml":
            table = None if remove else _codex(command)
            after = toml_table_set(before or "", path, ["mcp_servers", SERVER_NAME], table)
        else:
            entry = None
            if not remove and isinstance(command, Remote):
                assert client.remote is not None
                entry = client.remote(command)
            elif not remove and not isinstance(command, Remote):
                entry = client.entry(command)
            after = json_member_set(before, path, [*client.container, SERVER_NAME], entry)
            if remove and after is not None and only_empty_containers(after):
                after = None  # the file held nothing but our entry: uninstall leaves no trace
        changes.append(Change(path, before, after, within, 0o644 if scope == "project" else 0o600))
    if scope == "project":
        seen: set[Path] = set()
        named = documents if documents is not None else ("AGENTS.md", *(CLIENTS[n].instructions for n in clients))
        for document in dict.fromkeys(named):
            path = generated_file(root, root / document)
            if path in seen:  # CLAUDE.md -> AGENTS.md: one file, one section
                continue
            seen.add(path)
            before = _read(path)
            changes.append(Change(path, before, _instructions(before, remove, path), root))
    return [change for change in changes if change.changed]


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    if not path.is_file():
        raise KnowledgeError(f"{path}: not a regular file; knowledge edits only files")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeError(f"{path}: unreadable ({exc}); fix it or pass --dry-run") from None


def apply(changes: list[Change]) -> None:
    """Write each change through the write gate: inside its folder, a symlink followed only to a file of ours there,
    by a scratch file made with mkstemp beside it and `os.replace`."""
    for change in changes:
        if change.after is None:
            remove_file(change.within, change.path)
        else:
            write_file(change.within, change.path, change.after, mode=change.mode, follow_final=True)


def server_command(on_path: str | None, interpreter: str, in_virtualenv: bool = False) -> list[str]:
    """`knowledge mcp` when the `knowledge` on PATH is this installation's and outside a virtual environment (an
    agent started from a desktop, without this shell's activated venv, finds it too); else this installation's
    script by its full path, or `python -m knowledge`."""
    here = Path(interpreter).parent
    if on_path and Path(on_path).parent == here and not in_virtualenv:
        return ["knowledge", "mcp"]
    script = here / "knowledge"
    return [str(script), "mcp"] if script.exists() else python_argv("-m", "knowledge", "mcp", interpreter=interpreter)


# ---- Markdown instructions between markers ----------------------------------------------------------------------
def _instructions(text: str | None, remove: bool, path: Path | None = None) -> str | None:
    """`text` with our section put in (or taken out). The section is what lies between a line that is exactly the
    begin marker and the next line that is exactly the end marker; markers named inside prose are prose. A begin
    without its end (or an end before any begin) is refused: editing around it would copy or lose the user's text."""
    lines = (text or "").splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if begins or ends:
        if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
            raise KnowledgeError(
                f"{path or 'the instructions file'}: its {BEGIN} / {END} lines are not one pair in that order "
                f"({len(begins)} begin, {len(ends)} end); fix them by hand (knowledge edits only between one pair)"
            )
        before, after = "".join(lines[: begins[0]]), "".join(lines[ends[0] + 1 :])
        if remove:
            rest = (before + after).rstrip("\n")
            return rest + "\n" if rest else None
        return before + INSTRUCTIONS + after
    if remove:
        return text
    if not text:
        return INSTRUCTIONS
    return text.rstrip("\n") + "\n\n" + INSTRUCTIONS
