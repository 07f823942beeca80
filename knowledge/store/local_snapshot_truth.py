"""A snapshot's chunks held against the files they came from: every chunk's shown text must be text its file has at
the snapshot's commit (its secrets redacted), so that an imported index never serves words a file does not hold.
The checksums inside a snapshot only say it arrived whole; a snapshot's author can recompute them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import groupby
from pathlib import Path

from ..git import blobs_at, differs_from_worktree, regular_files_at
from ..path_gate import read_unlinked
from ..secrets import PLACEHOLDER
from .local_files import chunk_texts

_REDACTED = re.compile(re.escape(PLACEHOLDER).replace(r"\{kind\}", r"[a-z0-9-]+"))


def untrue_paths(root: Path, commit: str, databases: Iterable[Path]) -> list[str]:
    """The files (sorted) with a chunk in `databases` whose text is not in the file as committed in `commit`: read
    from the work tree where it still holds that commit's content (as the indexer reads it, through the path gate),
    from git's objects where it changed since."""
    regular = regular_files_at(root, commit)  # a snapshot names the paths: only the commit's own files are read
    changed = differs_from_worktree(root, commit)  # git reports a file under a linked folder as changed
    committed = blobs_at(root, commit, sorted(regular & changed))  # the few files changed since, as they were
    untrue: list[str] = []
    for database in databases:  # one file at a time, its chunks together (by path)
        for path, chunks in groupby(chunk_texts(database), key=lambda row: row[0]):
            if path in regular and path not in changed:
                # a committed regular file unchanged since: no folder on its way is a link (git would say so)
                text = _as_indexed(read_unlinked(root / path))
            else:
                text = _as_indexed(committed.get(path))
            if text is None or not all(_holds(text, content) for _, content in chunks):
                untrue.append(path)
    return sorted(set(untrue))


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
