"""The Embedder seam and the loader of real ONNX models; onnxruntime and tokenizers live only in this package."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ModelUnavailableError
from .models import DEFAULT_MODEL, MODELS, ModelSpec, resolve_model_name
from .window import window

# Local-first: onnxruntime 1.32 writes a device id and a telemetry database under ~/.cache/Microsoft/ when it is
# imported, unless this is set first (disable_telemetry_events() comes too late for that). Every import of it is
# inside this package, so setting it here covers them all.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What an index needs to know of its model without loading it."""

    model_id: str
    variant: str
    dims: int
    fingerprint: str  # of the built model; empty for models that cannot be cached


class TokenCounter(Protocol):
    """What chunking needs of a model: its token limit and its token count."""

    max_tokens: int

    def count_tokens(self, text: str) -> int: ...


class StaticStage(Protocol):
    """The static first stage (static.py): texts to unit vectors with no transformer run."""

    dims: int
    fingerprint: str  # which table: an index records it, and static vectors of another table are not compared

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]: ...


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
    from .install import build_model, installed_model, open_embedder

    spec = model_spec(name)
    installed = installed_model(home, spec, variant) or build_model(home, spec, variant, on_step)
    return open_embedder(installed)


class BuiltModel:
    """A built model's identity and tokenizer, without the ONNX session (which is what costs memory and time)."""

    def __init__(
        self,
        name: str,
        home: Path,
        variant: str,
        on_step: Callable[[str], None] | None = None,
        build: bool = True,
    ) -> None:
        """`build=False` (an index kept at the first stage): the identity and tokenizer from the weights, no ONNX
        conversion until something loads the model."""
        from .install import build_model, identity_without_build, installed_model

        spec = model_spec(name)
        self._home, self._on_step = home, on_step
        self.spec = spec
        self.model_id = spec.name
        self.variant = variant
        self.dims = spec.dims
        self.max_tokens = spec.max_seq_length
        installed = installed_model(home, spec, variant)
        if installed is None:
            installed = (
                build_model(home, spec, variant, on_step) if build else identity_without_build(home, spec, variant)
            )
        self.installed = installed
        self.fingerprint = self.installed.fingerprint
        self._tokenizer: Any = None  # tokenizers.Tokenizer, loaded on the first count
        self._counts: dict[str, int] = {}
        self._whole: Any = None  # tokenizers.Tokenizer without truncation, for budgets

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes in this model's own tokenizer, without truncation (memoised: lines repeat)."""
        if not text:
            return 0
        known = self._counts.get(text)
        if known is None:
            known = self._counts[text] = self._count(text)
            if len(self._counts) > 200_000:
                self._counts.clear()
        return known

    def prime(self, texts: Sequence[str]) -> None:
        """Count many texts in one call (a file's lines before it is chunked): far cheaper than one call each."""
        fresh = [t for t in dict.fromkeys(texts) if t and t not in self._counts]
        if not fresh:
            return
        self._count("")  # loads the tokenizer
        encode = getattr(self._tokenizer, "encode_batch_fast", None) or self._tokenizer.encode_batch
        windows = [window(text, self.max_tokens) for text in fresh]
        for text, cut, encoding in zip(fresh, windows, encode(windows, add_special_tokens=False), strict=True):
            count = len(encoding.ids)
            if cut is not text and count < self.max_tokens:  # giant words in the window: count them all
                count = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
            self._counts[text] = count
        if len(self._counts) > 200_000:
            self._counts.clear()

    def count_whole(self, text: str) -> int:
        """Every token of `text`, past the model's window too: what a token budget must count (`count_tokens` stops
        at the window, as the chunker has always counted)."""
        if not text:
            return 0
        if self._whole is None:
            from .onnx_embedder import load_tokenizer

            tokenizer_json = (self.installed.path / "tokenizer.json").read_text(encoding="utf-8")
            self._whole = load_tokenizer(tokenizer_json, 0, self.spec.pad_id)
        return len(self._whole.encode(text, add_special_tokens=False).ids)

    def _count(self, text: str) -> int:
        if self._tokenizer is None:
            from .onnx_embedder import load_tokenizer

            tokenizer_json = (self.installed.path / "tokenizer.json").read_text(encoding="utf-8")
            self._tokenizer = load_tokenizer(tokenizer_json, self.max_tokens, self.spec.pad_id)
        cut = window(text, self.max_tokens)
        count = len(self._tokenizer.encode(cut, add_special_tokens=False).ids)
        if cut is not text and count < self.max_tokens:
            count = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return count

    def load(self) -> Embedder:
        from .install import build_model, open_embedder

        if not (self.installed.path / "model.onnx").is_file():  # identity only until now: built when first loaded
            self.installed = build_model(self._home, self.spec, self.variant, self._on_step)
        return open_embedder(self.installed)


__all__ = ["DEFAULT_MODEL", "MODELS", "BuiltModel", "Embedder", "ModelSpec", "load_embedder", "model_spec"]
