"""The files that answers pointed at while the vectors were still filling in: the fill gives them their transformer
vectors next, since a question asked during the fill is the best guess at the next one. A hint kept in one small
append-only file under `.knowledge/`: losing it, or two writers racing on it, costs only fill order."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

ASKED_FILE = "asked-paths"
KEEP = 200  # paths remembered, most recent first
LIMIT_BYTES = 64 * 1024  # past this the file is rewritten with the KEEP most recent


def record_asked(index_dir: Path, paths: Iterable[str]) -> None:
    """Remember that an answer pointed at `paths` (best first)."""
    lines = "".join(f"{path}\n" for path in reversed(list(dict.fromkeys(paths))) if "\n" not in path)
    if not lines or not index_dir.is_dir():
        return
    target = index_dir / ASKED_FILE
    try:
        with target.open("a", encoding="utf-8") as out:
            out.write(lines)
        if target.stat().st_size > LIMIT_BYTES:
            scratch = target.with_name(f"{ASKED_FILE}.{os.getpid()}.tmp")
            scratch.write_text("".join(f"{path}\n" for path in reversed(recently_asked(index_dir))), encoding="utf-8")
            os.replace(scratch, target)
    except OSError:
        pass  # a hint: a read-only or full disk must not fail the answer


def recently_asked(index_dir: Path) -> list[str]:
    """The paths answers pointed at, most recent (and within one answer, best) first, each once, at most KEEP."""
    try:
        lines = (index_dir / ASKED_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return list(dict.fromkeys(line for line in reversed(lines) if line))[:KEEP]
