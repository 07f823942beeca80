"""The static first stage: token vectors trained for code and docs retrieval (training/train_static.py), shipped
inside the package. A text's static vector is the normalised mean of its tokens' rows: thousands of chunks a second
on one core, with no transformer run at all. It stands in for a chunk's transformer vector until that arrives, and
needs no model installed: the table and its tokenizer are package data, checked against their recorded sha256 on
every load (a corrupt file is refused, never half-used).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ModelVerificationError
from ..fs import write_file
from .shipped import INFO, ISSUE_INFO, ISSUE_TABLE, SHIPPED, STATIC_VERSION, TABLE, TOKENIZER, fingerprint_of
from .window import window

__all__ = ["INFO", "SHIPPED", "TABLE", "TOKENIZER", "StaticEmbedder", "load_static", "save_table", "shipped_static"]

MAX_STATIC_TOKENS = 512  # a chunk's first 512 tokens say what it is about; the mean of more only blurs it
GATHER_TOKENS = 16_384  # token rows gathered at once (16 MB at 256 dims): all of them at once cost GBs and seconds
# The verification: each word must find its synonym among these, in the static space.
VERIFY_PAIRS = (  # no token in common within a pair: only meaning can match them (a random table matches ~1 in 12)
    ("automobile", "car"),
    ("physician", "doctor"),
    ("joyful", "happy"),
    ("ocean", "sea"),
    ("purchase", "buy"),
    ("begin", "start"),
    ("enormous", "huge"),
    ("rapid", "fast"),
    ("mistake", "error"),
    ("puppy", "dog"),
    ("cash", "money"),
    ("illness", "disease"),
)
MIN_VERIFIED = 10  # of the 12 questions


class StaticEmbedder:
    """Texts to unit vectors by averaging token rows (the table's own tokenizer, every token, no special ones)."""

    def __init__(self, table: npt.NDArray[np.float32], tokenizer: Any, fingerprint: str) -> None:  # noqa: ANN401
        self.table = table
        self.dims = int(table.shape[1])
        self.fingerprint = fingerprint
        self._tokenizer = tokenizer

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encode = getattr(self._tokenizer, "encode_batch_fast", None) or self._tokenizer.encode_batch
        windows = [window(text, MAX_STATIC_TOKENS) for text in texts]
        ids = [encoding.ids[:MAX_STATIC_TOKENS] for encoding in encode(windows, add_special_tokens=False)]
        for at, (text, cut) in enumerate(zip(texts, windows, strict=True)):
            if cut is not text and len(ids[at]) < MAX_STATIC_TOKENS:  # giant words in the window: read them all
                ids[at] = self._tokenizer.encode(text, add_special_tokens=False).ids[:MAX_STATIC_TOKENS]
        start = 0
        while start < len(ids):  # texts in groups of about GATHER_TOKENS tokens: the gathered rows stay small
            end, size = start, 0
            while end < len(ids) and (size == 0 or size + len(ids[end]) <= GATHER_TOKENS):
                size += len(ids[end])
                end += 1
            self._sum_rows(ids[start:end], out[start:end])
            start = end
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit

    def _sum_rows(self, ids: list[list[int]], out: npt.NDArray[np.float32]) -> None:
        lengths = np.array([len(row) for row in ids])
        filled = lengths > 0
        if filled.any():
            flat = np.fromiter((token for row in ids for token in row), dtype=np.int64, count=int(lengths.sum()))
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[filled]
            out[filled] = np.add.reduceat(self.table[flat], starts, axis=0)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector


def verified(static: StaticEmbedder) -> int:
    """How many of VERIFY_PAIRS' questions find their own passage first in the static space."""
    questions = static.embed_documents([q for q, _ in VERIFY_PAIRS])
    passages = static.embed_documents([p for _, p in VERIFY_PAIRS])
    return int(((questions @ passages.T).argmax(axis=1) == np.arange(len(VERIFY_PAIRS))).sum())


def quantized(table: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """int8 rows with one scale each (a quarter of float32; the rows' directions survive to ~0.4%)."""
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    rows = np.round(table / scales[:, None]).astype(np.int8)
    return rows, scales.astype(np.float32)


def save_table(folder: Path, table: npt.NDArray[np.float32], tokenizer: Path, recipe: dict[str, Any]) -> None:
    """Write a trained table, its tokenizer and its record (checksums, recipe) into `folder` (the package's data)."""
    rows, scales = quantized(table)
    buffer = io.BytesIO()
    np.savez(buffer, rows=rows, scales=scales)
    raw, words = buffer.getvalue(), tokenizer.read_bytes()
    info = {
        "version": STATIC_VERSION,
        "dims": int(table.shape[1]),
        "vocabulary": int(table.shape[0]),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "tokenizer_sha256": hashlib.sha256(words).hexdigest(),
        "recipe": recipe,
    }
    from .onnx_embedder import load_tokenizer

    passed = verified(StaticEmbedder(dequantized(rows, scales), load_tokenizer(words.decode("utf-8"), 0, 0), ""))
    if passed < MIN_VERIFIED:  # a table trained so far that it forgot plain words: not shipped
        raise ModelVerificationError(f"{folder / TABLE}: finds {passed} of {len(VERIFY_PAIRS)} synonyms; not shipped")
    info["verified"] = f"{passed}/{len(VERIFY_PAIRS)}"
    write_file(folder.parent, folder / TABLE, raw, mode=0o644)
    write_file(folder.parent, folder / TOKENIZER, words, mode=0o644)
    write_file(folder.parent, folder / INFO, json.dumps(info, indent=2) + "\n", mode=0o644)


def save_issue_rows(
    folder: Path, trained: npt.NDArray[np.float32], code: StaticEmbedder, recipe: dict[str, Any]
) -> int:
    """Write the issue side (training/train_issue_static.py): the rows of `trained` that moved past the int8 step
    from `code`'s, with `code`'s fingerprint; refused when its questions no longer find plain words' synonyms."""
    step = np.abs(code.table).max(axis=1) / 127.0
    moved = np.flatnonzero(np.abs(trained - code.table).max(axis=1) > step)
    rows, scales = quantized(trained[moved])
    buffer = io.BytesIO()
    np.savez(buffer, ids=moved.astype(np.int32), rows=rows, scales=scales)
    raw = buffer.getvalue()
    issue = _with_rows(code, moved, dequantized(rows, scales), "")
    questions = issue.embed_documents([q for q, _ in VERIFY_PAIRS])
    passages = code.embed_documents([p for _, p in VERIFY_PAIRS])
    passed = int(((questions @ passages.T).argmax(axis=1) == np.arange(len(VERIFY_PAIRS))).sum())
    if passed < MIN_VERIFIED:
        raise ModelVerificationError(
            f"{folder / ISSUE_TABLE}: finds {passed} of {len(VERIFY_PAIRS)} synonyms; not shipped"
        )
    info = {
        "version": STATIC_VERSION,
        "pairs_with": code.fingerprint,
        "rows": len(moved),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "verified": f"{passed}/{len(VERIFY_PAIRS)}",
        "recipe": recipe,
    }
    write_file(folder.parent, folder / ISSUE_TABLE, raw, mode=0o644)
    write_file(folder.parent, folder / ISSUE_INFO, json.dumps(info, indent=2) + "\n", mode=0o644)
    return len(moved)


def _with_rows(
    code: StaticEmbedder, ids: npt.NDArray[np.integer[Any]], rows: npt.NDArray[np.float32], name: str
) -> StaticEmbedder:
    table = code.table.copy()
    table[ids] = rows
    return StaticEmbedder(table, code._tokenizer, name)


@functools.cache
def issue_static(code: StaticEmbedder) -> StaticEmbedder | None:
    """The issue side shipped beside `code` (a task's text embedded so it lands near the code its fix changes), or
    None when none ships for that table; ModelVerificationError when its file does not match its record."""
    return load_issue_static(SHIPPED, code)


def load_issue_static(folder: Path, code: StaticEmbedder) -> StaticEmbedder | None:
    try:
        info = json.loads((folder / ISSUE_INFO).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ModelVerificationError(f"{folder / ISSUE_INFO}: the issue side is unreadable ({exc})") from exc
    if info.get("pairs_with") != code.fingerprint:
        return None
    try:
        raw = (folder / ISSUE_TABLE).read_bytes()
    except OSError as exc:
        raise ModelVerificationError(f"{folder / ISSUE_TABLE}: the issue side is missing ({exc})") from exc
    if hashlib.sha256(raw).hexdigest() != info.get("sha256"):
        raise ModelVerificationError(f"{folder / ISSUE_TABLE}: does not match its recorded sha256 (corrupt); reinstall")
    with np.load(io.BytesIO(raw)) as stored:
        rows = dequantized(stored["rows"], stored["scales"])
        return _with_rows(code, stored["ids"], rows, f"{code.fingerprint}+issue-{info['sha256'][:12]}")


def dequantized(rows: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    table: npt.NDArray[np.float32] = rows.astype(np.float32) * scales[:, None]
    return table


@functools.cache
def shipped_static() -> StaticEmbedder:
    """The static stage shipped with knowledge (loaded once per process)."""
    return load_static(SHIPPED)


def load_static(folder: Path) -> StaticEmbedder:
    """The trained table in `folder`, checked against its record; ModelVerificationError when missing or corrupt."""
    from .onnx_embedder import load_tokenizer

    try:
        info = json.loads((folder / INFO).read_text(encoding="utf-8"))
        raw, words = (folder / TABLE).read_bytes(), (folder / TOKENIZER).read_bytes()
    except (OSError, ValueError) as exc:
        raise ModelVerificationError(f"{folder / INFO}: the static stage is missing or unreadable ({exc})") from exc
    for name, data, key in ((TABLE, raw, "sha256"), (TOKENIZER, words, "tokenizer_sha256")):
        if hashlib.sha256(data).hexdigest() != info.get(key):
            raise ModelVerificationError(
                f"{folder / name}: does not match its recorded sha256 (corrupt); reinstall knowledge"
            )
    with np.load(io.BytesIO(raw)) as stored:
        table = dequantized(stored["rows"], stored["scales"])
    tokenizer = load_tokenizer(words.decode("utf-8"), 0, 0)
    return StaticEmbedder(table, tokenizer, fingerprint_of(info))
