"""Offline conversion of safetensors weights (BERT, MPNet) into one ONNX graph, numpy and onnx only.

The graph takes `input_ids` and `attention_mask` ([batch, seq], int64) and returns `sentence_embedding`
([batch, dims], float32): encoder, mean pooling over the mask and L2 normalisation, as sentence-transformers does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .models import ModelSpec
from .weights import ModelWeights

OPSET = 18


class _Graph:
    """A tiny helper that names nodes and initializers so the builders read like the model code."""

    def __init__(self) -> None:
        from onnx import helper

        self._helper = helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value: np.ndarray | np.floating | float | list[int], hint: str = "c") -> str:
        from onnx import numpy_helper

        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        name = self._name(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:  # noqa: ANN401
        output = self._name(op_type.lower())
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [output], **attrs))
        return output

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, hint: str) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out].
        product = self.op("MatMul", x, self.const(np.ascontiguousarray(weight.T), hint + "_w"))
        return self.op("Add", product, self.const(bias, hint + "_b"))

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, eps: float) -> str:
        return self.op(
            "LayerNormalization", x, self.const(weight, "ln_w"), self.const(bias, "ln_b"), axis=-1, epsilon=eps
        )

    def gelu(self, x: str) -> str:
        # Exact erf GELU, as transformers' "gelu"; onnxruntime fuses this pattern.
        scaled = self.op("Div", x, self.const(np.float32(math.sqrt(2.0))))
        erf_plus_one = self.op("Add", self.op("Erf", scaled), self.const(np.float32(1.0)))
        return self.op("Mul", self.op("Mul", x, erf_plus_one), self.const(np.float32(0.5)))


def _heads(graph: _Graph, x: str, batch_seq_heads_dim: str) -> str:
    reshaped = graph.op("Reshape", x, batch_seq_heads_dim)
    return graph.op("Transpose", reshaped, perm=[0, 2, 1, 3])


def _encoder_layer(
    graph: _Graph,
    hidden: str,
    tensors: dict[str, np.ndarray],
    names: dict[str, str],
    *,
    heads: int,
    eps: float,
    mask_bias: str,
    position_bias: str | None,
    shapes: dict[str, str],
) -> str:
    def weight(key: str) -> np.ndarray:
        return tensors[names[key]]

    head_dim = weight("q.weight").shape[0] // heads
    q = _heads(graph, graph.linear(hidden, weight("q.weight"), weight("q.bias"), "q"), shapes["heads"])
    k = _heads(graph, graph.linear(hidden, weight("k.weight"), weight("k.bias"), "k"), shapes["heads"])
    v = _heads(graph, graph.linear(hidden, weight("v.weight"), weight("v.bias"), "v"), shapes["heads"])
    k_t = graph.op("Transpose", k, perm=[0, 1, 3, 2])
    scores = graph.op("Div", graph.op("MatMul", q, k_t), graph.const(np.float32(math.sqrt(head_dim))))
    if position_bias is not None:
        scores = graph.op("Add", scores, position_bias)
    probs = graph.op("Softmax", graph.op("Add", scores, mask_bias), axis=-1)
    context = graph.op("Transpose", graph.op("MatMul", probs, v), perm=[0, 2, 1, 3])
    context = graph.op("Reshape", context, shapes["hidden"])
    attention = graph.linear(context, weight("o.weight"), weight("o.bias"), "o")
    hidden = graph.layer_norm(graph.op("Add", attention, hidden), weight("ln1.weight"), weight("ln1.bias"), eps)
    inner = graph.gelu(graph.linear(hidden, weight("ffn_in.weight"), weight("ffn_in.bias"), "ffn_in"))
    out = graph.linear(inner, weight("ffn_out.weight"), weight("ffn_out.bias"), "ffn_out")
    return graph.layer_norm(graph.op("Add", out, hidden), weight("ln2.weight"), weight("ln2.bias"), eps)


_BERT_LAYER = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "o": "attention.output.dense",
    "ln1": "attention.output.LayerNorm",
    "ffn_in": "intermediate.dense",
    "ffn_out": "output.dense",
    "ln2": "output.LayerNorm",
}
_MPNET_LAYER = {
    "q": "attention.attn.q",
    "k": "attention.attn.k",
    "v": "attention.attn.v",
    "o": "attention.attn.o",
    "ln1": "attention.LayerNorm",
    "ffn_in": "intermediate.dense",
    "ffn_out": "output.dense",
    "ln2": "output.LayerNorm",
}


def _layer_names(prefix: str, table: dict[str, str]) -> dict[str, str]:
    return {f"{short}.{part}": f"{prefix}{long}.{part}" for short, long in table.items() for part in ("weight", "bias")}


def relative_position_buckets(length: int, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """MPNet's bidirectional relative-position buckets for a [length, length] grid, as transformers computes them.

    Replicated in float32 on purpose: transformers does the log in float32, and the truncation to int depends on it.
    """
    positions = np.arange(length, dtype=np.int64)
    relative = positions[None, :] - positions[:, None]  # memory - context
    n = -relative
    half = num_buckets // 2
    buckets = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    safe_n = np.maximum(n, 1).astype(np.float32)
    scale = np.float32(math.log(max_distance / max_exact))
    large = np.log(safe_n / np.float32(max_exact)) / scale * np.float32(half - max_exact)
    val_if_large = np.minimum(max_exact + large.astype(np.int64), half - 1)
    buckets_out: np.ndarray = buckets + np.where(n < max_exact, n, val_if_large)
    return buckets_out


def _position_slice(graph: _Graph, table: np.ndarray, offset: int, seq_len: str) -> str:
    # Slicing the table (not Gather over Range) avoids an onnxruntime fusion that fails at run time.
    end = graph.op("Add", seq_len, graph.const(np.array([offset], dtype=np.int64)))
    return graph.op(
        "Slice",
        graph.const(table, "positions"),
        graph.const(np.array([offset], dtype=np.int64)),
        end,
        graph.const(np.array([0], dtype=np.int64)),
    )


def build_onnx(spec: ModelSpec, weights: ModelWeights) -> Any:  # noqa: ANN401 - onnx.ModelProto
    """Build the sentence-embedding graph of `spec` from `weights`; returns an onnx.ModelProto."""
    from onnx import TensorProto, helper

    tensors = weights.tensors
    config = weights.config
    heads = int(config["num_attention_heads"])
    hidden_size = int(config["hidden_size"])
    eps = float(config["layer_norm_eps"])
    graph = _Graph()

    shape = graph.op("Shape", "input_ids")
    batch = graph.op(
        "Slice", shape, graph.const(np.array([0], dtype=np.int64)), graph.const(np.array([1], dtype=np.int64))
    )
    seq_len = graph.op(
        "Slice", shape, graph.const(np.array([1], dtype=np.int64)), graph.const(np.array([2], dtype=np.int64))
    )
    shapes = {
        "heads": graph.op("Concat", batch, seq_len, graph.const(np.array([heads, hidden_size // heads]), "hs"), axis=0),
        "hidden": graph.op("Concat", batch, seq_len, graph.const(np.array([hidden_size]), "hd"), axis=0),
    }

    words = graph.op("Gather", graph.const(tensors["embeddings.word_embeddings.weight"], "words"), "input_ids")
    position_table = tensors["embeddings.position_embeddings.weight"]
    position_bias: str | None = None
    if spec.architecture == "bert":
        # Token type 0 everywhere: fold its row into the position table so the graph needs no token_type_ids.
        position_table = position_table + tensors["embeddings.token_type_embeddings.weight"][0][None, :]
        positions = _position_slice(graph, position_table, 0, seq_len)
        layer_table, layer_prefix = _BERT_LAYER, "encoder.layer.{i}."
    else:
        # MPNet positions start at pad_id + 1 for real tokens (right padding: pads are masked anyway).
        positions = _position_slice(graph, position_table, spec.pad_id + 1, seq_len)
        max_len = position_table.shape[0]
        buckets = relative_position_buckets(max_len, int(config.get("relative_attention_num_buckets", 32)))
        bias_table = tensors["encoder.relative_attention_bias.weight"]  # [buckets, heads]
        grid = graph.op(
            "Slice",
            graph.const(buckets.astype(np.int64), "buckets"),
            graph.const(np.array([0, 0], dtype=np.int64)),
            graph.op("Concat", seq_len, seq_len, axis=0),
            graph.const(np.array([0, 1], dtype=np.int64)),
        )
        values = graph.op("Gather", graph.const(bias_table, "rel_bias"), grid)  # [S, S, heads]
        position_bias = graph.op(
            "Unsqueeze", graph.op("Transpose", values, perm=[2, 0, 1]), graph.const(np.array([0], dtype=np.int64))
        )
        layer_table, layer_prefix = _MPNET_LAYER, "encoder.layer.{i}."
    embedded = graph.op("Add", words, positions)
    hidden = graph.layer_norm(
        embedded, tensors["embeddings.LayerNorm.weight"], tensors["embeddings.LayerNorm.bias"], eps
    )

    mask_float = graph.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    inverted = graph.op("Sub", graph.const(np.float32(1.0)), mask_float)
    mask_bias = graph.op(
        "Mul",
        graph.op("Unsqueeze", inverted, graph.const(np.array([1, 2], dtype=np.int64))),
        graph.const(np.float32(np.finfo(np.float32).min)),
    )

    for index in range(int(config["num_hidden_layers"])):
        names = _layer_names(layer_prefix.format(i=index), layer_table)
        hidden = _encoder_layer(
            graph,
            hidden,
            tensors,
            names,
            heads=heads,
            eps=eps,
            mask_bias=mask_bias,
            position_bias=position_bias,
            shapes=shapes,
        )

    mask_3d = graph.op("Unsqueeze", mask_float, graph.const(np.array([2], dtype=np.int64)))
    summed = graph.op(
        "ReduceSum", graph.op("Mul", hidden, mask_3d), graph.const(np.array([1], dtype=np.int64)), keepdims=0
    )
    counts = graph.op(
        "Max",
        graph.op("ReduceSum", mask_3d, graph.const(np.array([1], dtype=np.int64)), keepdims=0),
        graph.const(np.float32(1e-9)),
    )
    pooled = graph.op("Div", summed, counts)
    norm = graph.op(
        "Max",
        graph.op("ReduceL2", pooled, graph.const(np.array([1], dtype=np.int64)), keepdims=1),
        graph.const(np.float32(1e-12)),
    )
    graph.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"]))

    onnx_graph = helper.make_graph(
        graph.nodes,
        f"{spec.name}-sentence-embedding",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", spec.dims])],
        graph.initializers,
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="knowledge")
    model.ir_version = 8
    return model
