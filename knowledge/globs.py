"""Globs as the settings and `--path`/`--exclude` write them (gitignore-flavoured), compiled to regular expressions."""

from __future__ import annotations

import re
from collections.abc import Iterable


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-flavoured glob: `**/` matches any (or no) directories, `*` stays within one segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, patterns: Iterable[re.Pattern[str]]) -> bool:
    return any(p.match(path) for p in patterns)
