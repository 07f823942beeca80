"""`knowledge lint`: docs that lack a `description` or cannot be read, one problem per file."""

from __future__ import annotations

from pathlib import Path

from .chunking.markdown import split_front_matter
from .config import Settings
from .corpus import candidate_paths, read_source
from .records import FileProblem


def lint_docs(root: Path, settings: Settings) -> list[FileProblem]:
    problems: list[FileProblem] = []
    for rel in candidate_paths(root, settings):
        source = read_source(root, rel, settings)
        if isinstance(source, FileProblem):
            problems.append(source)
            continue
        data, _, _, problem = split_front_matter(source)
        if problem is not None:
            problems.append(problem)
        elif not str(data.get("description") or "").strip():
            problems.append(FileProblem(rel, "no `description` in front matter"))
    return problems
