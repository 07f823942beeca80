"""The static first stage: token vectors distilled from the installed transformer the model2vec way, offline, over our
own ONNX graph. Every vocabulary token goes through the model alone (`[CLS] token [SEP]`, the model's own sentence
embedding), the vectors are reduced by PCA to STATIC_DIMS, and each row is weighted by Zipf-estimated frequency
(SIF: rare tokens count more). A text's static vector is the normalised mean of its tokens' rows: thousands of chunks a
second on one core, with no transformer run at all. It stands in for a chunk's transformer vector until that arrives.

The build is verified (in the static space, questions must find their own passages) and the
file is checked against its recorded sha256 on every load: a corrupt file is refused, never half-used.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import ModelUnavailableError, ModelVerificationError
from ..fs import atomic_write
from ..records import Progress

if TYPE_CHECKING:
    from .onnx_embedder import OnnxEmbedder

STATIC_VERSION = 1
STATIC_DIMS = 256
SIF_COEFFICIENT = 1e-4  # model2vec's default
DISTILL_BATCH = 512
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
MIN_VERIFIED = 10  # of the 12 questions; MiniLM and mpnet find 12
TABLE, INFO = "static.npy", "static.json"


def distill(embedder: OnnxEmbedder, on_progress: Callable[[int, int], None] | None = None) -> npt.NDArray[np.float32]:
    """One vector per vocabulary id: the model's sentence embedding of that token alone."""
    cls, sep = embedder.token_ids([""])[0]
    vocab = embedder.vocabulary_size()
    out = np.zeros((vocab, embedder.dims), dtype=np.float32)
    for start in range(0, vocab, DISTILL_BATCH):
        ids = range(start, min(vocab, start + DISTILL_BATCH))
        out[start : start + len(ids)] = embedder.run_ids([[cls, token, sep] for token in ids])
        if on_progress is not None:
            on_progress(start + len(ids), vocab)
    return out


def reduce(vectors: npt.NDArray[np.float32], dims: int = STATIC_DIMS) -> npt.NDArray[np.float32]:
    """PCA to `dims` (centred, by SVD), then SIF weights from Zipf ranks: model2vec's post-processing."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    _, _, components = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    reduced = centred @ components[:dims].T.astype(np.float32)
    inverse_rank = 1.0 / np.arange(2, len(vectors) + 2)
    probability = inverse_rank / inverse_rank.sum()
    weights = SIF_COEFFICIENT / (SIF_COEFFICIENT + probability)
    weighted: npt.NDArray[np.float32] = (reduced * weights[:, None]).astype(np.float32)
    return weighted


class StaticEmbedder:
    """Texts to unit vectors by averaging token rows; the same tokenizer as the transformer it was distilled from."""

    def __init__(self, table: npt.NDArray[np.float32], tokenizer: Any, fingerprint: str) -> None:  # noqa: ANN401
        self.table = table
        self.dims = int(table.shape[1])
        self.fingerprint = fingerprint
        self._tokenizer = tokenizer

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ids = [encoding.ids[:MAX_STATIC_TOKENS] for encoding in encodings]
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


def build_static(
    model_dir: Path,
    embedder: OnnxEmbedder,
    say: Callable[[str], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> int:
    """Distil, reduce, verify and write the static table beside the model; returns how many checks it passed.
    Progress goes to `on_progress` after every batch (a bar on a terminal), else a line to `say` now and then."""
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if on_progress is not None:
            elapsed = time.monotonic() - started
            eta = elapsed / done * (total - done) if done else None
            on_progress(Progress("static stage", done, total, eta))
        elif say is not None and (done == total or done % (DISTILL_BATCH * 10) == 0):
            say(f"static stage: {done}/{total} vocabulary tokens")

    table = reduce(distill(embedder, progress))
    passed = verified(StaticEmbedder(table, embedder.tokenizer_without_truncation(), ""))
    if passed < MIN_VERIFIED:
        raise ModelVerificationError(
            f"{model_dir}: the static stage finds {passed} of {len(VERIFY_PAIRS)} verification passages (at least "
            f"{MIN_VERIFIED} needed); the build was discarded"
        )
    scratch = model_dir / f".{TABLE}.building"
    with scratch.open("wb") as handle:
        np.save(handle, table)
    digest = hashlib.sha256(scratch.read_bytes()).hexdigest()
    scratch.replace(model_dir / TABLE)
    info = {
        "version": STATIC_VERSION,
        "dims": int(table.shape[1]),
        "vocabulary": int(table.shape[0]),
        "sha256": digest,
        "verified": f"{passed}/{len(VERIFY_PAIRS)}",
        "seconds": round(time.monotonic() - started, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    atomic_write(model_dir / INFO, json.dumps(info, indent=2))
    return passed


def static_built(model_dir: Path) -> bool:
    try:
        info = json.loads((model_dir / INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return info.get("version") == STATIC_VERSION and (model_dir / TABLE).is_file()


def load_static(model_dir: Path, tokenizer: Any) -> StaticEmbedder:  # noqa: ANN401 - tokenizers.Tokenizer
    """The verified static table of the model in `model_dir`; ModelUnavailableError when missing or corrupt."""
    try:
        info = json.loads((model_dir / INFO).read_text(encoding="utf-8"))
        raw = (model_dir / TABLE).read_bytes()
    except (OSError, ValueError) as exc:
        raise ModelUnavailableError(f"{model_dir}: no static stage built; run `knowledge model install`") from exc
    if hashlib.sha256(raw).hexdigest() != info.get("sha256"):
        raise ModelVerificationError(
            f"{model_dir / TABLE}: does not match its recorded sha256 (corrupt); run `knowledge model install` to "
            "build it again"
        )
    table = np.load(io.BytesIO(raw))
    return StaticEmbedder(
        table.astype(np.float32, copy=False), tokenizer, f"static{STATIC_VERSION}-{info['sha256'][:12]}"
    )
