"""`llms.txt` (llmstxt.org) from the docs' own front matter: what every doc is about, one line each, for agents.

    # Project
    > what the README's front matter (or first paragraph) says it is
    ## docs
    - [Title](docs/page.md): its `description`

`llms-full.txt` holds the docs' text in the same order, as much as a token budget allows; the rest are listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .chunking.markdown import split_front_matter
from .config import Settings
from .corpus import candidate_paths, read_source
from .records import FileProblem

LLMS_TXT, LLMS_FULL = "llms.txt", "llms-full.txt"
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class DocEntry:
    path: str
    title: str
    description: str
    body: str


def doc_entries(root: Path, settings: Settings) -> list[DocEntry]:
    """Every indexable doc with its title and description: the README first, then by folder and name."""
    entries = []
    for rel in candidate_paths(root, settings):
        source = read_source(root, rel, settings)
        if isinstance(source, FileProblem):
            continue
        data, body, _, _ = split_front_matter(source)
        heading = _H1.search(body)
        title = " ".join(str(data.get("title") or (heading.group(1) if heading else PurePosixPath(rel).stem)).split())
        description = " ".join(str(data.get("description") or "").split())
        entries.append(DocEntry(rel, title, description, body.strip()))
    return sorted(entries, key=lambda e: (not _is_readme(e.path), _folder(e.path), e.path))


def render_llms_txt(root: Path, entries: list[DocEntry]) -> str:
    """The llmstxt.org layout: H1 name, blockquote summary, an H2 per docs folder of `- [title](path): description`."""
    lines = [f"# {_project_name(root, entries)}", ""]
    summary = _summary(entries)
    if summary:
        lines += [f"> {summary}", ""]
    folder = None
    for entry in entries:
        if _folder(entry.path) != folder:
            folder = _folder(entry.path)
            lines += ([""] if lines[-1] else []) + [f"## {folder or 'Project'}", ""]
        link = f"- [{_escape(entry.title)}]({entry.path})"
        lines.append(f"{link}: {entry.description}" if entry.description else link)
    return "\n".join(lines).rstrip("\n") + "\n"


def render_llms_full(
    root: Path, entries: list[DocEntry], budget: int, count_tokens: Callable[[str], int]
) -> tuple[str, list[DocEntry]]:
    """The docs' text in llms.txt's order while the budget lasts; returns it and the docs left out (listed last)."""
    head = f"# {_project_name(root, entries)}\n"
    parts, used, left_out = [head], count_tokens(head), []
    for entry in entries:
        part = f"\n<!-- {entry.path} -->\n{entry.body}\n"
        cost = count_tokens(part)
        if used + cost > budget:
            left_out.append(entry)
            continue
        parts.append(part)
        used += cost
    if left_out:
        parts.append("\n## Left out of this file (token budget)\n\n")
        parts.extend(f"- [{_escape(e.title)}]({e.path}): {e.description}\n" for e in left_out)
    return "".join(parts), left_out


def _is_readme(path: str) -> bool:
    return PurePosixPath(path).stem.lower() == "readme" and "/" not in path


def _folder(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


def _project_name(root: Path, entries: list[DocEntry]) -> str:
    readme = next((e for e in entries if _is_readme(e.path)), None)
    return readme.title if readme is not None else root.name


def _summary(entries: list[DocEntry]) -> str:
    readme = next((e for e in entries if _is_readme(e.path)), None)
    if readme is None:
        return ""
    if readme.description:
        return readme.description
    paragraphs = [p for p in re.split(r"\n\s*\n", readme.body) if p.strip() and not p.lstrip().startswith(("#", "<"))]
    return " ".join(paragraphs[0].split()) if paragraphs else ""


def _escape(title: str) -> str:
    return title.replace("[", "\\[").replace("]", "\\]")
