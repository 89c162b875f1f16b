"""Embedders: the hashing fallback everywhere, WordLlama offline when installed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from memaudit_fast.errors import UsageError
from memaudit_fast.writers.embed import HashingEmbedder, get_embedder, normalise_rows


def test_hashing_rows_are_unit_float32_and_empty_text_is_zero() -> None:
    emb = HashingEmbedder(256)
    x = emb.encode(["I adopted a puppy", "", "Marathon training"])
    assert x.dtype == np.float32 and x.shape == (3, 256)
    norms = np.linalg.norm(x, axis=1)
    assert norms[0] == pytest.approx(1.0, abs=1e-5)
    assert norms[1] == 0.0
    assert norms[2] == pytest.approx(1.0, abs=1e-5)


def test_hashing_is_stable_across_instances_and_favours_shared_words() -> None:
    a = HashingEmbedder(512).encode(["my knee hurts after long runs"])
    b = HashingEmbedder(512).encode(["my knee hurts after long runs"])
    assert np.array_equal(a, b)
    emb = HashingEmbedder(512)
    q, near, far = emb.encode(["knee pain after runs", "my knee hurts after long runs",
                               "the puppy chases tennis balls"])
    assert float(q @ near) > float(q @ far)
    assert emb.semantic is False and emb.spec == "hashing:512"


def test_embedder_names() -> None:
    assert get_embedder("hashing:64").dim == 64
    emb = HashingEmbedder(32)
    assert get_embedder(emb) is emb
    with pytest.raises(UsageError, match="unknown embedder"):
        get_embedder("word2vec")
    with pytest.raises(UsageError, match="name the model"):
        get_embedder("st:")
    with pytest.raises(UsageError):
        HashingEmbedder(4)


def test_normalise_rows_leaves_zero_rows_alone() -> None:
    out = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_importing_the_package_needs_neither_faiss_nor_an_embedding_model() -> None:
    code = (
        "import sys, memaudit_fast, memaudit_fast.writers, memaudit_fast.cli.write;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('faiss', 'wordllama', 'tokenizers', 'sentence_transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_wordllama_loads_offline_from_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wordllama")
    import requests

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to download a file")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(requests, "get", no_network)
    emb = get_embedder("auto")
    assert emb.spec == "wordllama" and emb.dim == 256 and emb.semantic
    x = emb.encode(["I went to a support group", "She attended a support meeting",
                    "The stock market fell", ""])
    assert x.dtype == np.float32
    assert np.allclose(np.linalg.norm(x[:3], axis=1), 1.0, atol=1e-5)
    assert not x[3].any()
    assert float(x[0] @ x[1]) > float(x[0] @ x[2])
