"""Markdown docs: front matter (python-frontmatter) kept out of the body, then one chunk per heading section.

Sections longer than the model's token limit are split on line boundaries with a small overlap; every chunk keeps
its 1-based line range in the original file, front matter included.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..records import Chunk, FileProblem, SourceFile
from ..references import extract, fence_states, from_front_matter
from .ids import unique_chunk_id

CHUNKER_VERSION = 4  # 3: sections record their references; 4: label lines join the section they label
OVERLAP_TOKENS = 32
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# A line that labels the heading after it: a MyST target `(name)=`, a Sphinx/reST target `.. _name:`, an HTML anchor.
_LABEL = re.compile(r"^ {0,3}(\([^()\s]+\)=|\.\. _[^:]+:|<a\s+(?:name|id)=\"[^\"]*\"\s*>\s*</a>)[ \t]*$")


@dataclass(frozen=True, slots=True)
class DocMeta:
    title: str
    description: str
    tags: tuple[str, ...]


@dataclass(slots=True)
class _Section:
    path: list[str]
    start: int  # 0-based index into body lines
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ParsedDoc:
    meta: DocMeta
    chunks: list[Chunk]
    problems: list[FileProblem]


MAX_FRONT_MATTER_CHARS = 64 * 1024
MAX_FIELD_CHARS = 2_000  # a title or description longer than this is cut (it is metadata on every chunk)


def _no_alias_loader() -> type:
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """YAML aliases can expand a few hundred bytes into gigabytes ("billion laughs"): front matter gets none."""

        def compose_node(self, parent: object, index: object) -> object:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not allowed in front matter", event.start_mark
                )
            return super().compose_node(parent, index)

    return NoAliasLoader


_NoAliasLoader: type | None = None


def split_front_matter(source: SourceFile) -> tuple[dict[str, Any], str, int, FileProblem | None]:
    """(metadata, body, 0-based file line of body line 0, problem)."""
    import frontmatter
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    global _NoAliasLoader
    if _NoAliasLoader is None:
        _NoAliasLoader = _no_alias_loader()
    handler = frontmatter.detect_format(source.text, [YAMLHandler()])
    if handler is None:
        return {}, source.text, 0, None
    try:
        raw, body = handler.split(source.text)
    except ValueError:
        return {}, source.text, 0, FileProblem(source.path, "front matter opened with --- but never closed")
    offset = source.text[: len(source.text) - len(body)].count("\n")
    if len(raw) > MAX_FRONT_MATTER_CHARS:
        return (
            {},
            source.text,
            0,
            FileProblem(source.path, f"front matter over {MAX_FRONT_MATTER_CHARS:,} characters; indexed as plain text"),
        )
    try:
        data = yaml.load(raw, Loader=_NoAliasLoader)  # a SafeLoader that also refuses aliases
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return (
            {},
            source.text,
            0,
            FileProblem(source.path, f"malformed YAML front matter{where}: {problem}; indexed as plain text"),
        )
    except RecursionError:  # `[[[[…` 20,000 deep: the YAML parser recurses once a level
        return {}, source.text, 0, FileProblem(source.path, "front matter nested too deeply; indexed as plain text")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return (
            {},
            source.text,
            0,
            FileProblem(source.path, f"front matter is a {type(data).__name__}, not a mapping; indexed as plain text"),
        )
    return data, body, offset, None


def _as_text(value: object) -> str:
    if value is None:
        return ""
    return " ".join(str(value).split())[:MAX_FIELD_CHARS]


def _tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(t for t in (v.strip() for v in value.split(",")) if t)
    if isinstance(value, list | tuple):
        return tuple(_as_text(v) for v in value if _as_text(v))
    return ()


def _sections(lines: list[str]) -> list[_Section]:
    sections = [_Section(path=[], start=0)]
    stack: list[tuple[int, str]] = []
    fence: str | None = None

    def open_section(level: int, title: str, start: int) -> None:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        # label lines (and the blank lines around them) right above the heading belong to it, not to what precedes
        before = sections[-1].lines
        keep = len(before)
        while keep and (not before[keep - 1].strip() or _LABEL.match(before[keep - 1])):
            keep -= 1
        carried = before[keep:] if any(_LABEL.match(line) for line in before[keep:]) else []
        first = next(i for i, line in enumerate(carried) if line.strip()) if carried else 0
        del before[len(before) - len(carried) :]
        sections.append(_Section(path=[t for _, t in stack], start=start - len(carried) + first))
        sections[-1].lines.extend(carried[first:])

    for index, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            sections[-1].lines.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            sections[-1].lines.append(line)
            continue
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        current = sections[-1]
        if atx:
            open_section(len(atx.group(1)), (atx.group(2) or "").strip(), index)
            sections[-1].lines.append(line)
        elif (
            setext
            and current.lines
            and current.lines[-1].strip()
            and index - 1 > current.start - 1
            and not _ATX.match(current.lines[-1])
            and (len(current.lines) == 1 or not current.lines[-2].strip())
        ):
            title_line = current.lines.pop()
            open_section(1 if setext.group(1)[0] == "=" else 2, title_line.strip(), index - 1)
            sections[-1].lines.extend([title_line, line])
        else:
            current.lines.append(line)
    return sections


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _header(meta: DocMeta, section: str) -> str:
    lines = [meta.title + (f": {meta.description}" if meta.description else "")]
    if section and section != meta.title:
        lines.append(section)
    return "\n".join(lines) + "\n\n"


@dataclass(frozen=True, slots=True)
class _Segment:
    line: int  # index into the section's lines
    text: str
    cost: int  # tokens, +1 for the separator
    continues: bool  # the rest of the previous segment's line (a line too long for one chunk)


def _split_line(line: str, limit: int, count_tokens: Callable[[str], int]) -> list[str]:
    """Pieces of one over-long line (a Markdown paragraph is often one line), cut at sentence ends where possible."""
    words = line.split(" ")
    costs = [count_tokens(word) + 1 for word in words]  # word pieces never span spaces, so costs add up
    pieces: list[str] = []
    start, used, last_sentence_end = 0, 0, -1
    for index, cost in enumerate(costs):
        if used + cost > limit and index > start:
            cut = last_sentence_end + 1 if last_sentence_end >= start + (index - start) // 2 else index
            pieces.append(" ".join(words[start:cut]))
            start, used, last_sentence_end = cut, sum(costs[cut:index]), -1
        used += cost
        if words[index].endswith((".", "!", "?", ";")):
            last_sentence_end = index
    pieces.append(" ".join(words[start:]))
    return [piece for piece in pieces if piece]


def _segments(lines: list[str], limit: int, count_tokens: Callable[[str], int]) -> list[_Segment]:
    # A line never has more tokens than characters: when even that bound fits, the bound stands in for the count
    # (all segments then form one window, exactly as the counted costs would).
    if sum(len(line) + 1 for line in lines) <= limit:
        return [_Segment(index, line, len(line) + 1, False) for index, line in enumerate(lines)]
    out: list[_Segment] = []
    for index, line in enumerate(lines):
        cost = count_tokens(line) + 1
        if cost <= limit:
            out.append(_Segment(index, line, cost, False))
            continue
        for n, piece in enumerate(_split_line(line, limit, count_tokens)):
            out.append(_Segment(index, piece, count_tokens(piece) + 1, n > 0))
    return out


def _windows(segments: list[_Segment], limit: int) -> list[tuple[int, int]]:
    """[start, end) segment windows whose text stays within `limit` tokens, overlapping by ~OVERLAP_TOKENS."""
    windows: list[tuple[int, int]] = []
    start = 0
    while start < len(segments):
        end, used = start, 0
        while end < len(segments) and (used + segments[end].cost <= limit or end == start):
            used += segments[end].cost
            end += 1
        windows.append((start, end))
        if end >= len(segments):
            break
        back, overlap = end, 0
        while back - 1 > start and overlap + segments[back - 1].cost <= OVERLAP_TOKENS:
            back -= 1
            overlap += segments[back].cost
        start = back
    return windows


def _join(segments: list[_Segment]) -> str:
    return "".join((" " if seg.continues else "\n") + seg.text if n else seg.text for n, seg in enumerate(segments))


def chunk_markdown(source: SourceFile, max_tokens: int, count_tokens: Callable[[str], int]) -> ParsedDoc:
    """Split one Markdown file into section chunks; problems are reported, never raised."""
    data, body, offset, problem = split_front_matter(source)
    problems = [problem] if problem else []
    lines = body.split("\n")
    sections = _sections(lines)
    first_heading = next((s.path[-1] for s in sections if s.path), "")
    meta = DocMeta(
        title=_as_text(data.get("title")) or first_heading or PurePosixPath(source.path).stem,
        description=_as_text(data.get("description")),
        tags=_tags(data.get("tags")),
    )
    chunks: list[Chunk] = []
    used_ids: set[str] = set()
    doc_references = from_front_matter(data)
    for section in sections:
        said = [line for line in section.lines if line.strip() and not _LABEL.match(line)]
        heading_only = len(said) <= (2 if said[1:2] and _SETEXT.match(said[1]) else 1)
        if not "".join(section.lines).strip() or (section.path and heading_only):
            continue
        section_path = " > ".join(section.path)
        header = _header(meta, section_path)
        budget = max(16, max_tokens - count_tokens(header) - 2)  # 2: the model's special tokens
        segments = _segments(section.lines, budget, count_tokens)
        windows = _windows(segments, budget)
        base_id = f"{source.path}#{_slug(section.path[-1]) if section.path else 'top'}"
        fenced = fence_states(section.lines)
        for part, (start, end) in enumerate(windows):
            # Trim blank lines at the edges so line ranges point at real text.
            while start < end - 1 and not segments[start].text.strip():
                start += 1
            while end - 1 > start and not segments[end - 1].text.strip():
                end -= 1
            content = _join(segments[start:end])
            if not content.strip():
                continue
            chunk_id = unique_chunk_id(base_id, part, used_ids)
            embed_text = header + content
            first_line = offset + section.start + segments[start].line + 1
            chunks.append(
                Chunk(
                    id=chunk_id,
                    path=source.path,
                    kind="doc",
                    title=meta.title,
                    description=meta.description,
                    section=section_path,
                    line_start=first_line,
                    line_end=offset + section.start + segments[end - 1].line + 1,
                    content=content,
                    embed_text=embed_text,
                    content_hash=hashlib.sha256(embed_text.encode("utf-8")).hexdigest(),
                    tags=meta.tags,
                    references=tuple(
                        dict.fromkeys(
                            (doc_references if not chunks else ())
                            + extract(content, source.path, fenced[segments[start].line])
                        )
                    ),
                )
            )
    return ParsedDoc(meta=meta, chunks=chunks, problems=problems)
