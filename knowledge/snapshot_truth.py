"""A snapshot's chunks held against the files they came from: every chunk's shown text must be text its file has at
the snapshot's commit (its secrets redacted), so that an imported index never serves words a file does not hold.
The checksums inside a snapshot only say it arrived whole; a snapshot's author can recompute them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from .git import blobs_at, differs_from_worktree, regular_files_at
from .path_gate import read_unlinked
from .secrets import PLACEHOLDER
from .store.local_files import chunk_texts

_REDACTED = re.compile(re.escape(PLACEHOLDER).replace(r"\{kind\}", r"[a-z0-9-]+"))


def untrue_paths(root: Path, commit: str, databases: Iterable[Path]) -> list[str]:
    """The files (sorted) with a chunk in `databases` whose text is not in the file as committed in `commit`: read
    from the work tree where it still holds that commit's content (as the indexer reads it, through the path gate),
    from git's objects where it changed since."""
    chunks = [chunk for database in databases for chunk in chunk_texts(database)]
    regular = regular_files_at(root, commit)  # a snapshot names the paths: only the commit's own files are read
    paths = {path for path, _ in chunks} & regular
    changed = differs_from_worktree(root, commit)  # git reports a file under a linked folder as changed
    blobs = blobs_at(root, commit, sorted(paths & changed))
    # a committed regular file unchanged since: no folder on its way is a link (git would say it changed)
    blobs |= {path: read_unlinked(root / path) for path in paths - changed}
    texts: dict[str, str | None] = {}
    untrue: set[str] = set()
    for path, content in chunks:
        if path in untrue:
            continue
        if path not in texts:
            texts[path] = _as_indexed(blobs.get(path))
        text = texts[path]
        if text is None or not _holds(text, content):
            untrue.add(path)
    return sorted(untrue)


def _as_indexed(data: bytes | None) -> str | None:
    """A file's text as the indexer reads it (corpus.read_source): UTF-8, a BOM dropped, every newline `\\n`."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _holds(text: str, content: str) -> bool:
    if content in text:
        return True
    # a redacted secret: the parts around each placeholder, in order (the placeholder keeps the secret's newlines)
    position = 0
    for number, part in enumerate(_REDACTED.split(content)):
        part = part.lstrip("\n") if number else part
        found = text.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True
