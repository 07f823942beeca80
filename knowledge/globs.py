"""Globs as the settings and `--path`/`--exclude` write them (gitignore-flavoured), matched in linear time."""

from __future__ import annotations

from collections.abc import Iterable

from .patterns import UserPattern, glob


def glob_to_regex(pattern: str) -> UserPattern:
    """A gitignore-flavoured glob: `**/` matches any (or no) directories, `*` stays within one segment."""
    return glob(pattern)


def matches_any(path: str, patterns: Iterable[UserPattern]) -> bool:
    return any(p.fullmatch(path) for p in patterns)
