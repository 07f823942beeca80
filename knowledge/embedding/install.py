"""Build, verify and cache a model under KNOWLEDGE_HOME/models: weights package -> ONNX -> reference check.

A model folder is complete only once `model.json` exists in it: folders are built under a temporary name and renamed
into place, so an interrupted build leaves nothing that looks usable.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..config import MODEL_VARIANTS
from ..errors import ModelUnavailableError, ModelVerificationError
from ..fs import atomic_write, file_lock, make_dirs, write_file
from .models import MAX_INT8_LOSS, ModelSpec

if TYPE_CHECKING:
    from .onnx_embedder import OnnxEmbedder

# Bump when export.py changes the graph it writes: old builds are then rebuilt, never reused.
EXPORTER_VERSION = 1
MIN_REFERENCE_COSINE = {"fp32": 0.999, "int8": 0.98, "int8-dynamic": 0.96}


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """A built, verified model on disk."""

    spec: ModelSpec
    variant: str
    path: Path
    fingerprint: str
    min_cosine: float
    preoptimized: bool = False  # model.onnx holds onnxruntime's optimized graph: load it without re-optimizing


def model_dir(home: Path, spec: ModelSpec, variant: str) -> Path:
    return home / "models" / f"{spec.name}-{variant}-e{EXPORTER_VERSION}"


def reference_texts() -> list[str]:
    data = json.loads(resources.files(__package__).joinpath("reference/texts.json").read_text(encoding="utf-8"))
    return list(data["texts"])


def reference_vectors(spec: ModelSpec) -> np.ndarray:
    with resources.files(__package__).joinpath(f"reference/{spec.name}.npy").open("rb") as handle:
        vectors: np.ndarray = np.load(handle)
        return vectors


def _read_installed(path: Path, spec: ModelSpec, variant: str) -> InstalledModel | None:
    try:
        info = json.loads((path / "model.json").read_text())
    except (OSError, ValueError):
        return None
    if not (path / "model.onnx").is_file() or info.get("exporter_version") != EXPORTER_VERSION:
        return None
    if "onnx_bytes" in info and (path / "model.onnx").stat().st_size != info["onnx_bytes"]:
        return None  # changed since it was verified: built again, never used (model install also checks its hash)
    return InstalledModel(
        spec, variant, path, info["fingerprint"], float(info["min_cosine"]), bool(info.get("preoptimized", False))
    )


def build_fingerprint(spec: ModelSpec, variant: str, source_sha256: str) -> str:
    """What names a build (and every vector made by it): the model, the variant, its weights and the exporter."""
    return hashlib.sha256(f"{spec.name}|{variant}|{source_sha256}|e{EXPORTER_VERSION}".encode()).hexdigest()[:16]


def identity_without_build(home: Path, spec: ModelSpec, variant: str) -> InstalledModel:
    """The identity (fingerprint) and tokenizer of `spec`/`variant` without converting it to ONNX: what an index at
    the first stage alone (`fill = false`) needs to size its chunks and name its model. Read from the weights
    packages (seconds; the conversion and its verification took two minutes) and kept beside the builds, so the
    full build, when it comes, has the same fingerprint. Not loadable: `path` holds no model.onnx."""
    from .weights import read_weights

    folder = home / "models" / f".{model_dir(home, spec, variant).name}.identity"
    try:
        stored = json.loads((folder / "identity.json").read_text())
        if (folder / "tokenizer.json").is_file() and stored.get("exporter_version") == EXPORTER_VERSION:
            return InstalledModel(spec, variant, folder, str(stored["fingerprint"]), 0.0)
    except (OSError, ValueError, KeyError):
        pass
    weights = read_weights(spec)
    fingerprint = build_fingerprint(spec, variant, weights.source_sha256)
    make_dirs(home, folder)
    write_file(home, folder / "tokenizer.json", weights.tokenizer_json)
    write_file(
        home, folder / "identity.json", json.dumps({"fingerprint": fingerprint, "exporter_version": EXPORTER_VERSION})
    )
    return InstalledModel(spec, variant, folder, fingerprint, 0.0)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def unchanged_since_built(installed: InstalledModel) -> bool:
    """Whether the cached model.onnx is byte for byte the one that was verified (0.4 s for mpnet int8: asked by
    `model install`, not at every load, where its size is checked)."""
    try:
        recorded = json.loads((installed.path / "model.json").read_text()).get("onnx_sha256")
    except (OSError, ValueError):
        return False
    return recorded is None or recorded == file_sha256(installed.path / "model.onnx")


def discard(installed: InstalledModel) -> None:
    shutil.rmtree(installed.path, ignore_errors=True)


def installed_model(home: Path, spec: ModelSpec, variant: str) -> InstalledModel | None:
    """The cached build of `spec`/`variant`, or None when there is none yet."""
    return _read_installed(model_dir(home, spec, variant), spec, variant)


def _quantize(model_path: Path, dynamic: bool = False) -> None:
    """8-bit block-wise weight-only MatMulNBits on every weight MatMul; with `dynamic`, every weight MatMul but the
    FFN down-projection first gets dynamic per-channel int8 (weights and activations: MatMulInteger, the fast kernel),
    and only the down-projection, whose input is the GELU output with its outliers, stays block-wise (MODELS.md:
    dynamic int8 there is what breaks mpnet)."""
    import onnx

    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as exc:
        raise ModelUnavailableError(
            f"the int8 variant needs onnxruntime's quantizer, which could not load ({exc}); "
            "fix: pip install 'onnx-ir>=1.0'"
        ) from exc

    import logging

    # Its INFO lines (one per MatMul, hundreds) say nothing a user can act on.
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    if dynamic:
        # the quantizer's import sets the root logger to INFO (basicConfig): one line per tensor otherwise
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            _quantize_dynamic_except_down(model_path)
        finally:
            root.setLevel(level)
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(model_path)),
        bits=8,
        block_size=128,
        is_symmetric=True,
        accuracy_level=4,
        op_types_to_quantize=("MatMul",),
    )
    quantizer.process()
    onnx.save(quantizer.model.model, str(model_path))


def _quantize_dynamic_except_down(model_path: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(model_path))
    for node in model.graph.node:  # the quantizer picks nodes by name; the exporter leaves them unnamed
        node.name = node.name or node.output[0]
    weight_inputs = ("q_w", "k_w", "v_w", "o_w", "ffn_in_w")
    chosen = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1].startswith(weight_inputs)]
    if not chosen:
        raise ModelUnavailableError(f"{model_path}: no weight MatMul named {', '.join(weight_inputs)} to quantize")
    onnx.save(model, str(model_path))
    del model
    staged = model_path.with_name("dynamic.onnx")
    quantize_dynamic(
        str(model_path),
        str(staged),
        per_channel=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=chosen,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    staged.replace(model_path)


def verify(path: Path, spec: ModelSpec, preoptimized: bool = False) -> float:
    """Minimum cosine between this build's vectors and the reference sentence-transformers vectors."""
    from .onnx_embedder import OnnxEmbedder

    embedder = OnnxEmbedder(
        path,
        model_id=spec.name,
        dims=spec.dims,
        max_tokens=spec.max_seq_length,
        pad_id=spec.pad_id,
        preoptimized=preoptimized,
    )
    vectors = embedder.embed_documents(reference_texts())
    return float(np.min(np.sum(vectors * reference_vectors(spec), axis=1)))


def _preoptimize(folder: Path, spec: ModelSpec, variant: str) -> bool:
    """Replace model.onnx by onnxruntime's own optimized form of it, if that still verifies: loading then skips the
    graph optimization every session otherwise repeats (most of a cold start). Portable level (no CPU-specific
    layouts), so a cache shared between machines stays valid. False, and nothing changed, when it does not verify."""
    import onnxruntime as ort

    optimized = folder / "model.optimized.onnx"
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(optimized)
        options.log_severity_level = 3
        ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        candidate = folder / "candidate"
        candidate.mkdir()
        optimized.rename(candidate / "model.onnx")
        shutil.copy(folder / "tokenizer.json", candidate / "tokenizer.json")
        if verify(candidate, spec, preoptimized=True) < MIN_REFERENCE_COSINE[variant]:
            return False
        (candidate / "model.onnx").replace(folder / "model.onnx")
        return True
    except Exception:  # an optimization onnxruntime cannot do is not an error: keep the plain graph
        return False
    finally:
        optimized.unlink(missing_ok=True)
        shutil.rmtree(folder / "candidate", ignore_errors=True)


def build_model(
    home: Path, spec: ModelSpec, variant: str = "fp32", on_step: Callable[[str], None] | None = None
) -> InstalledModel:
    """Convert the installed weights of `spec` to ONNX, verify against the reference vectors and cache it."""
    import onnx

    from .export import build_onnx
    from .weights import read_weights

    if variant not in MODEL_VARIANTS:
        raise ModelUnavailableError(f"unknown model variant {variant!r}; choose one of {', '.join(MODEL_VARIANTS)}")
    if variant.startswith("int8") and (spec.int8_scifact_delta is None or spec.int8_scifact_delta < -MAX_INT8_LOSS):
        raise ModelUnavailableError(
            f"model {spec.name}: no int8 variant, its measured retrieval quality is not within {MAX_INT8_LOSS} "
            "nDCG@10 of fp32 (docs/benchmarks.md)"
        )
    step = on_step or (lambda _message: None)
    target = model_dir(home, spec, variant)
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".{target.name}.lock", timeout=1800):
        existing = _read_installed(target, spec, variant)
        if existing is not None:
            return existing
        step(f"reading {spec.name} weights from {', '.join(spec.packages[:1])}{'…' if len(spec.packages) > 1 else ''}")
        weights = read_weights(spec)
        step("building the ONNX graph")
        graph = build_onnx(spec, weights)
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            onnx.save(graph, str(scratch / "model.onnx"))
            del graph
            (scratch / "tokenizer.json").write_text(weights.tokenizer_json, encoding="utf-8")
            if variant in {"int8", "int8-dynamic"}:
                step("quantizing weights to 8-bit")
                _quantize(scratch / "model.onnx", dynamic=variant == "int8-dynamic")
            step("optimizing the graph for fast loading")
            preoptimized = _preoptimize(scratch, spec, variant)
            step("verifying against reference vectors")
            min_cosine = verify(scratch, spec, preoptimized)
            if min_cosine < MIN_REFERENCE_COSINE[variant]:
                raise ModelVerificationError(
                    f"model {spec.name} ({variant}): min cosine {min_cosine:.5f} to the reference vectors is below "
                    f"{MIN_REFERENCE_COSINE[variant]}; the build was discarded"
                )
            fingerprint = build_fingerprint(spec, variant, weights.source_sha256)
            info = {
                "name": spec.name,
                "variant": variant,
                "dims": spec.dims,
                "max_tokens": spec.max_seq_length,
                "exporter_version": EXPORTER_VERSION,
                "source_sha256": weights.source_sha256,
                "fingerprint": fingerprint,
                "min_cosine": min_cosine,
                "preoptimized": preoptimized,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "onnx_bytes": (scratch / "model.onnx").stat().st_size,
                "onnx_sha256": file_sha256(scratch / "model.onnx"),
            }
            atomic_write(scratch / "model.json", json.dumps(info, indent=2))
            if target.exists():
                shutil.rmtree(target)
            scratch.rename(target)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    installed = _read_installed(target, spec, variant)
    assert installed is not None
    return installed


def open_embedder(installed: InstalledModel) -> OnnxEmbedder:
    """The embedder of a built, verified model."""
    from .onnx_embedder import OnnxEmbedder

    spec = installed.spec
    return OnnxEmbedder(
        installed.path,
        model_id=spec.name,
        dims=spec.dims,
        max_tokens=spec.max_seq_length,
        pad_id=spec.pad_id,
        fingerprint=installed.fingerprint,
        preoptimized=installed.preoptimized,
    )
