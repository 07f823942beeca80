"""What a doc section refers to in the repository: relative links and paths, and inline-code names.

A reference is a string: `link:docs/usage.md` (a Markdown link or a front-matter file list: it must resolve),
`path:knowledge/kb.py` or `path:src/app.py:40` (a path in inline code: checked once it was a tracked file), or
`symbol:KnowledgeBase.search`. Symbols are candidates: drift and docs-for count only those naming a code entity.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

# front-matter keys whose values list files the doc is about
FRONT_MATTER_KEYS = ("files", "code", "source", "sources", "paths", "related_files")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PATH_LIKE = re.compile(r"^(?:\./)?[\w.\-]+(?:/[\w.\-]+)*\.[A-Za-z0-9]{1,8}(?::(\d+)(?:-\d+)?)?$")
_SYMBOL_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|#)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
_NOT_SYMBOLS = frozenset({"true", "false", "null", "none", "nil", "self", "this", "yes", "no"})


_HISTORY_FILE = re.compile(r"^(changes|changelog|history|news|releases?|release-notes)([._-].*)?$", re.IGNORECASE)
_VERSION_HEADING = re.compile(r"^\[?(v(ersion)?\s*)?\d+\.\d+(\.\d+)?\b", re.IGNORECASE)


def is_history(path: str, section: str) -> bool:
    """A changelog's section (CHANGES.md, CHANGELOG, HISTORY, NEWS, release notes) or a version-titled one
    (`## 8.1.0`, `Version 2.0 (2024-01-01)`): history, which names old APIs by design."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    heading = section.rsplit(" > ", 1)[-1].strip()
    return bool(_HISTORY_FILE.match(stem) or _VERSION_HEADING.match(heading))


def _normal_path(path: str) -> str | None:
    path = posixpath.normpath(path)
    if path.startswith(("../", "/")) or path in {".", ".."}:
        return None
    return path


def _link_target(target: str, doc_path: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.\-]*:", target, re.IGNORECASE) or target.startswith("#"):
        return None  # a URL, mailto:, or an anchor in the same page
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return None
    base = posixpath.dirname(doc_path)
    return _normal_path(posixpath.join(base, target) if not target.startswith("/") else target.lstrip("/"))


def _code_reference(span: str) -> str | None:
    span = span.strip().lstrip("~!")  # MyST/Sphinx roles: {class}`~pkg.Name` shows `Name`, names `pkg.Name`
    match = _PATH_LIKE.match(span)
    if match and ("/" in span or match.group(1)):
        path, _, line = span.partition(":")
        normal = _normal_path(path)
        if normal is None:
            return None
        return f"path:{normal}:{line.split('-')[0]}" if line else f"path:{normal}"
    if _SYMBOL_LIKE.match(span) and span.lower() not in _NOT_SYMBOLS and len(span) > 2:
        name = span.replace("::", ".").replace("#", ".")  # `save()` keeps its parentheses: written as a call
        if not name.isupper():  # PATH, HEAD, README: words, not names
            return f"symbol:{name}"
    return None


def in_fence(lines: list[str]) -> bool:
    """Whether the text after `lines` is inside a fenced code block (a section's part that starts mid-block)."""
    return fence_states(lines)[-1]


def fence_states(lines: list[str]) -> list[bool]:
    """For each i in 0..len(lines), whether the text after lines[:i] is inside a fenced code block: read once per
    section (asked once per part, a section of 80,000 lines cost 30 s)."""
    states = [False]
    for line in lines:
        states.append(states[-1] != bool(_FENCE.match(line)))
    return states


def extract(content: str, doc_path: str, fenced: bool = False) -> tuple[str, ...]:
    """References in one section's Markdown (code blocks skipped), in order of appearance, without repeats;
    `fenced`: the content starts inside a code block."""
    found: list[str] = []
    for line in content.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _LINK.finditer(line):
            target = _link_target(match.group(1), doc_path)
            if target:
                found.append(f"link:{target}")
        for match in _CODE_SPAN.finditer(_LINK.sub("", line)):
            reference = _code_reference(match.group(1))
            if reference:
                found.append(reference)
    return tuple(dict.fromkeys(found))


def from_front_matter(data: dict[str, object]) -> tuple[str, ...]:
    """Paths listed under the front-matter keys that name files (a string or a list of strings)."""
    found: list[str] = []
    for key in FRONT_MATTER_KEYS:
        value = data.get(key)
        values: Iterable[object] = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for item in values:
            if isinstance(item, str) and (normal := _normal_path(item.strip().lstrip("/"))):
                found.append(f"link:{normal}")
    return tuple(dict.fromkeys(found))


def split(reference: str) -> tuple[str, str, int | None]:
    """(`link`, `path` or `symbol`, the path or name, the line or None)."""
    kind, _, rest = reference.partition(":")
    if kind in {"link", "path"}:
        path, _, line = rest.partition(":")
        return kind, path, int(line) if line.isdigit() else None
    return kind, rest.removesuffix("()"), None


def distinctive(name: str) -> bool:
    """A name that is code on its own: dotted, snake_case, camelCase or written as a call (`reindex_changes`,
    `save()`; not `search`, which is as often a command or a word)."""
    return name.endswith("()") or "." in name or "_" in name.strip("_") or any(c.isupper() for c in name[1:])
