"""Doc <-> code drift: doc sections whose referenced code changed after the section last changed (git history),
and references that no longer resolve (a deleted or moved file, a renamed or removed function)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import git
from .chunking.outline import Definition, outline
from .records import Chunk, DriftItem
from .references import distinctive, is_history, split

DOC_SUFFIXES = (".md", ".markdown", ".mdx")


@dataclass
class _History:
    """Git facts shared by every section of one drift run."""

    root: Path
    head: str
    tracked: set[str]
    _outlines: dict[tuple[str, str], dict[str, Definition]] = field(default_factory=dict)
    _renames: dict[str, dict[str, str]] = field(default_factory=dict)
    _touching: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)

    def outline(self, rev: str, path: str) -> dict[str, Definition]:
        key = (rev, path)
        if key not in self._outlines:
            text = git.file_at(self.root, rev, path)
            self._outlines[key] = {d.name: d for d in outline(path, text)} if text is not None else {}
        return self._outlines[key]

    def renames(self, base: str) -> dict[str, str]:
        if base not in self._renames:
            self._renames[base] = git.renames(self.root, base, self.head)
        return self._renames[base]

    def touching(self, base: str, path: str) -> list[tuple[str, str]]:
        key = (base, path)
        if key not in self._touching:
            self._touching[key] = git.commits_touching(self.root, base, self.head, path)
        return self._touching[key]

    def existed(self, rev: str, path: str) -> bool:
        return git.file_at(self.root, rev, path) is not None


def _section_commits(root: Path, path: str, chunks: list[Chunk], order: dict[str, int]) -> dict[str, str]:
    """chunk id -> the newest commit among the section's lines at HEAD ("" when uncommitted or unknown).
    Newest by history (`order`: position in `git rev-list HEAD`), not by clock: commits can share a second."""
    try:
        lines, _ = git.blame_commits(root, path)
    except git.GitError:
        return {}
    out = {}
    for chunk in chunks:
        shas = {sha for sha in lines[chunk.line_start - 1 : chunk.line_end] if sha}
        if not shas or any(set(sha) == {"0"} for sha in shas):
            out[chunk.id] = ""  # edited and not committed: the section is being changed now
            continue
        out[chunk.id] = min(shas, key=lambda sha: order.get(sha, len(order)))
    return out


def _definitions(code: dict[int, Chunk]) -> dict[str, list[Chunk]]:
    """Qualified and short names -> the code chunks defining them."""
    names: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in code.values():
        if chunk.symbol:
            names[chunk.symbol].append(chunk)
            if chunk.parent:
                names[f"{chunk.parent}.{chunk.symbol}"].append(chunk)
    return names


def _file_summary(history: _History, base: str, path: str) -> str:
    before, after = history.outline(base, path), history.outline(history.head, path)
    parts = []
    added = [n for n in after if n not in before]
    removed = [n for n in before if n not in after]
    changed = [n for n in after if n in before and after[n].signature != before[n].signature]
    if added:
        parts.append("added " + ", ".join(added[:4]) + ("…" if len(added) > 4 else ""))
    if removed:
        parts.append("removed " + ", ".join(removed[:4]) + ("…" if len(removed) > 4 else ""))
    if changed:
        parts.append("signature changed: " + ", ".join(changed[:4]))
    return "; ".join(parts)


# A link target that never was a file and has no file's suffix (none, or a name's: `.JSONRenderer`, `.processors`);
# an upper-case name with none (`LICENSE`, `README`) is a file's
_LABEL = re.compile(r"^(?=[^.]*[a-z])[^.]+$|^.*\.(?![a-z0-9]{1,5}$)[^.]+$")


def _check_path(
    history: _History, chunk: Chunk, base: str, kind: str, path: str
) -> tuple[str, str, list[tuple[str, str]]] | None:
    """(status, summary, commits) for one path reference, or None when there is nothing to say."""
    exists = (
        path in history.tracked
        or any(t.startswith(path.rstrip("/") + "/") for t in history.tracked)
        or (history.root / path).exists()  # added in the work tree, not committed yet
    )
    if exists and path.lower().endswith(DOC_SUFFIXES):
        return None  # a link between docs: a doc's own edits are not drift of this one
    if exists:
        commits = history.touching(base, path)
        if not commits:
            return None
        detail = _file_summary(history, base, path)
        lines = git.changed_lines(history.root, base, history.head, path)
        summary = f"{path} changed in {len(commits)} commit(s), {lines} line(s)" + (f": {detail}" if detail else "")
        return "changed", summary, commits
    if not history.existed(base, path):
        if kind != "link" or _LABEL.match(path.rsplit("/", 1)[-1]):
            return None  # `[text](filtering)`: a MyST/Sphinx label or object (`structlog.processors.X`), no file
        return "broken", f"{path} does not exist", []
    moved = history.renames(base).get(path)
    commits = history.touching(base, path)[:1]
    if moved:
        return "broken", f"{path} moved to {moved}", commits
    return "broken", f"{path} was deleted", commits


def _body(history: _History, rev: str, path: str, name: str) -> str | None:
    found = history.outline(rev, path).get(name)
    return found.body if found else None


def _check_symbol(
    history: _History, names: dict[str, list[Chunk]], base: str, name: str
) -> tuple[str, str, list[tuple[str, str]], int] | None:
    found = names.get(name)
    if found:
        chunk = found[0]
        qualified = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
        old = history.outline(base, chunk.path).get(qualified)
        new = history.outline(history.head, chunk.path).get(qualified)
        if old is None or new is None or old.body == new.body:
            return None
        commits = [
            (sha, subject)
            for sha, subject in history.touching(base, chunk.path)
            if _body(history, sha, chunk.path, qualified) != _body(history, f"{sha}^", chunk.path, qualified)
        ]
        changed = sum(1 for a, b in zip(old.body.split("\n"), new.body.split("\n"), strict=False) if a != b)
        changed += abs(len(old.body.split("\n")) - len(new.body.split("\n")))
        if old.signature != new.signature:
            return "changed", f"`{name}` signature changed: `{old.signature}` -> `{new.signature}`", commits, changed
        return "changed", f"`{name}` body changed ({changed} line(s)) in {chunk.path}", commits, changed
    short = name.rsplit(".", 1)[-1]
    for path in git.grep_files(history.root, base, short):
        old = history.outline(base, path).get(name) or next(
            (d for n, d in history.outline(base, path).items() if n.rsplit(".", 1)[-1] == name), None
        )
        if old is None:
            continue
        now = history.outline(history.head, history.renames(base).get(path, path))
        renamed = next(
            (d.name for d in now.values() if d.body.replace(d.name.rsplit(".", 1)[-1], short) == old.body), ""
        )
        gone = [
            (sha, subject)
            for sha, subject in history.touching(base, path)
            if _body(history, sha, path, old.name) is None and _body(history, f"{sha}^", path, old.name) is not None
        ]
        commits = gone[-1:] or history.touching(base, path)[:1]
        summary = f"`{name}` was renamed to `{renamed}`" if renamed else f"`{name}` was removed from {path}"
        return "broken", summary, commits, 0
    return None  # never a code entity: inline code that is not a reference


def find_drift(
    root: Path,
    docs: dict[int, Chunk],
    code: dict[int, Chunk],
    since: str | None = None,
    installed: Callable[[str], tuple[bool, str] | None] | None = None,
) -> list[DriftItem]:
    """Every drifted or broken reference of the doc sections, worst first; `installed` checks a name under a
    dependency's import name against the version installed (dependencies.installed_api)."""
    head = git.head_commit(root)
    if head is None:
        return []
    history = _History(root, head, git.tracked_at(root, head))
    since_commits = {sha for sha, _ in git.commits_touching(root, since, head, ".")} if since else None
    names = _definitions(code)
    order = {sha: n for n, sha in enumerate(git.run_git(root, "rev-list", head).split())}
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in docs.values():
        if chunk.references:
            by_doc[chunk.path].append(chunk)
    items: list[DriftItem] = []
    for path, chunks in sorted(by_doc.items()):
        commits_of = _section_commits(root, path, chunks, order)
        for chunk in chunks:
            base = commits_of.get(chunk.id, "")
            if not base:
                continue
            for reference in chunk.references:
                kind, target, _ = split(reference)
                lines = 0
                if kind == "symbol":
                    if not distinctive(reference.removeprefix("symbol:")):
                        continue  # `search`, `status`: as often a command or a word as a function
                    of_dependency = installed(target) if installed is not None else None
                    found = _check_symbol(history, names, base, target) if of_dependency is None else None
                    if of_dependency is not None and not of_dependency[0]:
                        found = ("broken", of_dependency[1], [], 0)  # the installed version's truth, not history's
                    if found is None:
                        continue
                    status, summary, commits, lines = found
                else:
                    checked = _check_path(history, chunk, base, kind, target)
                    if checked is None:
                        continue
                    status, summary, commits = checked
                    if status == "changed":
                        lines = git.changed_lines(root, base, head, target)
                if since_commits is not None:
                    commits = [c for c in commits if c[0] in since_commits]
                    if not commits:
                        continue
                items.append(
                    DriftItem(
                        path=chunk.path,
                        section=chunk.section,
                        chunk_id=chunk.id,
                        line_start=chunk.line_start,
                        line_end=chunk.line_end,
                        section_commit=base,
                        reference=reference,
                        status=status,
                        summary=summary,
                        commits=tuple((sha, subject) for sha, subject in commits),
                        changed_lines=lines,
                        history=is_history(chunk.path, chunk.section),
                    )
                )
    return sorted(
        items, key=lambda i: (i.history, i.status != "broken", -(i.changed_lines + 10 * len(i.commits)), i.path)
    )
