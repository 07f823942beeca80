"""The files that answers pointed at while the vectors were still filling in: the fill gives them their transformer
vectors next, since a question asked during the fill is the best guess at the next one. A hint kept in one small
append-only file under `.knowledge/`: losing it, or two writers racing on it, costs only fill order."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import KnowledgeError
from ..fs import append_file, write_file

ASKED_FILE = "asked-paths"
KEEP = 200  # paths remembered, most recent first
LIMIT_BYTES = 64 * 1024  # past this the file is rewritten with the KEEP most recent


def record_asked(index_dir: Path, paths: Iterable[str]) -> None:
    """Remember that an answer pointed at `paths` (best first)."""
    lines = "".join(f"{path}\n" for path in reversed(list(dict.fromkeys(paths))) if "\n" not in path)
    if not lines or index_dir.is_symlink() or not index_dir.is_dir():
        return
    root, target = index_dir.parent, index_dir / ASKED_FILE
    try:
        append_file(root, target, lines)
        if target.stat().st_size > LIMIT_BYTES:
            write_file(root, target, "".join(f"{path}\n" for path in reversed(recently_asked(index_dir))))
    except (OSError, KnowledgeError):
        pass  # a hint: a read-only or full disk, or a refused write, must not fail the answer


def recently_asked(index_dir: Path) -> list[str]:
    """The paths answers pointed at, most recent (and within one answer, best) first, each once, at most KEEP."""
    try:
        lines = (index_dir / ASKED_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return list(dict.fromkeys(line for line in reversed(lines) if line))[:KEEP]
