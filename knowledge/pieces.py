"""One result per entity or section: the parts a long function or section was split into come back as one piece of
text with the full line range, never as two results that overlap."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from .records import Chunk

_PART = re.compile(r"~\d+$")


def group_key(chunk_id: str) -> str:
    """The id of the whole entity or section: part ids end in `~N` (chunking/ids.py; a C++ `~Name` is a name)."""
    return _PART.sub("", chunk_id)


def is_part(chunk_id: str) -> bool:
    """Whether the id is that of a second or later part of a split entity or section."""
    return _PART.search(chunk_id) is not None


def _overlap(text: str, following: str) -> int:
    """Characters at the end of `text` that `following` starts with (split windows share an overlap)."""
    for size in range(min(len(text), len(following)), 0, -1):
        if text.endswith(following[:size]):
            return size
    return 0


def merge(parts: Sequence[Chunk]) -> Chunk:
    """The parts of one entity or section as one chunk: the union of their lines, the text once."""
    ordered = sorted(parts, key=lambda c: (c.line_start, c.line_end))
    first = ordered[0]
    start, end = first.line_start, max(c.line_end for c in ordered)
    if all(c.content.count("\n") == c.line_end - c.line_start for c in ordered):  # one content line per file line
        lines: dict[int, str] = {}
        for chunk in ordered:
            for offset, text in enumerate(chunk.content.split("\n")):
                lines.setdefault(chunk.line_start + offset, text)
        content = "\n".join(lines.get(n, "") for n in range(start, end + 1))
    else:  # long lines were cut into pieces: stitch the texts on their shared overlap
        content = first.content
        for chunk in ordered[1:]:
            content += ("" if (cut := _overlap(content, chunk.content)) else "\n") + chunk.content[cut:]
    return replace(first, id=group_key(first.id), line_start=start, line_end=end, content=content)
