"""OnnxEmbedder: runs a built model with onnxruntime on the CPU and a fast `tokenizers` tokenizer.

Texts are tokenized once without padding, sorted by length and packed into batches capped by tokens, so padding stays
near zero; results are scattered back to input order.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ModelUnavailableError

BATCH_TOKEN_CAP = 8192
MAX_BATCH_SIZE = 64


def load_tokenizer(tokenizer_json: str, max_length: int, pad_id: int) -> Any:  # noqa: ANN401 - tokenizers.Tokenizer
    """A tokenizer that truncates at the model's own limit and does not pad (the shipped files say 128: a trap)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json)
    if max_length:
        tokenizer.enable_truncation(max_length=max_length)
    else:  # every token (the static stage cuts texts itself)
        tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class OnnxEmbedder:
    """Sentence embeddings from an ONNX graph built by `knowledge.embedding.export`."""

    def __init__(
        self,
        model_dir: Path,
        *,
        model_id: str,
        dims: int,
        max_tokens: int,
        pad_id: int,
        threads: int | None = None,
        fingerprint: str = "",
        preoptimized: bool = False,
    ) -> None:
        import onnxruntime as ort

        with contextlib.suppress(AttributeError):  # local-first: no telemetry (a no-op on most builds, never on)
            ort.disable_telemetry_events()

        self.model_id = model_id
        self.fingerprint = fingerprint
        self.dims = dims
        self.max_tokens = max_tokens
        self._pad_id = pad_id
        try:
            self._tokenizer = load_tokenizer(
                (model_dir / "tokenizer.json").read_text(encoding="utf-8"), max_tokens, pad_id
            )
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or max(1, os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            # Idle threads sleep instead of spinning: a question's embedding shares the cores with the lexical
            # side's thread and, on a shared index, PostgreSQL's own process (100k chunks: a search's p50 84 ->
            # 71 ms); a batch's throughput and a lone question's time are the same either way (docs/benchmarks.md §9)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            if preoptimized:  # the file already holds the optimized graph (embedding/install.py)
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            self._session = ort.InferenceSession(
                str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise ModelUnavailableError(f"{model_dir}: cannot load model {model_id}: {exc}") from exc

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, special tokens included, truncated at the model's limit."""
        return [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes in this model's own tokenizer, without truncation."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def vocabulary_size(self) -> int:
        return int(self._tokenizer.get_vocab_size())

    def tokenizer_without_truncation(self) -> Any:  # noqa: ANN401 - tokenizers.Tokenizer
        """A copy of the tokenizer that keeps every token (the static stage cuts texts itself)."""
        return load_tokenizer(self._tokenizer.to_str(), 0, self._pad_id)

    def run_ids(self, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        """Sentence embeddings of token-id sequences as given (special tokens included by the caller)."""
        return self._run(batch)

    def _run(self, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        (vectors,) = self._session.run(["sentence_embedding"], {"input_ids": input_ids, "attention_mask": mask})
        return np.asarray(vectors, dtype=np.float32)

    def embed_documents(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]:
        """Unit vectors for `texts`, [len(texts), dims], in input order; `on_batch(n)` after each batch."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            width = len(ids[order[start]])
            end = start + 1
            while end < len(order) and end - start < MAX_BATCH_SIZE:
                width = max(width, len(ids[order[end]]))
                if width * (end - start + 1) > BATCH_TOKEN_CAP:
                    break
                end += 1
            chunk = order[start:end]
            out[chunk] = self._run([ids[i] for i in chunk])
            if on_batch is not None:
                on_batch(len(chunk))
            start = end
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One unit vector for a query (these models use no query prefix)."""
        vectors: npt.NDArray[np.float32] = self._run(self.token_ids([text]))
        first: npt.NDArray[np.float32] = vectors[0]
        return first
