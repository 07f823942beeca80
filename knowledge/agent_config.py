"""`knowledge agents install`: the MCP server entry in each coding agent's own config file, and a short instructions
section in AGENTS.md / CLAUDE.md, merged into what is there without touching anything else.

JSON (and JSONC) files are edited as text at the one member that changes, so every other entry, comment and the
file's formatting stay byte-for-byte; Codex's TOML gets its `[mcp_servers.knowledge]` table replaced or appended.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import KnowledgeError

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
- Before changing code, `docs_for` (a path, `path:LINE` or a symbol) lists the docs that describe it.
{END}
"""


@dataclass(frozen=True, slots=True)
class Client:
    name: str
    title: str
    project_file: str | None  # relative to the repository
    user_file: str | None  # relative to the home folder
    markers: tuple[str, ...]  # folders or files whose presence means the client is used (relative to root or home)
    entry: Callable[[list[str]], dict[str, object]]
    container: tuple[str, ...] = ("mcpServers",)
    instructions: str = "AGENTS.md"


def _stdio(command: list[str]) -> dict[str, object]:
    return {"command": command[0], "args": command[1:]}


CLIENTS = {
    client.name: client
    for client in (
        Client(
            "claude", "Claude Code", ".mcp.json", ".claude.json", (".claude", ".mcp.json", "CLAUDE.md"),
            lambda c: {"type": "stdio", **_stdio(c)}, instructions="CLAUDE.md",
        ),
        Client("cursor", "Cursor", ".cursor/mcp.json", ".cursor/mcp.json", (".cursor",), _stdio),
        Client(
            "vscode", "VS Code", ".vscode/mcp.json", ".config/Code/User/mcp.json", (".vscode", ".config/Code"),
            lambda c: {"type": "stdio", **_stdio(c)}, container=("servers",),
        ),
        Client("codex", "Codex CLI", ".codex/config.toml", ".codex/config.toml", (".codex",), _stdio),
        Client("gemini", "Gemini CLI", ".gemini/settings.json", ".gemini/settings.json", (".gemini",), _stdio),
        Client(
            "opencode", "OpenCode", "opencode.json", ".config/opencode/opencode.json",
            ("opencode.json", "opencode.jsonc", ".opencode", ".config/opencode"),
            lambda c: {"type": "local", "command": c, "enabled": True}, container=("mcp",),
        ),
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file is to be removed (it held nothing but our entry)

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
    root: Path, home: Path, clients: list[str], scope: str, command: list[str], remove: bool = False
) -> list[Change]:
    """The file changes that install (or with `remove`, uninstall) the server entry and the instructions."""
    changes = []
    for name in clients:
        client = CLIENTS[name]
        relative = client.project_file if scope == "project" else client.user_file
        if relative is None:
            raise KnowledgeError(f"{client.title} has no {scope}-scope config file")
        path = (root if scope == "project" else home) / relative
        before = path.read_text(encoding="utf-8") if path.is_file() else None
        if path.suffix == ".toml":
            after = _toml_set(before or "", None if remove else command)
        else:
            entry = None if remove else client.entry(command)
            after = _json_set(before, path, [*client.container, SERVER_NAME], entry)
            if remove and after is not None and _only_empty_containers(after):
                after = None  # the file held nothing but our entry: uninstall leaves no trace
        changes.append(Change(path, before, after))
    if scope == "project":
        for document in dict.fromkeys(["AGENTS.md", *(CLIENTS[n].instructions for n in clients)]):
            path = root / document
            before = path.read_text(encoding="utf-8") if path.is_file() else None
            changes.append(Change(path, before, _instructions(before, remove)))
    return [change for change in changes if change.changed]


def apply(changes: list[Change]) -> None:
    for change in changes:
        if change.after is None:
            change.path.unlink(missing_ok=True)
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = change.path.with_name(f".{change.path.name}.knowledge-tmp")
        scratch.write_text(change.after, encoding="utf-8")
        if change.path.exists():
            os.chmod(scratch, change.path.stat().st_mode & 0o7777)
        scratch.replace(change.path)


def server_command(on_path: str | None, interpreter: str) -> list[str]:
    """`knowledge mcp` when the `knowledge` on PATH is this installation's (a config others can share); else this
    installation's script by its full path, or `python -m knowledge`."""
    here = Path(interpreter).parent
    if on_path and Path(on_path).parent == here:
        return ["knowledge", "mcp"]
    script = here / "knowledge"
    return [str(script), "mcp"] if script.exists() else [interpreter, "-m", "knowledge", "mcp"]


# ---- Markdown instructions between markers ----------------------------------------------------------------------
def _instructions(text: str | None, remove: bool) -> str | None:
    if text is not None and BEGIN in text and END in text:
        start, end = text.index(BEGIN), text.index(END) + len(END)
        end += 1 if text[end : end + 1] == "\n" else 0
        if remove:
            rest = (text[:start] + text[end:]).rstrip("\n")
            return rest + "\n" if rest else None
        return text[:start] + INSTRUCTIONS + text[end:]
    if remove:
        return text
    if not text:
        return INSTRUCTIONS
    return text.rstrip("\n") + "\n\n" + INSTRUCTIONS


# ---- TOML (Codex) -----------------------------------------------------------------------------------------------
_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_set(text: str, command: list[str] | None) -> str | None:
    """`text` with the `[mcp_servers.knowledge]` table (and its subtables) replaced, appended or removed."""
    lines = text.splitlines(keepends=True)
    ours = f"mcp_servers.{SERVER_NAME}"
    start = end = None
    for number, line in enumerate(lines):
        table = _TABLE.match(line)
        if table is None:
            continue
        name = table.group(1).replace('"', "")
        if name == ours or name.startswith(ours + "."):
            start = number if start is None else start
            end = None
        elif start is not None and end is None:
            end = number
    block = f"[{ours}]\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(command[1:])}\n" if command else ""
    if start is None:
        if command is None:
            return text or None
        separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return text + separator + block
    end = len(lines) if end is None else end
    while end > start and not lines[end - 1].strip():  # keep the blank lines before the next table
        end -= 1
    if command is None and end == len(lines) and start > 0 and not lines[start - 1].strip():
        start -= 1  # the blank line `install` put before a table it appended
    result = "".join(lines[:start]) + block + "".join(lines[end:])
    return result if result.strip() else None


# ---- JSON / JSONC, edited at one member -------------------------------------------------------------------------
@dataclass
class _Object:
    open: int  # offset of "{"
    close: int  # offset of "}"
    members: dict[str, tuple[int, int, int, object]]  # key -> (key start, value start, value end, value)


class _Scanner:
    """Just enough of a JSON-with-comments parser to know where each member of an object starts and ends."""

    def __init__(self, text: str, path: Path) -> None:
        self.text, self.path, self.at = text, path, 0

    def fail(self, what: str) -> KnowledgeError:
        line = self.text.count("\n", 0, self.at) + 1
        return KnowledgeError(f"{self.path}: not valid JSON at line {line} ({what}); fix it or pass --dry-run")

    def skip(self) -> None:
        while self.at < len(self.text):
            if self.text[self.at].isspace():
                self.at += 1
            elif self.text.startswith("//", self.at):
                newline = self.text.find("\n", self.at)
                self.at = len(self.text) if newline < 0 else newline
            elif self.text.startswith("/*", self.at):
                close = self.text.find("*/", self.at + 2)
                if close < 0:
                    raise self.fail("an unclosed comment")
                self.at = close + 2
            else:
                return

    def value(self) -> object:
        self.skip()
        if self.at >= len(self.text):
            raise self.fail("unexpected end")
        char = self.text[self.at]
        if char == "{":
            return self.object()
        if char == "[":
            self.at += 1
            items: list[object] = []
            while True:
                self.skip()
                if self.text.startswith("]", self.at):
                    self.at += 1
                    return items
                items.append(self.value())
                self.skip()
                if self.text.startswith(",", self.at):
                    self.at += 1
        if char == '"':
            decoder = json.JSONDecoder()
            try:
                value, self.at = decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as exc:
                raise self.fail(exc.msg) from None
            return value
        literal = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null").match(self.text, self.at)
        if literal is None:
            raise self.fail(f"unexpected {char!r}")
        self.at = literal.end()
        return json.loads(literal.group(0))

    def object(self) -> _Object:
        found = _Object(self.at, -1, {})
        self.at += 1
        while True:
            self.skip()
            if self.text.startswith("}", self.at):
                found.close = self.at
                self.at += 1
                return found
            key_start = self.at
            key = self.value()
            if not isinstance(key, str):
                raise self.fail("a key that is not a string")
            self.skip()
            if not self.text.startswith(":", self.at):
                raise self.fail("a missing ':'")
            self.at += 1
            self.skip()
            value_start = self.at
            value = self.value()
            found.members[key] = (key_start, value_start, self.at, value)
            self.skip()
            if self.text.startswith(",", self.at):
                self.at += 1


def _only_empty_containers(text: str) -> bool:
    def empty(value: object) -> bool:
        return isinstance(value, dict) and all(empty(inner) for inner in value.values())

    try:
        return empty(json.loads(text))
    except ValueError:  # comments: a file someone wrote, leave it
        return False


def _indent_of(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def _dump(value: object, indent: str, unit: str) -> str:
    dumped = json.dumps(value, indent=len(unit) if unit else 2, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _json_set(text: str | None, path: Path, keys: list[str], value: object | None) -> str | None:
    """`text` with the member at `keys` set to `value` (None: removed), everything else as it was."""
    if not text or not text.strip():
        if value is None:
            return text
        nested: object = value
        for key in reversed(keys):
            nested = {key: nested}
        return json.dumps(nested, indent=2, ensure_ascii=False) + "\n"
    scanner = _Scanner(text, path)
    scanner.skip()
    if not text.startswith("{", scanner.at):
        raise scanner.fail("the top level is not an object")
    current = scanner.object()
    unit = _indent_of(text, min((m[0] for m in current.members.values()), default=current.close)) or "  "
    parents: list[tuple[_Object, str]] = []
    for depth, key in enumerate(keys):
        member = current.members.get(key)
        last = depth == len(keys) - 1
        if value is None and not last and (member is None or not isinstance(member[3], _Object)):
            return text  # nothing of ours to remove
        if member is not None and (last or not isinstance(member[3], _Object)):
            key_start, value_start, value_end, _ = member
            if value is None:  # an emptied container goes too, up to (not including) the top level
                while len(current.members) == 1 and parents:
                    current, key = parents.pop()
                return _remove_member(text, current, key)
            if not last:  # a container of the wrong type: replace it whole
                nested = value
                for inner in reversed(keys[depth + 1 :]):
                    nested = {inner: nested}
                value = nested
            return text[:value_start] + _dump(value, _indent_of(text, key_start), unit) + text[value_end:]
        if member is None:
            if value is None:
                return text
            nested = value
            for inner in reversed(keys[depth + 1 :]):
                nested = {inner: nested}
            return _insert_member(text, current, key, nested, unit)
        parents.append((current, key))
        current = member[3]  # type: ignore[assignment]
    return text


def _insert_member(text: str, target: _Object, key: str, value: object, unit: str) -> str:
    outer = _indent_of(text, target.open)
    if target.members:
        last_end = max(m[2] for m in target.members.values())
        indent = _indent_of(text, max(m[0] for m in target.members.values()))
        addition = f",\n{indent}{json.dumps(key)}: {_dump(value, indent, unit)}"
        return text[:last_end] + addition + text[last_end:]
    indent = outer + unit
    inner = f"\n{indent}{json.dumps(key)}: {_dump(value, indent, unit)}\n{outer}"
    return text[: target.open + 1] + inner + text[target.close :]


def _remove_member(text: str, target: _Object, key: str) -> str:
    ordered = sorted(target.members.items(), key=lambda item: item[1][0])
    position = next(i for i, (name, _) in enumerate(ordered) if name == key)
    key_start, _, value_end, _ = ordered[position][1]
    if position > 0:  # from the end of the previous member's value: its comma goes with us
        start = ordered[position - 1][1][2]
        return text[:start] + text[value_end:]
    if len(ordered) > 1:  # first of several: up to the next member's key
        return text[:key_start] + text[ordered[1][1][0] :]
    return text[: target.open + 1] + text[target.close :]
