"""Install, uninstall and inspect knowledge's git hooks (post-commit, post-merge, post-checkout, post-rewrite).

The hook script returns at once: it starts `knowledge reindex-from-changes --from-hook NAME` detached in the
background and never fails or blocks a git command, whatever state the index, the model or the install is in.
An existing hook is kept as `NAME.legacy` and still runs first; uninstall removes only ours and puts it back.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from . import git
from .errors import KnowledgeError
from .fs import private_dir, write_file
from .records import INDEX_DIR_NAME

HOOK_NAMES = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# knowledge-managed-hook"
LOG = Path(INDEX_DIR_NAME) / "logs" / "hook.log"

# Kept byte-identical to hooks/knowledge-hook by a test; @PYTHON@ is filled in at install time.
TEMPLATE = """#!/bin/sh
# knowledge-managed-hook (written by `knowledge hooks install`; `knowledge hooks uninstall` removes it)
# Starts `knowledge reindex-from-changes` in the background and returns at once. It never fails a git command.
KNOWLEDGE_PYTHON=@PYTHON@
hook_name=$(basename "$0")
status=0
if [ -x "$0.legacy" ]; then
    "$0.legacy" "$@" || status=$?
fi
(
    top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
    gitdir=$(git rev-parse --absolute-git-dir 2>/dev/null) || exit 0
    if [ "$hook_name" = post-checkout ] && [ "$3" != 1 ]; then
        exit 0  # a file checkout, not a branch switch
    fi
    if [ -d "$gitdir/rebase-merge" ] || [ -d "$gitdir/rebase-apply" ]; then
        # A rebase fires hooks for every replayed commit; only its final post-rewrite ("rebase") catches up, once.
        if [ "$hook_name" != post-rewrite ] || [ "$1" != rebase ]; then
            exit 0
        fi
    fi
    umask 077
    # Nothing through a committed link, nothing into a tracked .knowledge (`knowledge status` says how to fix it)
    [ -L "$top/.knowledge" ] && exit 0
    [ -z "$(git -C "$top" ls-files -- .knowledge 2>/dev/null | head -n 1)" ] || exit 0
    mkdir -p "$top/.knowledge/logs" || exit 0
    [ -L "$top/.knowledge/logs" ] || [ -L "$top/.knowledge/logs/hook.log" ] && exit 0
    ignore="$top/.knowledge/.gitignore"
    [ -e "$ignore" ] || [ -L "$ignore" ] || printf '*\\n' > "$ignore"
    cd "$top" || exit 0
    unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX
    # Detached: even finding Python and importing knowledge takes longer than a commit should wait. -P: the
    # installed knowledge, never a `knowledge/` package of the repository (the working folder).
    (
        if [ -x "$KNOWLEDGE_PYTHON" ] && "$KNOWLEDGE_PYTHON" -P -c 'import knowledge' 2>/dev/null; then
            set -- "$KNOWLEDGE_PYTHON" -P -m knowledge
        elif command -v knowledge >/dev/null 2>&1; then
            set -- knowledge
        else
            stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
            echo "$stamp $hook_name: nothing indexed: knowledge is not installed ($KNOWLEDGE_PYTHON, PATH)"
            exit 0
        fi
        exec "$@" reindex-from-changes --from-hook "$hook_name"
    ) >> .knowledge/logs/hook.log 2>&1 &
) </dev/null >/dev/null 2>&1
exit $status
"""


@dataclass(frozen=True, slots=True)
class HookState:
    name: str
    path: Path
    state: str  # "installed", "outdated" (ours, from before -P: reinstall), "missing", or "foreign" (someone else's)
    chained: bool  # an earlier hook is kept as NAME.legacy and runs first


def render_hook(python: str | None = None) -> str:
    return TEMPLATE.replace("@PYTHON@", shlex.quote(python or sys.executable))


def _safe_path(path: Path) -> bool:
    try:
        return "-P -m knowledge" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def hooks_dir(root: Path) -> Path:
    """The folder git runs hooks from; refuses core.hooksPath, which is often tracked or shared."""
    configured = git.config_value(root, "core.hooksPath")
    if configured:
        raise KnowledgeError(
            f"core.hooksPath is set to {configured!r}: knowledge will not write hooks there (it may be tracked or "
            "shared). Add `knowledge reindex-from-changes --from-hook post-commit` to the hooks in that folder, or "
            "use the pre-commit framework (docs/hooks.md)"
        )
    return git.git_path(root, "hooks")


def _require_repo(root: Path) -> Path:
    top = git.repo_root(root)
    if top is None:
        raise KnowledgeError(f"{root}: not inside a git work tree; hooks need git")
    return top


def install(root: Path, python: str | None = None) -> list[HookState]:
    """Write our hooks, moving any foreign hook aside as NAME.legacy (it keeps running first)."""
    folder = hooks_dir(_require_repo(root))
    private_dir(folder)
    text = render_hook(python)
    for name in HOOK_NAMES:
        path = folder / name
        legacy = folder / f"{name}.legacy"
        if path.exists() and not is_ours(path):
            if legacy.exists():
                raise KnowledgeError(f"{path}: both a foreign hook and {legacy.name} exist; merge them by hand first")
            os.replace(path, legacy)
        write_file(folder, path, text, mode=0o700)
    return status(root)


def uninstall(root: Path) -> list[HookState]:
    """Remove only our hooks and restore chained ones."""
    folder = hooks_dir(_require_repo(root))
    for name in HOOK_NAMES:
        path = folder / name
        legacy = folder / f"{name}.legacy"
        if path.exists() and is_ours(path):
            path.unlink()
            if legacy.exists():
                os.replace(legacy, path)
    return status(root)


def status(root: Path) -> list[HookState]:
    folder = hooks_dir(_require_repo(root))
    states = []
    for name in HOOK_NAMES:
        path = folder / name
        state = "installed" if is_ours(path) else ("foreign" if path.exists() else "missing")
        if state == "installed" and not _safe_path(path):
            state = "outdated"  # an earlier version's hook: its `python -m knowledge` imports a checkout's package
        states.append(HookState(name, path, state, (folder / f"{name}.legacy").exists()))
    return states
