"""`search --exact|--substring|--regex`: every line that matches, in path and line order, as `grep -rn` finds them.

The indexed files are read from the work tree through the path gate (`corpus.read_source`: secrets redacted, links
out of the repository refused), not from the lexical index: an identifier used as an attribute (`kb.reindex_changes`)
is one term there, and a chunk's text may be cut. A file whose bytes cannot hold the needle is skipped unread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .budget import pack
from .corpus import read_source
from .kind import KindIndex
from .path_gate import Refusal, resolve_inside
from .patterns import UserPattern, user_regex
from .ranking.query import in_scope, qualified_names, scope_words
from .records import Chunk, FileProblem, SearchHit, SearchResponse, hit_of, is_part

DEFINITIONS_READ = 200  # definitions of a qualified name's last part read, to find the ones its qualifiers name


@dataclass(frozen=True, slots=True)
class Matcher:
    pattern: re.Pattern[str] | UserPattern
    needle: bytes | None  # a literal every matching file holds (None for a regex: every file is read)


def matcher(query: str, mode: str) -> Matcher:
    """The compiled pattern for `query` in `mode`; a one-line error for a pattern that cannot be used safely."""
    text = query.strip()
    if mode == "word":  # grep -w: no word character (letter, digit, underscore) on either side
        return Matcher(re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)"), text.encode())
    if mode == "substring":
        return Matcher(re.compile(re.escape(text)), text.encode())
    return Matcher(user_regex(text), None)  # RE2: linear in the text, whatever the pattern


def occurrences(
    sources: Sequence[KindIndex],
    count_tokens: Callable[[str], int],
    query: str,
    *,
    mode: str,
    context: int,
    k: int,
    budget: int,
    metadata_only: bool,
    keep: Callable[[Chunk], bool] | None,
) -> SearchResponse:
    """Every matching line of the indexed files, each with `context` lines either side, `k` at most, in the budget."""
    found = matcher(query, mode)
    hits: list[SearchHit] = []
    for index in sources:
        for path in sorted(index.searched.files()):
            hits.extend(_in_file(index, path, found, context, metadata_only, keep))
    hits.sort(key=lambda hit: (hit.path, hit.match_line or 0))
    if not hits and mode == "word":  # `Framework::Helpers` written nowhere as such: the definitions it names
        hits = [hit for index in sources for hit in _definitions(index, query, context, metadata_only, keep)]
    kept, used, left_out = pack(hits[:k], budget, count_tokens)
    return SearchResponse(
        query=query,
        results=tuple(kept),
        tokens_used=used,
        budget=budget,
        omitted=left_out + max(0, len(hits) - k),
        over_budget=left_out,
        threshold=0.0,
        full_threshold=0.0,
        model="",
    )


def _definitions(
    index: KindIndex, query: str, context: int, metadata_only: bool, keep: Callable[[Chunk], bool] | None
) -> list[SearchHit]:
    """For a query that is one qualified name: the declaration line of each definition its qualifiers name (its
    enclosing entity, file or folders; a qualifier that names none of them is passed over, as in ranking)."""
    asked = qualified_names(query)
    if index.kind != "code" or len(asked) != 1 or len(query.split()) != 1:
        return []
    ((name, ways),) = asked.items()
    keys = index.searched.defining([name], DEFINITIONS_READ)
    chunks = [c for c in index.searched.chunks(keys).values() if not is_part(c.id)]
    wanted = in_scope({c.id: scope_words(c.path, c.parent) for c in chunks}, ways)
    out = []
    for chunk in sorted((c for c in chunks if c.id in wanted), key=lambda c: (c.path, c.line_start)):
        if keep is not None and not keep(chunk):
            continue
        found = matcher(chunk.symbol, "word") if chunk.symbol else None
        lines = chunk.content.split("\n")
        at = next((n for n, line in enumerate(lines) if found is not None and found.pattern.search(line)), 0)
        first, last = max(0, at - context), min(len(lines) - 1, at + context)
        text = None if metadata_only else "\n".join(lines[first : last + 1])
        out.append(
            _hit(chunk, chunk.path, chunk.line_start + first, chunk.line_start + last, text, chunk.line_start + at)
        )
    return out


def _hit(chunk: Chunk, path: str, first: int, last: int, content: str | None, line: int) -> SearchHit:
    return hit_of(chunk, path=path, description="", line_start=first, line_end=last, content=content, match_line=line)


def _in_file(
    index: KindIndex,
    path: str,
    found: Matcher,
    context: int,
    metadata_only: bool,
    keep: Callable[[Chunk], bool] | None,
) -> list[SearchHit]:
    if found.needle is not None and not _may_hold(index, path, found.needle):
        return []
    source = read_source(index.root, path, index.settings, index.kind)
    if isinstance(source, FileProblem):
        return []
    lines = source.text.split("\n")
    matches = [number for number, line in enumerate(lines, start=1) if found.pattern.search(line)]
    if not matches:
        return []
    chunks = sorted(index.searched.chunks_of_path(path), key=lambda c: (c.line_end - c.line_start, c.line_start))
    out = []
    for line in matches:
        # the innermost entity or section holding the line names it; a line outside every chunk takes the file's
        chunk = next((c for c in chunks if c.line_start <= line <= c.line_end), chunks[-1] if chunks else None)
        if chunk is None or (keep is not None and not keep(chunk)):
            continue
        first, last = max(1, line - context), min(len(lines), line + context)
        out.append(_hit(chunk, path, first, last, None if metadata_only else "\n".join(lines[first - 1 : last]), line))
    return out


def _may_hold(index: KindIndex, path: str, needle: bytes) -> bool:
    """False when the file surely lacks `needle`: a byte search, before decoding and redacting what may match."""
    checked = resolve_inside(index.root, path, index.settings.secret_files)
    if isinstance(checked, Refusal):
        return False
    try:
        return needle in checked.read_bytes()
    except OSError:
        return False
