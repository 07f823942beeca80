"""Patterns users write (`--regex`, `secret_patterns`, path and file-name globs from settings, the CLI, HTTP and MCP),
compiled by RE2: matching runs in time linear in the text, whatever the pattern, so no pattern can hang an index or
a server. The secret detectors, which run over every file a repository holds, are compiled here too (`fixed_regex`):
a hostile file must not make them backtrack."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Protocol

import re2

from .errors import KnowledgeError

MAX_PATTERN_CHARS = 200  # every user pattern, regex or glob, wherever it comes from


class PatternMatch(Protocol):
    def start(self, group: int | str = ...) -> int: ...
    def end(self, group: int | str = ...) -> int: ...
    def group(self, group: int | str = ...) -> str | None: ...
    def groups(self) -> tuple[str | None, ...]: ...


class UserPattern(Protocol):
    def search(self, text: str) -> PatternMatch | None: ...
    def fullmatch(self, text: str) -> PatternMatch | None: ...
    def finditer(self, text: str) -> Iterator[PatternMatch]: ...


class _Linear:
    """An RE2 pattern that also takes text holding lone surrogates (a non-UTF-8 file name read with surrogateescape,
    which RE2 cannot encode): each is matched as U+FFFD, one character for one, so offsets hold."""

    __slots__ = ("_compiled",)

    def __init__(self, compiled: UserPattern) -> None:
        self._compiled = compiled

    def search(self, text: str) -> PatternMatch | None:
        return self._compiled.search(_encodable(text))

    def fullmatch(self, text: str) -> PatternMatch | None:
        return self._compiled.fullmatch(_encodable(text))

    def finditer(self, text: str) -> Iterator[PatternMatch]:
        return self._compiled.finditer(_encodable(text))


def _encodable(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


class PatternError(KnowledgeError):
    """A user pattern that is too long or not one RE2 compiles (back-references and look-arounds are not)."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


@functools.lru_cache(maxsize=512)
def user_regex(pattern: str) -> UserPattern:
    """`pattern` compiled for linear-time matching, or PatternError naming it and the problem."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"{pattern[:40]!r}…: {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    if _encodable(pattern) != pattern:
        raise PatternError(f"{pattern!r}: not valid UTF-8")
    try:
        compiled: UserPattern = _Linear(re2.compile(pattern, _options()))
    except re2.error as exc:
        said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            f"{pattern!r} is not a regular expression RE2 runs ({said}; no back-references or look-arounds)"
        ) from None
    return compiled


class _Named:
    """An RE2 match whose groups are also asked by name (RE2's own `start` and `end` take numbers only)."""

    __slots__ = ("_index", "_match")

    def __init__(self, match: PatternMatch, index: dict[str, int]) -> None:
        self._match, self._index = match, index

    def _number(self, group: int | str) -> int:
        return self._index[group] if isinstance(group, str) else group

    def start(self, group: int | str = 0) -> int:
        return self._match.start(self._number(group))

    def end(self, group: int | str = 0) -> int:
        return self._match.end(self._number(group))

    def group(self, group: int | str = 0) -> str | None:
        return self._match.group(self._number(group))

    def groups(self) -> tuple[str | None, ...]:
        return self._match.groups()


class _NamedLinear(_Linear):
    __slots__ = ("_index",)

    def __init__(self, compiled: UserPattern, index: dict[str, int]) -> None:
        super().__init__(compiled)
        self._index = index

    def search(self, text: str) -> PatternMatch | None:
        found = super().search(text)
        return None if found is None else _Named(found, self._index)

    def fullmatch(self, text: str) -> PatternMatch | None:
        found = super().fullmatch(text)
        return None if found is None else _Named(found, self._index)

    def finditer(self, text: str) -> Iterator[PatternMatch]:
        return (_Named(found, self._index) for found in super().finditer(text))


def fixed_regex(pattern: str) -> UserPattern:
    """One of knowledge's own patterns for RE2 (no length limit; a pattern that does not compile is a bug here);
    its matches answer groups by name too."""
    compiled = re2.compile(pattern, _options())
    return _NamedLinear(compiled, dict(compiled.groupindex))


def glob(pattern: str) -> UserPattern:
    """A gitignore-flavoured path glob: `**/` matches any (or no) folders, `**` anything, `*` and `?` stay within one
    segment. Match with `fullmatch`."""
    _check_glob(pattern)
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] in "*?":
            out.append("[^/]*" if pattern[i] == "*" else "[^/]")
            i += 1
        else:
            out.append(re2.escape(pattern[i]))
            i += 1
    return _compiled_glob("".join(out))


def name_glob(pattern: str) -> UserPattern:
    """A file-name glob as fnmatch reads it (`*`, `?`, `[abc]`, `[!abc]`), for `secret_files`."""
    _check_glob(pattern)
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        close = pattern.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif close > 0:
            body = pattern[i + 1 : close]
            negate = body.startswith("!")
            members = "".join(re2.escape(c) if c != "-" else "-" for c in body[negate:])
            out.append(f"[{'^' if negate else ''}{members}]")
            i = close
        else:
            out.append(re2.escape(char))
        i += 1
    return _compiled_glob("".join(out))


def _check_glob(pattern: str) -> None:
    if _encodable(pattern) != pattern:
        raise PatternError(f"glob {pattern!r}: not valid UTF-8")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"glob {pattern[:40]!r}…: {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")


@functools.lru_cache(maxsize=1024)
def _compiled_glob(regex: str) -> UserPattern:
    return _Linear(re2.compile("(?s)" + regex, _options()))
