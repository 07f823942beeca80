"""`knowledge status` as text and as the JSON document the CLI, `GET /v1/status` and MCP `status` give."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from ..records import FileProblem, IndexStatus
from .base import SEARCH_FORMAT_VERSION, in_test_folder, shown

if TYPE_CHECKING:
    from ..records import JsonObject


def status_to_dict(status: IndexStatus) -> JsonObject:
    """The `knowledge status --json` document, which `GET /v1/status` and MCP `status` return as it is."""
    data = {"format_version": SEARCH_FORMAT_VERSION, **asdict(status)}
    data["skipped"] = [str(p) for p in status.skipped]
    data["redactions"] = [str(p) for p in status.redactions]
    data["secrets_redacted"] = len(status.redactions)
    return data


def status_from_dict(data: JsonObject) -> IndexStatus:
    """The inverse of status_to_dict, for answers that came from a server or the daemon."""
    fields = {**data}
    for name in ("skipped", "redactions"):
        fields[name] = tuple(FileProblem(*str(p).split(": ", 1)) for p in data.get(name, ()))
    fields["changed_files"] = tuple(data.get("changed_files", ()))
    return IndexStatus(**{name: fields[name] for name in IndexStatus.__dataclass_fields__ if name in fields})


def _megabytes(size: int) -> str:
    mb = size / (1024 * 1024)
    return f"{mb:,.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


def _memory_line(buffer_bytes: int, searched_bytes: int) -> str:
    """A shared server's buffer beside what its searches read (docs/teams.md, "Memory")."""
    buffer, searched = _megabytes(buffer_bytes), _megabytes(searched_bytes)
    if buffer_bytes >= searched_bytes:
        return f"memory:     shared_buffers {buffer} holds the {searched} searches read"
    return (
        f"memory:     shared_buffers {buffer}, searches read {searched} (chunk rows, text index, vector graphs): "
        f"answers may wait on the disk; set the server's shared_buffers to {searched} or more (docs/teams.md)"
    )


def status_to_text(status: IndexStatus, verbose: bool = False) -> str:
    if not status.exists:
        where = status.index_dir if status.store == "local" else status.store
        return f"No index in {where}; run `knowledge reindex-all`.\n"
    lines = [
        f"root:       {status.root}",
        *([f"store:      {status.store}"] if status.store != "local" else []),
        *([f"origin:     {status.origin}"] if status.origin != "built here" else []),
        f"model:      {status.model}, {status.dims} dims",
        f"indexed:    {status.files} files, {status.chunks} chunks"
        + (
            " ("
            + ", ".join(f"{kind}: {n['files']} files, {n['chunks']} chunks" for kind, n in status.kinds.items())
            + ")"
            if status.kinds
            else ""
        ),
        f"built:      {status.built_at} ({_age(status.age_seconds or 0)} ago)",
        f"embedded:   {status.dense_coverage:.1%} of chunks have vectors"
        + (f" ({status.fill_progress:.1%} embedded by the fill so far)" if status.fill_progress is not None else "")
        + (f" ({status.chunks_pending} pending" if status.chunks_pending else "")
        + (f", about {_age(status.embedding_eta_seconds)} left)" if status.embedding_eta_seconds is not None else "")
        + (
            "; `fill = false`: the index stays at the first stage)"
            if status.chunks_pending and not status.fill
            else "; no fill is running: `knowledge embed` resumes it)"
            if status.chunks_pending and status.embedding_stopped
            else (")" if status.chunks_pending and status.embedding_eta_seconds is None else "")
        ),
        *(
            [
                f"first stage: {status.static_coverage:.1%} of chunks ranked by the static stage meanwhile "
                f"({status.static_stage})"
            ]
            if status.static_coverage
            else []
        ),
        f"thresholds: similarity {status.thresholds.get('threshold')}, "
        f"full content {status.thresholds.get('full_threshold')}",
    ]
    if status.buffer_bytes is not None and status.searched_bytes is not None:
        lines.append(_memory_line(status.buffer_bytes, status.searched_bytes))
    if status.commit:
        relation = status.commit_relation or "HEAD unknown"
        lines.append(f"commit:     {status.commit[:12]} (HEAD {str(status.head)[:12]}: {relation})")
    lines.append(
        f"changed:    {len(status.changed_files)} file(s) differ from the index"
        + (": " + ", ".join(status.changed_files[:10]) if status.changed_files else "")
    )
    if status.reindex_running and status.chunks_pending and not status.embedding_stopped:
        lines.append("reindex:    the background fill is writing vectors now")
    elif status.reindex_running:
        lines.append("reindex:    running now (a hook or another command holds the lock)")
    if status.skipped:
        lines.append(f"problems:   {len(status.skipped)}")
        lines.extend(f"  {shown(str(p))}" for p in status.skipped)
    if status.redactions:
        files = len({p.path for p in status.redactions})
        in_tests = sum(in_test_folder(p.path) for p in status.redactions)
        lines.append(
            f"secrets:    {len(status.redactions)} redacted in {files} file(s)"
            + (f" ({in_tests} of them in tests and fixtures, which reindex counts apart)" if in_tests else "")
            + " (setting `redact_secrets`)"
            + ("" if verbose else "; --verbose lists them")
        )
        if verbose:
            lines.extend(f"  {p}" for p in status.redactions)
    return "\n".join(lines) + "\n"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"
