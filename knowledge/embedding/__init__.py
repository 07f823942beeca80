"""The Embedder seam and the loader of real ONNX models; onnxruntime and tokenizers live only in this package."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..errors import ModelUnavailableError
from .models import DEFAULT_MODEL, MODELS, ModelSpec, resolve_model_name


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; what the indexer and search depend on."""

    model_id: str
    dims: int
    max_tokens: int
    fingerprint: str

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]:
        """Vectors [len(texts), dims] in input order."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One vector [dims] for a search query."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many model tokens `text` takes (no special tokens, no truncation)."""
        ...


def model_spec(name: str) -> ModelSpec:
    """The spec of a model name or alias; ModelUnavailableError listing the choices when unknown."""
    canonical = resolve_model_name(name)
    if canonical is None:
        raise ModelUnavailableError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[canonical]


def load_embedder(
    name: str, home: Path, variant: str = "fp32", on_step: Callable[[str], None] | None = None
) -> Embedder:
    """The named model, built and verified on first use, then loaded from the cache under `home`."""
    from .install import build_model, installed_model
    from .onnx_embedder import OnnxEmbedder

    spec = model_spec(name)
    installed = installed_model(home, spec, variant) or build_model(home, spec, variant, on_step)
    embedder = OnnxEmbedder(
        installed.path,
        model_id=spec.name,
        dims=spec.dims,
        max_tokens=spec.max_seq_length,
        pad_id=spec.pad_id,
        fingerprint=installed.fingerprint,
    )
    return embedder


__all__ = ["DEFAULT_MODEL", "MODELS", "Embedder", "ModelSpec", "load_embedder", "model_spec"]
