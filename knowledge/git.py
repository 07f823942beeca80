"""Every git subprocess the package runs, with the caller's GIT_* variables scrubbed; file lists are read
NUL-separated (`-z`) where git offers it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .errors import KnowledgeError


def _env() -> dict[str, str]:
    # Inside hooks git exports GIT_DIR, GIT_INDEX_FILE and friends, which would point our own git calls at the
    # wrong repository or index (pre-commit's lesson); keep only what changes no repository lookup.
    keep = {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
    }
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in keep}


class GitError(KnowledgeError, subprocess.CalledProcessError):
    """A git command failed; still a CalledProcessError, so callers that expect failure keep catching it."""

    def __init__(self, returncode: int, cmd: list[str], stderr: str, cwd: Path) -> None:
        subprocess.CalledProcessError.__init__(self, returncode, cmd, None, stderr)
        self.cwd = cwd

    def __str__(self) -> str:
        said = next((line.strip() for line in (self.stderr or "").splitlines() if line.strip()), "")
        said = said.removeprefix("fatal: ").removeprefix("error: ")
        command = " ".join(self.cmd[:3])
        return f"`{command}` failed in {self.cwd} (exit {self.returncode})" + (f": {said}" if said else "")


def check_ignore(root: Path, rel: str) -> tuple[int, str]:
    """`git check-ignore` of `rel` in `root`: (exit status, its first line of complaint): 0 ignored, 1 not ignored,
    anything else git could not say. It takes no lock (a status-like read beside a running git)."""
    result = subprocess.run(
        ["git", "check-ignore", "-q", "--", rel],
        cwd=root,
        env={**_env(), "GIT_OPTIONAL_LOCKS": "0"},
        capture_output=True,
        check=False,
    )
    lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
    return result.returncode, lines[0] if lines else f"exit {result.returncode}"


def run_git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    """stdout of `git args` in `cwd` (fed `stdin`); raises GitError (a CalledProcessError with a one-line message) on
    failure."""
    try:
        result = subprocess.run(
            ["git", *args],
            input=stdin,
            cwd=cwd,
            env=_env(),
            capture_output=True,
            check=False,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
        )
    except FileNotFoundError as exc:
        if not Path(cwd).is_dir():
            raise NotADirectoryError(str(cwd)) from exc
        raise GitError(127, ["git", *args], "git is not installed (not on PATH)", cwd) from exc
    if result.returncode != 0:
        raise GitError(result.returncode, ["git", *args], result.stderr, cwd)
    return result.stdout


GENERATED_ATTRIBUTES = ("linguist-generated", "linguist-vendored")


def marked_generated(root: Path, paths: list[str]) -> set[str]:
    """Which of `paths` git's attributes mark generated or vendored (`linguist-generated`, `linguist-vendored`, as
    GitHub reads them from `.gitattributes`); none outside a repository."""
    if not paths:
        return set()
    try:
        said = run_git(root, "check-attr", "-z", "--stdin", *GENERATED_ATTRIBUTES, stdin="\0".join(paths) + "\0")
    except (GitError, NotADirectoryError):
        return set()
    fields = said.split("\0")
    return {fields[n] for n in range(0, len(fields) - 2, 3) if fields[n + 2] in ("set", "true")}


def recently_changed(root: Path, commits: int = 100, limit: int = 500) -> list[str]:
    """Paths the last `commits` commits touched, most recent first, at most `limit` ([] outside git or on error)."""
    try:
        out = run_git(root, "log", f"-{commits}", "--name-only", "--format=", "--no-renames")
    except (GitError, OSError):
        return []
    return list(dict.fromkeys(line for line in out.splitlines() if line))[:limit]


def repo_root(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None outside git (or without git installed)."""
    try:
        return Path(run_git(path, "rev-parse", "--show-toplevel").strip())
    except GitError as exc:
        if exc.returncode == 127 or "not a git repository" in (exc.stderr or "").lower():
            return None
        raise  # git is there and the repository is broken (bad config, bad ownership): say so, do not guess
    except (FileNotFoundError, NotADirectoryError):
        return None


def listed_files(root: Path) -> list[str]:
    """Tracked plus untracked-but-not-ignored files (so .gitignore, info/exclude and global excludes hold)."""
    out = run_git(root, "ls-files", "-co", "--exclude-standard", "-z")
    return sorted({name for name in out.split("\0") if name})


def head_commit(root: Path) -> str | None:
    try:
        return run_git(root, "rev-parse", "--verify", "-q", "HEAD").strip() or None
    except subprocess.CalledProcessError:
        return None


def commit_exists(root: Path, commit: str) -> bool:
    try:
        run_git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    except subprocess.CalledProcessError:
        return False
    return True


def changed_paths(root: Path, old: str, new: str) -> set[str]:
    """Paths touched between two commits; both sides of a rename or copy."""
    out = run_git(root, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", old, new)
    fields = [f for f in out.split("\0") if f]
    paths: set[str] = set()
    i = 0
    while i < len(fields):
        status = fields[i]
        count = 2 if status[:1] in {"R", "C"} else 1
        paths.update(fields[i + 1 : i + 1 + count])
        i += 1 + count
    return paths


def worktree_changes(root: Path) -> set[str]:
    """Paths whose work-tree or staged state differs from HEAD, plus untracked ones (not ignored)."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    fields = out.split("\0")
    paths: set[str] = set()
    i = 0
    while i < len(fields):
        entry = fields[i]
        if len(entry) > 3:
            paths.add(entry[3:])
            if entry[0] in {"R", "C"}:  # porcelain -z puts a rename's source in the next field
                i += 1
                if i < len(fields) and fields[i]:
                    paths.add(fields[i])
        i += 1
    return paths


def git_path(root: Path, name: str) -> Path:
    """`git rev-parse --git-path NAME`, absolute: right for worktrees and core.hooksPath alike."""
    path = Path(run_git(root, "rev-parse", "--git-path", name).strip())
    return path if path.is_absolute() else root / path


def config_value(root: Path, key: str) -> str | None:
    try:
        return run_git(root, "config", "--get", key).strip() or None
    except subprocess.CalledProcessError:
        return None


def commits_between(root: Path, old: str, new: str) -> int:
    return int(run_git(root, "rev-list", "--count", f"{old}..{new}").strip() or 0)


def is_ancestor(root: Path, old: str, new: str) -> bool:
    """Whether `old` is `new` or one of its ancestors (false after a reset, rebase or force-pull moved past it)."""
    try:
        run_git(root, "merge-base", "--is-ancestor", old, new)
    except subprocess.CalledProcessError:
        return False
    return True


def blame_commits(root: Path, path: str, rev: str = "HEAD") -> tuple[list[str], dict[str, int]]:
    """The commit of every line of `path` at `rev` (index 0 is line 1) and each commit's committer time."""
    out = run_git(root, "blame", "--porcelain", "--no-textconv", rev, "--", path)
    lines: list[str] = []
    times: dict[str, int] = {}
    current = ""
    for line in out.split("\n"):
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit() and head[2].isdigit():
            current = head[0]
            final = int(head[2])
            lines.extend([""] * (final - len(lines)))
            lines[final - 1] = current
        elif line.startswith("committer-time "):
            times[current] = int(line.split(" ", 1)[1])
    return lines, times


def commits_touching(root: Path, base: str | None, head: str, path: str) -> list[tuple[str, str]]:
    """(commit, subject) of the commits after `base` up to `head` that touch `path`, newest first. The subject is the
    message's first line (`%s` would join a first paragraph written without a blank line into one long line)."""
    span = f"{base}..{head}" if base else head
    out = run_git(root, "log", "--format=%H%x00%B%x1e", span, "--", path)
    records = (record.strip("\n").split("\0", 1) for record in out.split("\x1e"))
    return [(fields[0], fields[1].strip().split("\n", 1)[0]) for fields in records if len(fields) == 2]


def file_at(root: Path, rev: str, path: str) -> str | None:
    try:
        return run_git(root, "show", "--no-textconv", f"{rev}:{path}")
    except subprocess.CalledProcessError:
        return None


def tracked_at(root: Path, rev: str) -> set[str]:
    return {name for name in run_git(root, "ls-tree", "-r", "-z", "--name-only", rev).split("\0") if name}


def renames(root: Path, old: str, new: str) -> dict[str, str]:
    """old path -> new path for the files renamed between two commits."""
    out = run_git(
        root, "diff", "--name-status", "-z", "-M", "--no-ext-diff", "--no-textconv", "--diff-filter=R", old, new
    )
    fields = [f for f in out.split("\0") if f]
    return {fields[i + 1]: fields[i + 2] for i in range(0, len(fields) - 2, 3) if fields[i].startswith("R")}


def changed_lines(root: Path, old: str, new: str, path: str) -> int:
    out = run_git(root, "diff", "--numstat", "--no-ext-diff", "--no-textconv", old, new, "--", path)
    total = 0
    for line in out.splitlines():
        added, removed, _ = ([*line.split("\t"), "", "", ""])[:3]
        total += int(added) if added.isdigit() else 0
        total += int(removed) if removed.isdigit() else 0
    return total


def grep_files(root: Path, rev: str, word: str) -> list[str]:
    """Files at `rev` containing `word` as a whole word."""
    try:
        out = run_git(root, "grep", "--no-textconv", "-l", "-w", "-z", "-F", word, rev, "--")
    except subprocess.CalledProcessError:  # exit 1: no match
        return []
    return [name.split(":", 1)[1] for name in out.split("\0") if ":" in name]


def blobs_at(root: Path, commit: str, paths: list[str]) -> dict[str, bytes | None]:
    """Each path's bytes as committed in `commit` (None where it has no such file), read in one `git cat-file
    --batch`, which runs no filter or textconv driver."""
    if not paths:
        return {}
    names = [path for path in paths if "\n" not in path]
    result = subprocess.run(
        ["git", "cat-file", "--batch"],
        input="".join(f"{commit}:{path}\n" for path in names).encode("utf-8", "surrogateescape"),
        cwd=root,
        env=_env(),
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise GitError(
            result.returncode, ["git", "cat-file", "--batch"], result.stderr.decode("utf-8", "replace"), root
        )
    out = result.stdout
    found: dict[str, bytes | None] = dict.fromkeys(paths)
    position = 0
    for path in names:
        end = out.index(b"\n", position)
        header = out[position:end].split()
        position = end + 1
        if header[-1] == b"missing" or len(header) != 3:
            continue
        size = int(header[2])
        found[path] = out[position : position + size] if header[1] == b"blob" else None
        position += size + 1
    return found


def differs_from_worktree(root: Path, commit: str) -> set[str]:
    """The tracked paths whose work-tree content is not `commit`'s (changed, added or deleted since)."""
    out = run_git(root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", commit, "--")
    return {name for name in out.split("\0") if name}


def regular_files_at(root: Path, commit: str) -> set[str]:
    """The paths `commit` holds as regular files (not links, not submodules)."""
    out = run_git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
    found = set()
    for record in out.split("\0"):
        meta, _, path = record.partition("\t")
        if path and meta.split(" ", 1)[0] in {"100644", "100755"}:
            found.add(path)
    return found
