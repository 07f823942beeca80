"""The native libraries the product loads into one process must coexist in either import order."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "order",
    [("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")],
    ids=["usearch-first", "onnxruntime-first"],
)
def test_vector_index_and_runtime_load_together(order):
    # The daemon opens the store (usearch) before the first query loads the model (onnxruntime); some usearch
    # releases crash the interpreter in exactly that order.
    script = "; ".join(f"import {module}" for module in order) + "; print('loaded')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing {' then '.join(order)} exited {done.returncode}: {done.stderr[-400:]}"
    assert done.stdout.strip() == "loaded"


def test_running_the_model_writes_nothing_under_the_users_home(tmp_path):
    # onnxruntime 1.32 creates ~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db} on import
    # unless told not to; knowledge tells it.
    script = "import knowledge.embedding.onnx_embedder, onnxruntime; print('loaded')"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-400:]
    assert not (tmp_path / ".cache" / "Microsoft").exists()
