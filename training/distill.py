"""The trained static stage's starting point: token vectors distilled from a transformer without data, model2vec's
way, over knowledge's own ONNX graph. Every vocabulary token goes through the model alone (`[CLS] token [SEP]`, the
model's own sentence embedding), the vectors are reduced by PCA to STATIC_DIMS, and each row is weighted by
Zipf-estimated frequency (SIF: rare tokens count more). Until issue 42 this was the static stage itself, built by
`knowledge model install`; now it is only where training starts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.embedding import model_spec
from knowledge.embedding.install import build_model, installed_model, open_embedder
from knowledge.embedding.onnx_embedder import OnnxEmbedder
from knowledge.fs import user_cache_dir

STATIC_DIMS = 256
SIF_COEFFICIENT = 1e-4  # model2vec's default
DISTILL_BATCH = 512


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


def distilled_table(teacher: str, home: Path | None = None) -> tuple[npt.NDArray[np.float32], Path]:
    """The teacher's distilled table (cached beside the training pairs) and the teacher's tokenizer file."""
    home = home or user_cache_dir()
    spec = model_spec(teacher)
    installed = installed_model(home, spec, spec.default_variant) or build_model(home, spec, spec.default_variant)
    cached = home / "training" / f"distilled-{installed.path.name}.npy"
    if cached.is_file():
        table: npt.NDArray[np.float32] = np.load(cached)
    else:
        embedder = open_embedder(installed)
        table = reduce(distill(embedder, lambda done, total: print(f"distilling: {done}/{total}", end="\r")))
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, table)
    return table, installed.path / "tokenizer.json"
