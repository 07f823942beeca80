"""The repository's history as evidence: each commit's message and the files it changed, for the commits reachable
from the indexed commit (the newest `HISTORY_COMMITS`), in `.knowledge/history.sqlite`.

Every reindex brings it to the indexed commit (`sync`), so the git hooks keep it as they keep the index: a commit or
a fast-forward adds what is new; a rebase, an amend, a reset or a branch switch drops what is no longer reachable and
adds what now is. Nothing from after the indexed commit is ever in it. `locate` asks it which files past commits like
an issue changed (`files_like`)."""

from __future__ import annotations

import contextlib
import math
import re
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import Settings
from .errors import KnowledgeError
from .fs import create_private_file
from .git import head_commit, is_ancestor, repo_root, run_git
from .secrets import SecretRedactor

HISTORY_COMMITS = 10_000  # the newest reachable commits kept: years of most projects, read in seconds
_MERGE = re.compile(r"^Merge (pull request|branch|remote-tracking branch) ")
# Subjects that say nothing a reader can check about the change: a bot's dependency bump, a merge with no title under
# it, a web editor's "Update path.py"; shown as a file's evidence only when no other commit matched
_UNSAID = re.compile(
    r"^(?:(?:build|chore|fix)\(deps(?:-dev)?\): )?(?:Bump|Update) \S+ (?:requirement )?from \S+ to \S+"
    r"|^(?:chore\(deps\): )?Update dependency \S+"
    r"|^Merge (?:pull request|branch|remote-tracking branch) "
    r"|^(?:Update|Create|Delete|Add files via upload)(?: [\w./-]+\.\w+)?$",
    re.IGNORECASE,
)
MAX_FILES = 40  # a commit that changed more files (a reformat, a rename sweep) says little of where anything is
_SCHEMA = """
CREATE TABLE IF NOT EXISTS commits (id INTEGER PRIMARY KEY, sha TEXT UNIQUE NOT NULL, time INTEGER NOT NULL,
                                    files TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5(message, tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_RECORD, _FIELD = "\x1e", "\x1f"
# How messages are captured: a store written another way (before messages were redacted) is read again from git
CAPTURE = "redacted-1"


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int
    message: str
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SyncReport:
    added: int
    removed: int
    commits: int


def history_path(root: Path) -> Path:
    return root / ".knowledge" / "history.sqlite"


def _connect(path: Path) -> sqlite3.Connection:
    create_private_file(path)
    try:
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
        db.executescript(_SCHEMA)
    except sqlite3.DatabaseError as exc:
        raise KnowledgeError(f"{path}: the history cannot be read ({exc}); delete it and reindex") from exc
    return db


def keep(root: Path, settings: Settings) -> None:
    """`sync` as every reindex runs it: history is evidence, never a reason for indexing (or a commit) to fail. Commit
    messages are redacted as the files are: a key pasted into a message never reaches an answer."""
    redactor = SecretRedactor(settings.secret_patterns) if settings.redact_secrets else None
    with contextlib.suppress(KnowledgeError, OSError, sqlite3.Error, ValueError):
        if repo_root(root) is not None:
            sync(root, redactor)


def sync(root: Path, redactor: SecretRedactor | None, limit: int = HISTORY_COMMITS) -> SyncReport | None:
    """Bring the history to HEAD: the newest `limit` commits reachable from it, nothing else, each message with its
    secrets redacted as the files' are (`redactor`; None: the user turned redaction off). None outside git or before
    the first commit."""
    head = head_commit(root)
    if head is None:
        return None
    capture = CAPTURE if redactor is not None else "as-written"
    with contextlib.closing(_connect(history_path(root))) as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'capture'").fetchone()
        if (row[0] if row else None) != capture:  # captured another way: every message is read again
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM commits")
                db.execute("DELETE FROM messages")
                db.execute("DELETE FROM meta WHERE key = 'tip'")
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('capture', ?)", (capture,))
        row = db.execute("SELECT value FROM meta WHERE key = 'tip'").fetchone()
        tip = row[0] if row else None
        if tip == head:
            return SyncReport(0, 0, _count(db))
        stored = {sha for (sha,) in db.execute("SELECT sha FROM commits")}
        if tip is not None and tip in stored and is_ancestor(root, tip, head):
            new = _read(root, [f"{tip}..{head}", f"--max-count={limit}"])
            removed: set[str] = set()
        else:  # rewritten, switched, reset: what is reachable now decides
            reachable = run_git(root, "rev-list", f"--max-count={limit}", head).split()
            wanted = set(reachable)
            removed = stored - wanted
            missing = [sha for sha in reachable if sha not in stored]
            new = _read(root, ["--no-walk=unsorted", "--stdin"], "\n".join(missing)) if missing else []
        with db:
            db.execute("BEGIN IMMEDIATE")
            for sha in removed:
                _delete(db, sha)
            for commit in new:
                if commit.sha in stored:
                    continue
                cursor = db.execute(
                    "INSERT OR IGNORE INTO commits (sha, time, files) VALUES (?, ?, ?)",
                    (commit.sha, commit.time, "\n".join(commit.files)),
                )
                if cursor.rowcount:
                    message = redactor.redact(commit.message).text if redactor is not None else commit.message
                    row = (cursor.lastrowid, message)
                    db.execute("INSERT INTO messages (rowid, message) VALUES (?, ?)", row)
            extra = _count(db) - limit
            if extra > 0:  # the oldest beyond the bound
                for (sha,) in db.execute("SELECT sha FROM commits ORDER BY time, id LIMIT ?", (extra,)).fetchall():
                    _delete(db, sha)
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('tip', ?)", (head,))
        return SyncReport(len(new), len(removed), _count(db))


def _count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM commits").fetchone()[0])


def _delete(db: sqlite3.Connection, sha: str) -> None:
    row = db.execute("SELECT id FROM commits WHERE sha = ?", (sha,)).fetchone()
    if row is not None:
        db.execute("DELETE FROM messages WHERE rowid = ?", (row[0],))
        db.execute("DELETE FROM commits WHERE id = ?", (row[0],))


def _read(root: Path, revisions: list[str], stdin: str | None = None) -> list[Commit]:
    """Commits with their message and changed files; a merge's files are what it brought to its first parent."""
    output = run_git(
        root, "-c", "core.quotepath=off", "log", "--no-renames", "--diff-merges=first-parent", "--name-only",
        f"--format={_RECORD}%H{_FIELD}%ct{_FIELD}%B{_FIELD}", *revisions, stdin=stdin,
    )  # fmt: skip
    commits = []
    for record in output.split(_RECORD)[1:]:
        sha, time, message, files = [*record.split(_FIELD, 3), "", "", ""][:4]
        # a file name git could not give as UTF-8 is never an indexed path; a message's stray bytes are replaced
        paths = tuple(line for line in files.splitlines() if line.strip() and _utf8(line) == line)
        commits.append(Commit(sha.strip(), int(time or 0), _utf8(message.strip()), paths))
    return commits


def _utf8(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def files_like(root: Path, words: Sequence[str], commits: int = 50) -> list[tuple[str, float, str]]:
    """(path, score, what the evidence says) of the files changed by the past commits whose messages best match
    `words`, best first; a commit's weight is shared among the files it changed. The evidence is the subject of the
    file's best commit that says what it changed; a bump, a bare merge or an empty message only where no other
    matched, then with its sha, which a reader can look up. The scores count every commit as before."""
    path = history_path(root)
    unique = list(dict.fromkeys(w for w in words if w))[:400]
    if not unique or not path.exists():
        return []
    expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in unique)
    with contextlib.closing(_connect(path)) as db:
        rows = db.execute(
            "SELECT c.files, -bm25(messages), m.message, c.sha FROM messages m JOIN commits c ON c.id = m.rowid "
            "WHERE messages MATCH ? ORDER BY bm25(messages) LIMIT ?",
            (expression, commits),
        ).fetchall()
    scores: dict[str, float] = defaultdict(float)
    because: dict[str, tuple[bool, float, str]] = {}
    for files, score, message, sha in rows:
        paths = files.split("\n") if files else []
        if not paths or len(paths) > MAX_FILES:
            continue
        share = score / math.sqrt(len(paths))
        subject = _subject(message)
        said = bool(subject) and _UNSAID.match(subject) is None
        shown = subject if said else f"{subject or 'a commit with no message'} ({sha[:10]})"
        for path_changed in paths:
            scores[path_changed] += share
            if (said, share) > because.get(path_changed, (False, 0.0, ""))[:2]:
                because[path_changed] = (said, share, shown)
    return [(p, s, because[p][2]) for p, s in sorted(scores.items(), key=lambda item: -item[1])]


def _subject(message: str) -> str:
    """What a commit says it did: its first line, or for a merge of a pull request or branch ("Merge pull request #12
    from me/fix") the title written under it, which is what reads like the issue."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    if not lines:
        return ""
    if _MERGE.match(lines[0]) and len(lines) > 1:
        return lines[1][:100]
    return lines[0][:100]
