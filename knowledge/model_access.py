"""ModelAccess: the model's identity, tokenizer and session, each loaded only when something needs it.

Chunking needs the tokenizer (tens of milliseconds); only embedding needs the ONNX session (hundreds of MB). A commit
that changes no indexed file needs neither.
"""

from __future__ import annotations

from collections.abc import Callable

from .config import Settings
from .embedding import BuiltModel, Embedder, model_spec
from .indexer import ModelIdentity, TokenCounter

EmbedderFactory = Callable[[Settings], Embedder]


class ModelAccess:
    def __init__(
        self,
        settings: Settings,
        embedder_factory: EmbedderFactory | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._factory = embedder_factory  # tests inject a deterministic embedder; it stands for all three parts
        self._on_step = on_step
        self._built: BuiltModel | None = None
        self._embedder: Embedder | None = None

    def _model(self) -> BuiltModel:
        if self._built is None:
            settings = self._settings
            self._built = BuiltModel(settings.model, settings.home, settings.model_variant, self._on_step)
        return self._built

    def identity(self) -> ModelIdentity:
        if self._factory is not None:
            embedder = self.embedder()
            return ModelIdentity(embedder.model_id, self._settings.model_variant, embedder.dims, embedder.fingerprint)
        built = self._model()
        return ModelIdentity(built.model_id, built.variant, built.dims, built.fingerprint)

    def may_have_built(self, model_id: str, variant: str, fingerprint: str) -> bool:
        """Whether an index with this manifest could come from the configured model, judged without loading it
        (the exact fingerprint is checked again before any vector is compared)."""
        if self._factory is not None or self._built is not None:
            return fingerprint.startswith(self.identity().fingerprint + "-")
        spec = model_spec(self._settings.model)
        return (model_id, variant) == (spec.name, self._settings.model_variant)

    def counter(self) -> TokenCounter:
        if self._factory is not None:
            return self.embedder()
        return self._model()

    def count_tokens(self, text: str) -> int:
        return self.counter().count_tokens(text)

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._factory(self._settings) if self._factory is not None else self._model().load()
        return self._embedder

    @property
    def loaded(self) -> bool:
        """Whether the embedding session (or the injected embedder) is in memory."""
        return self._embedder is not None
