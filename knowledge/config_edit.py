"""Other tools' config files edited in place: one JSON/JSONC member, or one TOML table, changes; every other entry,
comment and the file's formatting stay byte-for-byte."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from .errors import KnowledgeError


# ---- TOML (Codex) -----------------------------------------------------------------------------------------------
def toml_table_set(text: str, path: Path, keys: list[str], values: dict[str, object] | None) -> str | None:
    """`text` with the table at `keys` given `values` (the other keys a user put in it kept), or (None) removed; the
    rest of the file byte-for-byte (tomlkit, a round-trip parser). None when nothing is left."""
    try:
        document = tomlkit.parse(text)
    except (tomlkit.exceptions.TOMLKitError, RecursionError) as exc:
        raise KnowledgeError(f"{path}: not valid TOML ({str(exc)[:120]}); fix it or pass --dry-run") from None
    parent: Any = document
    for key in keys[:-1]:
        if key not in parent:
            if values is None:
                return text or None
            inline = isinstance(parent, tomlkit.items.InlineTable)
            parent[key] = tomlkit.inline_table() if inline else tomlkit.table(is_super_table=True)
        parent = parent[key]
        if not isinstance(parent, dict):
            raise KnowledgeError(f"{path}: `{key}` is not a table; fix it or pass --dry-run")
    last = keys[-1]
    if values is None:
        if last in parent:
            del parent[last]
    else:
        current = parent.get(last)
        if current is not None and not isinstance(current, dict):
            raise KnowledgeError(f"{path}: `{'.'.join(keys)}` is not a table; fix it or pass --dry-run")
        if current is None:
            # inside an inline table (`mcp_servers = { other = {…} }`) ours is inline too: TOML allows no other
            table = tomlkit.inline_table() if isinstance(parent, tomlkit.items.InlineTable) else tomlkit.table()
            table.update(values)
            parent[last] = table
        else:
            for key in OWNED_KEYS - values.keys():
                current.pop(key, None)
            current.update(values)
    result = tomlkit.dumps(document)
    if values is None:  # the blank line that separated our table goes with it
        result = result.rstrip("\n") + "\n" * min(len(text) - len(text.rstrip("\n")), 1)
    return result if result.strip() else None


OWNED_KEYS = frozenset({"command", "args", "url", "bearer_token_env_var"})  # what `agents install` writes


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


def only_empty_containers(text: str) -> bool:
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


def json_member_set(text: str | None, path: Path, keys: list[str], value: object | None) -> str | None:
    """`text` with the member at `keys` set to `value` (None: removed), everything else as it was: a container of
    the wrong type, or a file nested past Python's depth, is refused in one line; keys a user added to our own entry
    (`env`, `cwd`, …) are kept."""
    try:
        return _json_member_set(text, path, keys, value)
    except RecursionError:
        raise KnowledgeError(f"{path}: nested too deeply to edit safely; fix it or pass --dry-run") from None


OWNED_JSON_KEYS = frozenset({"type", "command", "args", "url", "httpUrl", "headers", "enabled"})


def _json_member_set(text: str | None, path: Path, keys: list[str], value: object | None) -> str | None:
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
            if not last:
                raise KnowledgeError(f"{path}: `{key}` is not an object; fix it or pass --dry-run")
            if isinstance(member[3], _Object) and isinstance(value, dict):
                value = {**_user_keys(text[value_start:value_end]), **value}
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


def _user_keys(entry: str) -> dict[str, object]:
    """The keys of our existing entry that `agents install` does not write (a user's own additions)."""
    try:
        old = json.loads(entry)
    except ValueError:  # comments inside the entry: nothing we can carry over safely
        return {}
    return {k: v for k, v in old.items() if k not in OWNED_JSON_KEYS} if isinstance(old, dict) else {}


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
