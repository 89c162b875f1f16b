"""The FAISS vector index: exact by default, HNSW above a threshold, persisted to a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from memaudit_fast.errors import UsageError
from memaudit_fast.writers.embed import normalise_rows
from memaudit_fast.writers.errors import StoreError
from memaudit_fast.writers.index import VectorIndex


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    return normalise_rows(np.random.default_rng(seed).normal(size=(n, dim)))


def test_flat_search_is_exact_inner_product_with_caller_ids() -> None:
    x, q = _unit(60, 12, 0), _unit(5, 12, 1)
    ids = np.arange(60) * 7 + 3
    index = VectorIndex(12)
    index.add(x, ids)
    scores, found = index.search(q, 4)
    brute = q @ x.T
    for row in range(5):
        order = np.argsort(-brute[row], kind="stable")[:4]
        assert list(found[row]) == list(ids[order])
        assert np.allclose(scores[row], brute[row][order], atol=1e-5)
    assert index.kind == "flat"


def test_index_switches_to_hnsw_at_the_threshold_and_still_finds_itself() -> None:
    x = _unit(120, 16, 2)
    index = VectorIndex(16, hnsw_threshold=100)
    index.add(x[:99], np.arange(99))
    assert index.kind == "flat"
    index.add(x[99:], np.arange(99, 120))
    assert index.kind == "hnsw" and len(index) == 120
    hits = [index.search_one(x[i], 1)[0][0] for i in range(120)]
    assert hits == list(range(120))


def test_k_beyond_size_and_empty_index() -> None:
    index = VectorIndex(8)
    assert index.search_one(_unit(1, 8, 3)[0], 5) == []
    index.add(_unit(3, 8, 4), [10, 11, 12])
    assert sorted(i for i, _ in index.search_one(_unit(1, 8, 5)[0], 50)) == [10, 11, 12]


def test_ids_must_be_unique_and_match_vectors() -> None:
    index = VectorIndex(8)
    index.add(_unit(2, 8, 6), [1, 2])
    with pytest.raises(UsageError, match="unique"):
        index.add(_unit(1, 8, 7), [2])
    with pytest.raises(UsageError, match="ids"):
        index.add(_unit(2, 8, 8), [5])


@pytest.mark.parametrize("threshold", [1000, 10])
def test_save_and_load_answer_the_same(tmp_path: Path, threshold: int) -> None:
    x, q = _unit(40, 10, 9), _unit(6, 10, 10)
    index = VectorIndex(10, hnsw_threshold=threshold)
    index.add(x, np.arange(100, 140))
    index.save(tmp_path / "v.faiss")
    again = VectorIndex.load(tmp_path / "v.faiss", hnsw_threshold=threshold)
    assert again.kind == index.kind and len(again) == 40
    assert np.array_equal(again.ids, index.ids)
    assert np.allclose(again.vector(117), x[17])
    s1, i1 = index.search(q, 5)
    s2, i2 = again.search(q, 5)
    assert np.array_equal(i1, i2) and np.allclose(s1, s2)
    with pytest.raises(StoreError):
        VectorIndex.load(tmp_path / "missing.faiss")
