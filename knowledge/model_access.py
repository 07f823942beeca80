"""ModelAccess: the model's identity, tokenizer and session, each loaded only when something needs it.

Chunking needs the tokenizer (tens of milliseconds); only embedding needs the ONNX session (hundreds of MB). A commit
that changes no indexed file needs neither.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .config import MODEL_VARIANTS, Settings
from .corpus import KINDS
from .embedding import BuiltModel, Embedder, ModelIdentity, StaticStage, TokenCounter, model_spec
from .errors import IndexIncompatibleError, KnowledgeError
from .store import Manifest
from .store.engines import Engine, engine_for

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
        self._static: StaticStage | None = None
        self._static_checked = False
        self._loading = threading.RLock()

    def _model(self) -> BuiltModel:
        if self._built is None:
            settings = self._settings
            # fill = false: the index stays at the first stage, so no ONNX conversion until a vector is asked for
            self._built = BuiltModel(
                settings.model, settings.home, settings.model_variant, self._on_step, build=settings.fill
            )
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
        """Every token `text` takes, however long (what budgets count; the chunker's counter stops at the window)."""
        if self._factory is not None:
            return self.embedder().count_tokens(text)
        return self._model().count_whole(text)

    def embedder(self) -> Embedder:
        with self._loading:  # a server's warm-up thread and its first request: one load
            if self._embedder is None:
                self._embedder = self._factory(self._settings) if self._factory is not None else self._model().load()
            return self._embedder

    def static(self) -> StaticStage | None:
        """The static first stage shipped with knowledge (no model needed); an injected embedder may bring its own
        as `static_stage()` (None: it has none). Loaded once."""
        if not self._static_checked:
            self._static_checked = True
            if self._factory is not None:
                self._static = getattr(self.embedder(), "static_stage", lambda: None)()
            else:
                from .embedding.static import shipped_static

                self._static = shipped_static()
        return self._static

    def issue_static(self) -> StaticStage | None:
        """What embeds a task's text for the static stage: the issue side shipped beside the shipped table (trained so
        an issue lands near the code its fix changes: training/train_issue_static.py), else the stage itself."""
        from .embedding.static import StaticEmbedder, issue_static

        stage = self.static()
        return (issue_static(stage) or stage) if isinstance(stage, StaticEmbedder) else stage

    def static_fingerprint(self) -> str:
        """Which static table this process writes and compares (its record only, when it is the shipped one)."""
        if self._factory is None:
            from .embedding.shipped import shipped_fingerprint

            return shipped_fingerprint()
        stage = self.static()
        return "" if stage is None else getattr(stage, "fingerprint", "")

    @property
    def embedder_factory(self) -> EmbedderFactory | None:
        """The embedder a test injected (None: the configured model), for another knowledge base asked alike."""
        return self._factory

    @property
    def loaded(self) -> bool:
        """Whether the embedding session (or the injected embedder) is in memory."""
        return self._embedder is not None

    def mismatch(self, kind: str, manifest: Manifest) -> IndexIncompatibleError:
        """The error for an index built by another model than the settings name, saying how to go on."""
        built = f"{manifest.model_id} {manifest.model_variant}"
        wanted = f"{model_spec(self._settings.model).name} {self._settings.model_variant}"
        if built == wanted:  # same names, other weights or export: the fingerprint differs
            return IndexIncompatibleError(
                f"this index ({kind}) was built with another build of {built}; run `knowledge reindex-all`"
            )
        return IndexIncompatibleError(
            f"this index ({kind}) was built with {built}, but the settings ask for {wanted}; run "
            f"`knowledge reindex-all` to switch to {wanted} (its vectors are computed again), or set model = "
            f'"{manifest.model_id}" and model_variant = "{manifest.model_variant}" to keep this index'
        )


def default_variant(root: Path, settings: Settings, engine: Engine | None = None) -> str:
    """The variant when no setting names one: what an existing index of this model was built with (an upgrade
    never invalidates an index), local or shared, else the model's default."""
    spec = model_spec(settings.model)
    try:
        engine = engine or engine_for(root, settings.store, settings.store_repository)
        manifests = [engine.manifest(kind) for kind in KINDS]
    except KnowledgeError:  # an index folder refused, a database down: said by the command that needs the index
        manifests = []
    variants = [m.model_variant for m in manifests if m is not None and m.model_id == spec.name]
    return next((v for v in variants if v in MODEL_VARIANTS), spec.default_variant)
