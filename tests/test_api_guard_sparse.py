"""Package.from_arrays on scipy.sparse coverage whose index arrays are malformed.

scipy's constructors check only part of the structure (and nothing once the arrays are set
afterwards), while its compiled conversions trust all of it: such a matrix crashed the
process or raised a bare C++ RuntimeError. Each must be a PackageError naming 'coverage'.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memaudit_fast as ma
from memaudit_fast.errors import PackageError


def _build(coverage, n: int = 3, m: int = 2) -> ma.Package:
    return ma.Package.from_arrays(cost=np.ones(n), group=np.arange(n), coverage=coverage,
                                  weight=np.ones(m), budgets=[2])


def _dense(pkg: ma.Package, n: int, m: int) -> np.ndarray:
    out = np.zeros((n, m))
    for i, cand in enumerate(pkg.candidates):
        for unit, amount in cand["coverage"].items():
            out[i, int(unit[1:])] = amount
    return out


def _refused(coverage, *words: str, n: int = 3, m: int = 2) -> str:
    with pytest.raises(PackageError) as info:
        _build(coverage, n, m)
    text = str(info.value)
    assert "'coverage'" in text
    for word in words:
        assert word in text
    return text


def _csr(data, indices, indptr, shape=(3, 2), kind=sp.csr_matrix):
    return kind((np.asarray(data, float), np.asarray(indices), np.asarray(indptr)), shape=shape)


def test_the_reported_crash_is_a_package_error():
    # Non-monotone indptr, accepted by scipy's constructor, crashed sort_indices (exit 139).
    _refused(_csr(np.ones(4), [0, 1, 0, 1], [0, 1000000, 2, 4]), "indptr", "non-decreasing")
    # ... and a bare RuntimeError: vector::_M_default_append.
    _refused(_csr(np.ones(4), [0, 1, 0, 1], [0, 3, 1, 4]), "indptr")


@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csr_array])
def test_arrays_set_after_construction_are_checked(kind):
    good = _csr(np.ones(3), [0, 1, 0], [0, 1, 2, 3], kind=kind)
    for attr, value, word in [
        ("indptr", np.array([0, 2, 1, 3]), "non-decreasing"),
        ("indptr", np.array([0, 1, 2, 3, 3]), "4 integer offsets"),
        ("indptr", np.array([1, 1, 2, 3]), "from 0"),
        ("indptr", np.array([0, 1, 2, 9]), "at most 3"),
        ("indptr", np.array([0.0, 1.0, 2.0, 3.0]), "integer"),
        ("indices", np.array([0, 5, 0]), "outside 0..1"),
        ("indices", np.array([0, -1, 0]), "outside 0..1"),
        ("indices", np.array([0, 1]), "2 entries for 3 stored values"),
        ("data", np.ones(5), "3 entries for 5 stored values"),
    ]:
        bad = good.copy()
        setattr(bad, attr, value)
        _refused(bad, word)


def test_csc_coo_bsr_dia_lil_structures():
    csc = sp.csc_matrix(np.eye(3, 2))
    csc.indices = np.array([0, 7])  # rows of a CSC: 0..2
    _refused(csc, "csc indices", "outside 0..2")
    csc = sp.csc_matrix(np.eye(3, 2))
    csc.indptr = np.array([0, 2, 1])
    _refused(csc, "csc indptr")
    coo = sp.coo_matrix(np.eye(3, 2))
    coo.row = np.array([0, 9])
    _refused(coo, "coo row", "outside 0..2")
    coo = sp.coo_array(np.eye(3, 2))
    coo.data = np.ones(5)
    _refused(coo, "coo row", "2 entries for 5 stored values")
    bsr = sp.bsr_matrix(np.eye(4, 2), blocksize=(2, 2))
    bsr.indices = np.array([0, 3])
    _refused(bsr, "bsr indices", n=4, m=2)
    dia = sp.dia_matrix(np.eye(3, 2))
    dia.offsets = np.array([0, 1, 2])
    _refused(dia, "dia")
    lil = sp.lil_matrix(np.eye(3, 2))
    lil.rows[1] = [5]
    _refused(lil, "lil", "outside 0..1")


@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.bsr_matrix, sp.dia_matrix,
                                  sp.lil_matrix, sp.dok_matrix, sp.csr_array, sp.coo_array])
def test_well_formed_matrices_of_every_format_still_load(kind):
    dense = np.array([[1.0, 0.0], [0.5, 2.0], [0.0, 0.0]])
    assert np.array_equal(_dense(_build(kind(dense)), 3, 2), dense)


def test_uint_indptr_that_wraps_is_refused_in_csr_triples():
    # np.diff of unsigned offsets wraps around instead of going below 0.
    with pytest.raises(PackageError, match="indptr"):
        _build((np.array([0, 3, 1, 4], dtype=np.uint64), np.array([0, 1, 0, 1]), np.ones(4)))


def _valid(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, major: int, minor: int) -> bool:
    """The oracle: what a compressed structure must be for scipy to read it safely."""
    if len(indptr) != major + 1 or len(indices) != len(data) or indptr[0] != 0:
        return False
    if any(b < a for a, b in itertools.pairwise(indptr.tolist())) or indptr[-1] > len(indices):
        return False
    used = indices[: indptr[-1]]
    return bool(np.all((used >= 0) & (used < minor)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 4),
    m=st.integers(1, 4),
    indptr=st.lists(st.integers(-3, 12), min_size=0, max_size=7),
    indices=st.lists(st.integers(-2, 6), min_size=0, max_size=10),
    extra=st.integers(-2, 2),
    fmt=st.sampled_from(["csr", "csc"]),
    dtype=st.sampled_from([np.int32, np.int64]),
    how=st.sampled_from(["constructor", "assigned"]),
)
def test_any_compressed_structure_is_read_or_refused(n, m, indptr, indices, extra, fmt, dtype, how):
    indptr_a = np.asarray(indptr, dtype=dtype)
    indices_a = np.asarray(indices, dtype=dtype)
    data = np.arange(1, max(0, len(indices) + extra) + 1, dtype=float)
    kind = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    major, minor = (n, m) if fmt == "csr" else (m, n)
    if how == "constructor":
        try:
            matrix = kind((data, indices_a, indptr_a), shape=(n, m))
        except (ValueError, TypeError, IndexError):
            return  # scipy refused it itself
    else:
        matrix = kind((n, m))
        matrix.indptr, matrix.indices, matrix.data = indptr_a, indices_a, data
    valid = _valid(indptr_a, indices_a, data, major, minor)
    try:
        pkg = _build(matrix, n, m)
    except PackageError as exc:
        assert "'coverage'" in str(exc)
        assert not valid, f"a valid structure was refused: {exc}"
        return
    assert valid, "a malformed structure was accepted"
    lo = int(indptr_a[-1])
    expected = kind((data[:lo], indices_a[:lo], indptr_a), shape=(n, m)).toarray()
    assert np.allclose(_dense(pkg, n, m), expected)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 4),
    m=st.integers(1, 4),
    rows=st.lists(st.integers(-2, 6), max_size=8),
    cols=st.lists(st.integers(-2, 6), max_size=8),
    extra=st.integers(-1, 1),
)
def test_any_coo_structure_is_read_or_refused(n, m, rows, cols, extra):
    matrix = sp.coo_matrix((n, m))
    size = max(0, len(rows) + extra)
    matrix.row, matrix.col = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    matrix.data = np.ones(size)
    valid = len(rows) == len(cols) == size and all(0 <= r < n for r in rows) and all(0 <= c < m for c in cols)
    try:
        pkg = _build(matrix, n, m)
    except PackageError as exc:
        assert "'coverage'" in str(exc) and not valid, str(exc)
        return
    assert valid
    expected = np.zeros((n, m))
    for r, c in zip(rows, cols):
        expected[r, c] += 1.0
    assert np.allclose(_dense(pkg, n, m), expected)
