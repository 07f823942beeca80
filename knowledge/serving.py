"""Serving a file's exact current lines: every path through the one path gate (inside the repository, not a secret
file, not through a symlink out), secrets redacted as the index redacts them, line numbers as the chunker counts them,
and a chunk's lines said plainly when its file changed since it was indexed."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from . import git
from .config import Settings
from .corpus import ignored_outside_git, redactor
from .errors import KnowledgeError, PathOutsideRepositoryError
from .kind import KindIndex
from .path_gate import servable
from .records import SourceText


def relative_path(root: Path, path: str | Path, base: Path | None = None) -> str:
    """`path` (absolute, or relative to `base`) as a repository-relative POSIX path; refuses escapes."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = (base or Path.cwd()) / candidate
    resolved = Path(os.path.normpath(candidate))  # lexical: a deleted path must still resolve
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        raise PathOutsideRepositoryError(f"{path}: outside the repository root {root}") from None


def readable(root: Path, settings: Settings, rel: str) -> Path:
    """The file `rel` names, through the one path gate for serving; raises with a one-line reason otherwise."""
    in_git = git.repo_root(root) is not None
    checked = servable(root, rel, settings.secret_files, in_git)
    if isinstance(checked, Path) and not in_git and ignored_outside_git(root, rel):
        raise KnowledgeError(f"{rel}: ignored by a .gitignore, so not served")
    if isinstance(checked, Path):
        return checked
    if not checked.perimeter and "missing" in checked.reason:
        raise KnowledgeError(f"{rel}: no such file in {root}")
    error = PathOutsideRepositoryError if checked.perimeter else KnowledgeError
    raise error(f"{rel}: {checked.reason}")


def source(root: Path, settings: Settings, path: str, start: int | None = None, end: int | None = None) -> SourceText:
    """Exact current lines of a file in the repository (1-based, inclusive); refuses paths outside it."""
    rel = relative_path(root, path, root)
    target = readable(root, settings, rel)
    if target.stat().st_size > settings.max_file_bytes:
        raise KnowledgeError(f"{path}: larger than max_file_bytes ({settings.max_file_bytes:,})")
    try:
        text = target.read_bytes().decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        if settings.redact_secrets:
            text = redactor(settings.secret_patterns).redact(text).text
        # The chunker's rule (split on \n only), so line numbers agree: U+2028, U+0085 and \f are not line ends.
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
    except UnicodeDecodeError as exc:
        raise KnowledgeError(f"{path}: not valid UTF-8 text (byte {exc.start})") from exc
    first = max(1, start or 1)
    last = min(len(lines), end or len(lines))
    if start is not None and first > len(lines):
        raise KnowledgeError(f"{path}: line {first} is past the end ({len(lines)} lines)")
    return SourceText(
        path=rel, line_start=first, line_end=last, total_lines=len(lines), lines=tuple(lines[first - 1 : last])
    )


def source_of_chunk(root: Path, settings: Settings, indexes: list[KindIndex], chunk_id: str) -> SourceText:
    """The current lines of the file range a chunk was indexed from."""
    for index in indexes:
        chunk = index.chunk_by_id(chunk_id)
        if chunk is None:
            continue
        if not index.is_stale(chunk.path):
            return source(root, settings, chunk.path, chunk.line_start, chunk.line_end)
        # The file changed since indexing: its current lines over the same range (clamped), said plainly.
        if not (root / chunk.path).exists():
            raise KnowledgeError(f"{chunk.path}: deleted since indexing; run `knowledge reindex-from-changes`")
        whole = source(root, settings, chunk.path)
        last = min(chunk.line_end, whole.total_lines)
        first = min(chunk.line_start, last) if last else 1
        current = source(root, settings, chunk.path, first, last) if last else whole
        note = f"{chunk.path} changed since it was indexed; these are its current lines {first}-{last}"
        return replace(current, note=note)
    raise KnowledgeError(f"{chunk_id}: no chunk with this id in the index")
