"""Snapshots: a local index in one file, built once (in CI, on the default branch) and imported by any clone.

A snapshot is an uncompressed tar (the index files are mostly vectors and already dense) holding `snapshot.json`
first, then each kind's SQLite file (chunks, lexical index, static rows; a consistent copy made with SQLite's backup
API), its `.meta.json` and its `.usearch` vectors where they exist, and the history. `snapshot.json` names the
commit, the model and every file with its size and sha256. Import reads only the names it knows, each a plain file
of the stated size and checksum, into a folder of its own, then swaps them in under the writer lock; nothing in a
snapshot is executed or unpickled."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import KnowledgeError
from ..fs import atomic_write, fsync_dir, open_new_private, private_dir
from ..interrupts import terminated_as_exit
from . import index_dir
from .local_files import index_files_problem
from .local_snapshot_truth import untrue_paths

SNAPSHOT_FORMAT = 1
MANIFEST = "snapshot.json"
ORIGIN = "origin.json"
_MEMBER = re.compile(r"^(?:(?:docs|code)\.(?:sqlite|usearch|meta\.json)|history\.sqlite)$")
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    commit: str
    model_id: str
    model_fingerprint: str
    files: dict[str, tuple[int, str]]  # name -> (size, sha256)
    path: Path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def export_index(root: Path, dest: Path, commit: str, model_id: str, model_fingerprint: str) -> SnapshotInfo:
    """Write the index of `root` to `dest` (the caller holds the writer lock, so no file moves meanwhile)."""
    folder = index_dir(root)
    if not dest.parent.is_dir():
        raise KnowledgeError(f"{dest}: no folder {dest.parent} to write it in; create it first")
    untrue = untrue_paths(
        root, commit, sorted(p for p in folder.glob("*.sqlite") if _MEMBER.match(p.name) and p.name != "history.sqlite")
    )
    if untrue:  # indexed from a work tree with changes not committed: no clone could import it
        raise KnowledgeError(
            f"the index holds {len(untrue)} file(s) as they are in the work tree, not as committed at {commit[:12]} "
            f"(first: {untrue[0]}); commit them (the hook reindexes), or export from a clean checkout"
        )
    with tempfile.TemporaryDirectory(prefix=".snapshot.", dir=folder) as scratch, terminated_as_exit():
        staged: dict[str, Path] = {}
        for name in sorted(os.listdir(folder)):
            if not _MEMBER.match(name):
                continue
            copy = Path(scratch) / name
            if name.endswith(".sqlite"):  # one consistent file: what the WAL holds is folded in
                source, target = sqlite3.connect(folder / name), sqlite3.connect(copy)
                with contextlib.closing(source), contextlib.closing(target):
                    source.backup(target)
            else:
                shutil.copyfile(folder / name, copy)
            staged[name] = copy
        files = {name: (path.stat().st_size, _sha256(path)) for name, path in staged.items()}
        manifest = {
            "format": SNAPSHOT_FORMAT,
            "commit": commit,
            "model_id": model_id,
            "model_fingerprint": model_fingerprint,
            "files": {name: {"size": size, "sha256": sha} for name, (size, sha) in files.items()},
        }
        manifest_path = Path(scratch) / MANIFEST
        atomic_write(manifest_path, json.dumps(manifest, indent=1))
        partial = dest.with_name(f".{dest.name}.partial")
        try:
            partial.unlink(missing_ok=True)
            with (
                open_new_private(partial) as handle,  # private, as the index it holds
                tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as archive,
            ):
                archive.add(manifest_path, arcname=MANIFEST, recursive=False)
                for name, path in staged.items():
                    archive.add(path, arcname=name, recursive=False)
            os.replace(partial, dest)
        except OSError as exc:
            raise KnowledgeError(f"{dest}: cannot be written ({exc.strerror or exc})") from None
        finally:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
    return SnapshotInfo(commit, model_id, model_fingerprint, files, dest)


def read_manifest(path: Path) -> SnapshotInfo:
    """The snapshot's own description, checked for shape; one line naming the file when it is not a snapshot."""
    try:
        with tarfile.open(path, "r:") as archive:
            first = archive.next()
            if first is None or first.name != MANIFEST or not first.isfile() or first.size > 1 << 20:
                raise KnowledgeError(f"{path}: not a knowledge snapshot (no {MANIFEST} first)")
            handle = archive.extractfile(first)
            data = json.loads(handle.read() if handle else b"")
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise KnowledgeError(f"{path}: not a readable knowledge snapshot ({exc})") from None
    try:
        if data["format"] != SNAPSHOT_FORMAT:
            raise KnowledgeError(f"{path}: snapshot format {data['format']}, this knowledge reads {SNAPSHOT_FORMAT}")
        files = {name: (int(f["size"]), str(f["sha256"])) for name, f in data["files"].items()}
        info = SnapshotInfo(str(data["commit"]), str(data["model_id"]), str(data["model_fingerprint"]), files, path)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise KnowledgeError(f"{path}: the snapshot's {MANIFEST} is malformed ({exc})") from None
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", info.commit):
        raise KnowledgeError(f"{path}: the snapshot names no commit")
    stated = sum(size for size, _ in info.files.values())
    if stated > path.stat().st_size:
        raise KnowledgeError(
            f"{path}: its files are said to hold {stated:,} bytes, more than the {path.stat().st_size:,} of the "
            f"snapshot; refused"
        )
    unknown = sorted(name for name in info.files if not _MEMBER.match(name))
    if unknown or not any(name.endswith(".sqlite") and name != "history.sqlite" for name in info.files):
        said = f" (unknown: {', '.join(unknown)})" if unknown else ""
        raise KnowledgeError(f"{path}: the snapshot holds no index{said}")
    return info


def import_index(root: Path, info: SnapshotInfo, swap: Callable[[Callable[[], None]], None], max_bytes: int) -> None:
    """Unpack `info.path` into a private folder, each file checked against its stated size and checksum, then
    `swap` runs the move into `.knowledge/` (under the writer lock): the kinds the snapshot holds replace the ones
    there, the others stay, and the index's origin says it was imported. Only plain members whose bytes lie inside
    the archive are read (a sparse member's stated size is not what it holds), and never more than `max_bytes` in
    all."""
    folder = index_dir(root)
    private_dir(folder)
    archive_bytes = info.path.stat().st_size
    if archive_bytes > max_bytes:
        raise KnowledgeError(f"{info.path}: {archive_bytes:,} bytes, over the snapshot_max_bytes limit ({max_bytes:,})")
    with tempfile.TemporaryDirectory(prefix=".import.", dir=folder) as scratch:
        seen: set[str] = set()
        try:
            with info.path.open("rb") as raw, tarfile.open(fileobj=raw, mode="r:") as archive:
                for member in archive:
                    if member.name == MANIFEST:
                        continue
                    plain = member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and not member.issparse()
                    if member.name not in info.files or not plain or member.name in seen:
                        raise KnowledgeError(f"{info.path}: unexpected entry {member.name!r}; the snapshot is refused")
                    if member.offset_data + member.size > archive_bytes:
                        raise KnowledgeError(f"{info.path}: {member.name} runs past the end of the file; truncated?")
                    size, sha = info.files[member.name]
                    if member.size != size:
                        raise KnowledgeError(f"{info.path}: {member.name} is {member.size} bytes, {size} stated")
                    target = Path(scratch) / member.name
                    with open_new_private(target) as out:
                        _copy_range(raw, archive, member, out)
                    # the checksum of the copy itself: what is imported is what was checked
                    if _sha256(target) != sha:
                        raise KnowledgeError(f"{info.path}: {member.name} does not match its checksum (tampered?)")
                    seen.add(member.name)
        except (tarfile.TarError, OSError) as exc:
            raise KnowledgeError(f"{info.path}: cannot be read to the end ({exc}); truncated?") from None
        missing = sorted(set(info.files) - seen)
        if missing:
            raise KnowledgeError(f"{info.path}: truncated: {', '.join(missing)} missing")
        databases = [
            Path(scratch) / name for name in sorted(seen) if name.endswith(".sqlite") and name != "history.sqlite"
        ]
        for database in databases:
            problem = index_files_problem(Path(scratch), database.name.removesuffix(".sqlite"))
            if problem:
                raise KnowledgeError(f"{info.path}: {problem}; the snapshot is refused, nothing was replaced")
        untrue = untrue_paths(root, info.commit, databases)
        if untrue:
            raise KnowledgeError(
                f"{info.path}: the chunks of {len(untrue)} file(s) hold text the file does not have at "
                f"{info.commit[:12]} (first: {untrue[0]}); the snapshot is refused, nothing was replaced"
            )

        def move() -> None:
            kinds = {name.split(".", 1)[0] for name in seen if name != "history.sqlite"}
            for kind in kinds:  # a kind's old files go, the snapshot's come: never a mix of two indexes
                for suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm", ".usearch", ".meta.json"):
                    (folder / f"{kind}{suffix}").unlink(missing_ok=True)
            if "history.sqlite" in seen:
                for suffix in ("-wal", "-shm"):
                    (folder / f"history.sqlite{suffix}").unlink(missing_ok=True)
            for name in seen:
                os.replace(Path(scratch) / name, folder / name)
            fsync_dir(folder)
            write_origin(root, info.commit)

        swap(move)


def _copy_range(source: BinaryIO, archive: tarfile.TarFile, member: tarfile.TarInfo, out: BinaryIO) -> None:
    """A plain member's bytes into `out`, copied by the kernel from the archive's file `source` where it can
    (copy_file_range: no pass through Python's buffers, twice as fast at 400 MB), else read and written."""
    try:
        if not hasattr(os, "copy_file_range"):
            raise OSError("no kernel copy")
        offset, left = member.offset_data, member.size
        while left > 0:
            copied = os.copy_file_range(source.fileno(), out.fileno(), min(left, 1 << 30), offset)
            if copied <= 0:
                raise OSError("the archive ended early")
            offset, left = offset + copied, left - copied
    except (OSError, AttributeError, io.UnsupportedOperation):
        out.seek(0)
        out.truncate()
        reader = archive.extractfile(member)
        while reader is not None and (chunk := reader.read(_CHUNK)):
            out.write(chunk)


def write_origin(root: Path, commit: str) -> None:
    """Where the index came from, for `status`: imported from a snapshot of `commit`, as long as the index built at
    that moment is the one in place (a rebuild here makes it "built here" again)."""
    folder = index_dir(root)
    built = {kind: _built_at(folder, kind) for kind in ("docs", "code")}
    atomic_write(folder / ORIGIN, json.dumps({"imported_from": commit, "built_at": built}))


def read_origin(root: Path) -> str | None:
    """`imported from a snapshot of <commit>` while the imported index is in place; None: built here."""
    folder = index_dir(root)
    try:
        data = json.loads((folder / ORIGIN).read_text())
        recorded = {kind: at for kind, at in data["built_at"].items() if at}
        if recorded and all(_built_at(folder, kind) == at for kind, at in recorded.items()):
            return f"imported from a snapshot of {str(data['imported_from'])[:12]}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return None


def _built_at(folder: Path, kind: str) -> str:
    try:
        return str(json.loads((folder / f"{kind}.meta.json").read_text())["manifest"]["built_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
