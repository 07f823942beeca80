"""Which files are indexed and as what: discovery (git or a .gitignore-aware walk), decoding, hashing."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from . import git
from .config import Settings
from .globs import glob_to_regex, matches_any
from .path_gate import Refusal, resolve_inside
from .patterns import PatternError, name_glob
from .records import INDEX_DIR_NAME, FileProblem, SourceFile
from .secrets import SecretRedactor

BINARY_SNIFF_BYTES = 8192


def _gitignore_patterns(folder: Path) -> list[str]:
    try:
        lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ignored(rel: str, name: str, is_dir: bool, rules: list[tuple[str, str]]) -> bool:
    ignored = False
    for base, rule in rules:
        negate = rule.startswith("!")
        rule = rule[1:] if negate else rule
        if rule.endswith("/"):
            if not is_dir:
                continue
            rule = rule.rstrip("/")
        local = rel[len(base) + 1 :] if base else rel
        anchored = "/" in rule
        target = local if anchored else name
        try:
            matched = name_glob(rule.lstrip("/")).fullmatch(target)  # a committed .gitignore: linear time
        except PatternError:
            continue  # a rule over 200 characters names no file of ours
        if matched:
            ignored = not negate
    return ignored


def ignored_outside_git(root: Path, rel: str) -> bool:
    """Outside git: whether the .gitignore files on the way to `rel` exclude it or a folder above it, as
    `walk_files` reads them (so `show` serves nothing indexing would skip)."""
    rules: list[tuple[str, str]] = []
    folder, rel_folder = root, ""
    parts = rel.split("/")
    for number, part in enumerate(parts):
        rules += [(rel_folder, rule) for rule in _gitignore_patterns(folder)]
        inner = f"{rel_folder}/{part}" if rel_folder else part
        if _ignored(inner, part, number < len(parts) - 1, rules):
            return True
        folder, rel_folder = folder / part, inner
    return False


def walk_files(root: Path) -> list[str]:
    """Files under `root` outside git, honouring .gitignore files at every level (common patterns only)."""
    found: list[str] = []
    stack: list[tuple[Path, list[tuple[str, str]]]] = [(root, [])]
    while stack:
        folder, inherited = stack.pop()
        rel_folder = folder.relative_to(root).as_posix() if folder != root else ""
        rules = inherited + [(rel_folder, rule) for rule in _gitignore_patterns(folder)]
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.name in {".git", INDEX_DIR_NAME} or _ignored(rel, entry.name, is_dir, rules):
                continue
            if is_dir:
                stack.append((Path(entry.path), rules))
            elif entry.is_file(follow_symlinks=False):
                found.append(rel)
    return sorted(found)


KINDS = ("docs", "code")


def candidate_paths(root: Path, settings: Settings, kind: str = "docs") -> list[str]:
    """Repository-relative paths of `kind` ("docs" or "code"): its include globs minus its exclude globs.

    A path that is a doc is never also code.
    """
    inside_git = git.repo_root(root) is not None
    names = git.listed_files(root) if inside_git else walk_files(root)
    always_out = [glob_to_regex(".knowledge/**")]
    docs_in = [glob_to_regex(p) for p in settings.include]
    docs_out = [glob_to_regex(p) for p in settings.exclude] + always_out
    if kind == "docs":
        return [n for n in names if matches_any(n, docs_in) and not matches_any(n, docs_out)]
    code_in = [glob_to_regex(p) for p in settings.code_include]
    code_out = [glob_to_regex(p) for p in settings.code_exclude] + always_out
    return [
        n for n in names if matches_any(n, code_in) and not matches_any(n, code_out) and not matches_any(n, docs_in)
    ]


def read_source(root: Path, rel: str, settings: Settings, kind: str = "docs") -> SourceFile | FileProblem:
    """Decode one file, or say in one line why it cannot be indexed."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # git hands such names over with surrogate escapes; no store can hold them as text
        printable = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return FileProblem(printable, "file name is not valid UTF-8 (rename it to index it)")
    checked = resolve_inside(root, rel, settings.secret_files)
    if isinstance(checked, Refusal):
        return FileProblem(rel, checked.reason)
    path = checked
    try:
        info = path.stat()
        size = info.st_size
        if size > settings.max_file_bytes:
            return FileProblem(rel, f"too large ({size:,} bytes > max_file_bytes {settings.max_file_bytes:,})")
        data = path.read_bytes()
    except FileNotFoundError:
        return FileProblem(rel, "listed by git but missing from the work tree")
    except OSError as exc:
        return FileProblem(rel, f"unreadable: {exc.strerror or exc}")
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return FileProblem(rel, "binary content (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileProblem(rel, f"not valid UTF-8 (byte {exc.start}: {exc.reason})")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    redactions: tuple[tuple[int, str], ...] = ()
    if settings.redact_secrets:
        redacted = redactor(settings.secret_patterns).redact(text)
        text = redacted.text
        redactions = tuple((r.line, r.kind) for r in redacted.redactions)
    return SourceFile(
        path=rel,
        kind="doc" if kind == "docs" else "code",
        text=text,
        content_hash=hashlib.sha256(data).hexdigest(),
        stat=(info.st_mtime_ns, len(data)),
        redactions=redactions,
    )


@functools.lru_cache(maxsize=4)
def redactor(extra_patterns: tuple[str, ...]) -> SecretRedactor:
    return SecretRedactor(extra_patterns)
