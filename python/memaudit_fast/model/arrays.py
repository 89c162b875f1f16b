"""Packages from arrays, the way selection problems are built in apricot or submodlib.

:meth:`Package.from_arrays` (through :func:`arrays_to_data`) takes one cost per candidate,
a group per candidate, a coverage matrix ``a`` with one row per candidate and one column per
evidence unit, and one weight per unit, and returns the :class:`Package` whose utility is

.. math:: F(X) = \\sum_r w_r \\, h\\Big(\\sum_{u \\in X} a_{u r}\\Big),

feasible when :math:`\\sum_{u \\in X} c_u \\le B` and X holds at most one candidate per group.

Coverage may be a ``scipy.sparse`` matrix or array (CSR, CSC, COO, ...; converted with scipy's
own rules, so duplicate COO entries are summed as scipy sums them), CSR triples
``(indptr, indices, values)``, or a dense 2-D array. The arrays are turned into the
single-file layout and validated by the same reader as a JSON package, so a NaN cost, a
negative weight or a non-concave PWL saturation is rejected with the same message, naming the
candidate or unit index. Nothing is dropped: explicit zero coverage entries are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PackageError

SOURCE = "Package.from_arrays"


def _fail(message: str, fld: str) -> PackageError:
    return PackageError(message, source=SOURCE, field=fld)


def _vector(values: Any, fld: str, length: int | None = None) -> np.ndarray:
    """A 1-D array of numbers (object arrays stay as they are, for the validator to judge)."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise _fail(f"expected a 1-D array of numbers ({exc})", fld) from None
    if array.ndim != 1:
        raise _fail(f"expected a 1-D array, got shape {array.shape}", fld)
    if length is not None and len(array) != length:
        raise _fail(f"expected {length} entries (one per {'unit' if fld == 'weight' else 'candidate'}), "
                    f"got {len(array)}", fld)
    if array.dtype.kind not in "iufb":
        raise _fail(f"expected numbers, got an array of dtype {array.dtype}", fld)
    if array.dtype.kind == "b":
        raise _fail("expected numbers, got booleans", fld)
    return array


def _ids(values: Any, count: int, fld: str, prefix: str) -> list[str]:
    if values is None:
        return [f"{prefix}{i}" for i in range(count)]
    if isinstance(values, (str, bytes)):
        raise _fail("expected a sequence of ids, got one string", fld)
    ids = list(values)
    if len(ids) != count:
        raise _fail(f"expected {count} ids, got {len(ids)}", fld)
    return [i if isinstance(i, str) else (str(i) if isinstance(i, (int, np.integer)) and not isinstance(i, bool) else i)
            for i in ids]


def _groups(group: Any, count: int) -> list[str] | None:
    """One group key per candidate (ints or strings), or None: each candidate its own group."""
    if group is None:
        return None
    array = np.asarray(group)
    if array.ndim != 1 or len(array) != count:
        raise _fail(f"expected one group per candidate ({count}), got shape {array.shape}", "group")
    out = []
    for i, g in enumerate(array.tolist()):
        if isinstance(g, bool) or not isinstance(g, (int, str)) or g == "":
            raise _fail(f"candidate {i}: expected an integer or a non-empty string group, got {g!r}", "group")
        out.append(str(g))
    return out


def coverage_rows(coverage: Any, num_candidates: int, num_units: int) -> list[list[tuple[int, float]]]:
    """(unit index, amount) pairs per candidate from a sparse matrix, CSR triples or dense array."""
    if isinstance(coverage, tuple) and len(coverage) == 3:
        indptr, indices, values = (np.asarray(x) for x in coverage)
        return _csr_rows(indptr, indices, values, num_candidates, num_units, canonical=False)
    if hasattr(coverage, "tocsr") and hasattr(coverage, "shape"):  # scipy.sparse, any format
        return _sparse_rows(coverage, num_candidates, num_units)
    try:
        dense = np.asarray(coverage)
    except (TypeError, ValueError) as exc:
        raise _fail(f"expected a scipy.sparse matrix, CSR triples (indptr, indices, values) or a "
                    f"2-D array ({exc})", "coverage") from None
    if dense.ndim != 2 or dense.shape != (num_candidates, num_units):
        raise _fail(f"expected a scipy.sparse matrix, CSR triples (indptr, indices, values) or a "
                    f"2-D array of shape ({num_candidates}, {num_units}); got shape {dense.shape}",
                    "coverage")
    if dense.dtype.kind not in "iuf":
        raise _fail(f"expected numbers, got an array of dtype {dense.dtype}", "coverage")
    return [[(int(r), float(dense[i, r])) for r in np.flatnonzero(dense[i])] for i in range(num_candidates)]


# What scipy's compiled conversions (tocsr, sort_indices, sum_duplicates) may meet: each
# trusts the index arrays, and a matrix built from malformed ones (scipy's constructors check
# only the cheap half) reads or writes out of bounds. So every structure is checked here first.
_SCIPY_FAILURES = (ValueError, TypeError, IndexError, OverflowError, RuntimeError, MemoryError)


def _sparse_rows(matrix: Any, n: int, m: int) -> list[list[tuple[int, float]]]:
    """Rows of a scipy.sparse matrix, its index arrays checked before scipy converts it."""
    shape = tuple(getattr(matrix, "shape", ()))
    if shape != (n, m):
        raise _fail(f"expected shape ({n}, {m}) (candidates x units), got {shape}", "coverage")
    _check_sparse_structure(matrix, n, m)
    try:
        csr = matrix.tocsr(copy=True)
    except _SCIPY_FAILURES as exc:
        raise _fail(f"scipy cannot convert the {getattr(matrix, 'format', '?')} matrix to CSR ({exc})",
                    "coverage") from None
    if tuple(csr.shape) != (n, m) or getattr(csr, "format", None) != "csr":
        raise _fail(f"expected shape ({n}, {m}) (candidates x units), got {tuple(csr.shape)}", "coverage")
    _check_compressed(csr.indptr, csr.indices, csr.data, n, m, "csr")
    # Cached flags may predate a change of the arrays: let scipy find out afresh.
    csr.has_sorted_indices = False
    csr.has_canonical_format = False
    try:
        csr.prune()  # entries past indptr[-1] mean nothing to scipy
        csr.sum_duplicates()  # scipy's own meaning of repeated entries
    except _SCIPY_FAILURES as exc:
        raise _fail(f"scipy cannot sum the matrix's duplicate entries ({exc})", "coverage") from None
    return _csr_rows(np.asarray(csr.indptr), np.asarray(csr.indices), np.asarray(csr.data),
                     n, m, canonical=True)


def _check_sparse_structure(matrix: Any, n: int, m: int) -> None:
    """The index arrays of a CSR, CSC, BSR, COO, DIA or LIL matrix: lengths, dtypes, bounds."""
    fmt = getattr(matrix, "format", None)
    if fmt in ("csr", "csc"):
        major, minor = (n, m) if fmt == "csr" else (m, n)
        _check_compressed(matrix.indptr, matrix.indices, matrix.data, major, minor, fmt)
    elif fmt == "bsr":
        rows, cols = (int(b) for b in matrix.blocksize)
        data = np.asarray(matrix.data)
        if rows < 1 or cols < 1 or n % rows or m % cols or data.ndim != 3 or data.shape[1:] != (rows, cols):
            raise _fail(f"bsr: blocks of {data.shape[1:]} (blocksize {(rows, cols)}) do not tile the "
                        f"shape ({n}, {m})", "coverage")
        _check_compressed(matrix.indptr, matrix.indices, data, n // rows, m // cols, "bsr")
    elif fmt == "coo":
        coords = tuple(getattr(matrix, "coords", None) or (matrix.row, matrix.col))
        data = np.asarray(matrix.data)
        if len(coords) != 2 or data.ndim != 1:
            raise _fail(f"coo: expected row and col arrays and 1-D data, got {len(coords)} index arrays "
                        f"and data of shape {data.shape}", "coverage")
        for name, index, size in (("row", coords[0], n), ("col", coords[1], m)):
            _check_indices(np.asarray(index), len(data), size, f"coo {name}")
    elif fmt == "dia":
        data, offsets = np.asarray(matrix.data), np.asarray(matrix.offsets)
        if data.ndim != 2 or offsets.ndim != 1 or offsets.dtype.kind not in "iu" or len(offsets) != data.shape[0]:
            raise _fail(f"dia: expected one integer offset per row of data, got offsets of shape {offsets.shape} "
                        f"(dtype {offsets.dtype}) for data of shape {data.shape}", "coverage")
    elif fmt == "lil":
        rows, data = matrix.rows, matrix.data
        if len(rows) != n or len(data) != n:
            raise _fail(f"lil: expected {n} rows of indices and of data, got {len(rows)} and {len(data)}", "coverage")
        for i, (cols, values) in enumerate(zip(rows, data)):
            if not isinstance(cols, list) or not isinstance(values, list) or len(cols) != len(values):
                raise _fail(f"lil: row {i} holds {cols!r} for data {values!r}; expected equal-length lists",
                            "coverage")
            if any(isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r < m for r in cols):
                raise _fail(f"lil: row {i} has a column index outside 0..{m - 1}: {cols!r}", "coverage")


def _check_compressed(indptr: Any, indices: Any, data: Any, major: int, minor: int, fmt: str) -> None:
    """indptr of ``major + 1`` non-decreasing offsets from 0 to at most len(indices), indices
    (as many as the data's entries) within ``0..minor - 1`` wherever indptr reaches."""
    indptr, data = np.asarray(indptr), np.asarray(data)
    if indptr.ndim != 1 or indptr.dtype.kind not in "iu" or len(indptr) != major + 1:
        raise _fail(f"{fmt} indptr: expected {major + 1} integer offsets, got shape {indptr.shape} of dtype "
                    f"{indptr.dtype}", "coverage")
    if data.ndim < 1:
        raise _fail(f"{fmt} data: expected an array, got shape {data.shape}", "coverage")
    indices = _check_indices(np.asarray(indices), len(data), None, f"{fmt} indices")
    if indptr[0] != 0 or np.any(indptr[1:] < indptr[:-1]) or int(indptr[-1]) > len(indices):
        raise _fail(f"{fmt} indptr: expected non-decreasing offsets from 0 to at most {len(indices)} (the number of "
                    f"indices), got {_preview(indptr)}", "coverage")
    used = indices[: int(indptr[-1])]
    bad = np.flatnonzero((used < 0) | (used >= minor))
    if len(bad):
        k = int(bad[0])
        raise _fail(f"{fmt} indices: entry {k} is {int(used[k])}, outside 0..{minor - 1}", "coverage")


def _check_indices(index: np.ndarray, count: int, size: int | None, what: str) -> np.ndarray:
    """A 1-D integer array of ``count`` entries (within ``0..size - 1`` when a size is given)."""
    if index.ndim != 1 or (len(index) and index.dtype.kind not in "iu"):
        raise _fail(f"{what}: expected a 1-D array of integers, got shape {index.shape} of dtype {index.dtype}",
                    "coverage")
    if len(index) != count:
        raise _fail(f"{what}: {len(index)} entries for {count} stored values; expected one per value", "coverage")
    if size is not None:
        bad = np.flatnonzero((index < 0) | (index >= size))
        if len(bad):
            k = int(bad[0])
            raise _fail(f"{what}: entry {k} is {int(index[k])}, outside 0..{size - 1}", "coverage")
    return index


def _preview(values: np.ndarray, limit: int = 8) -> str:
    shown = ", ".join(str(v) for v in values[:limit].tolist())
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _csr_rows(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, n: int, m: int,
              *, canonical: bool) -> list[list[tuple[int, float]]]:
    if indptr.ndim != 1 or len(indptr) != n + 1 or indptr.dtype.kind not in "iu":
        raise _fail(f"indptr: expected {n + 1} integers (candidates + 1), got shape {indptr.shape} "
                    f"of dtype {indptr.dtype}", "coverage")
    # (adjacent offsets compared, not np.diff: an unsigned difference wraps instead of going below 0)
    if indptr[0] != 0 or np.any(indptr[1:] < indptr[:-1]) or indptr[-1] != len(indices):
        raise _fail("indptr: expected non-decreasing offsets from 0 to len(indices)", "coverage")
    if indices.ndim != 1 or (len(indices) and indices.dtype.kind not in "iu"):
        raise _fail(f"indices: expected integers, got dtype {indices.dtype}", "coverage")
    if values.ndim != 1 or len(values) != len(indices):
        raise _fail(f"values: expected {len(indices)} numbers (one per index), got shape {values.shape}",
                    "coverage")
    if len(values) and values.dtype.kind not in "iuf":
        raise _fail(f"values: expected numbers, got dtype {values.dtype}", "coverage")
    bad = np.flatnonzero((indices < 0) | (indices >= m))
    if len(bad):
        k = int(bad[0])
        row = int(np.searchsorted(indptr, k, side="right")) - 1
        raise _fail(f"candidate {row}: unit index {int(indices[k])} is outside 0..{m - 1} "
                    f"(one column per weight)", "coverage")
    rows = []
    for i in range(n):
        lo, hi = int(indptr[i]), int(indptr[i + 1])
        cols = indices[lo:hi].tolist()
        if not canonical and len(set(cols)) != len(cols):
            seen = sorted({c for c in cols if cols.count(c) > 1})
            raise _fail(f"candidate {i}: unit index {seen[0]} appears twice in its row; give each "
                        "(candidate, unit) once", "coverage")
        rows.append(list(zip(cols, values[lo:hi].astype(float).tolist())))
    return rows


def _budgets(budgets: Any) -> list[Any]:
    """Plain Python numbers from a number, a numpy scalar or array, or a sequence (the package
    validator then checks each one)."""
    if isinstance(budgets, np.ndarray):
        if budgets.ndim > 1:
            raise _fail(f"expected one number or a flat list, got an array of shape {budgets.shape}", "budgets")
        return list(budgets.tolist()) if budgets.ndim == 1 else [budgets.item()]
    if isinstance(budgets, np.generic):
        return [budgets.item()]
    if isinstance(budgets, (str, bytes, dict)):
        raise _fail(f"expected numbers, got {budgets!r}", "budgets")
    if not hasattr(budgets, "__iter__"):
        return [budgets]
    return [b.item() if isinstance(b, np.generic) else b for b in budgets]


def arrays_to_data(
    cost: Any,
    group: Any,
    coverage: Any,
    weight: Any,
    *,
    saturation: Any = "cap1",
    budgets: Any = None,
    ids: Sequence[Any] | None = None,
    unit_ids: Sequence[Any] | None = None,
    package_id: str = "arrays",
    representation: Sequence[str] | None = None,
    meta: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Any]:
    """The single-file package dict of arrays, and the locator that names records by index.

    :meth:`Package.from_arrays` validates the dict; the parameters are the same.

    Parameters
    ----------
    cost : array_like, shape (n,)
        Cost :math:`c_u` of each candidate (finite, >= 0).
    group : array_like, shape (n,), or None
        Group of each candidate (integers or strings); at most one candidate per group is
        stored. ``None``: every candidate is its own group (a plain knapsack).
    coverage : scipy.sparse matrix, (indptr, indices, values), or array, shape (n, m)
        :math:`a_{u r}`: how much candidate u covers unit r (finite, >= 0).
    weight : array_like, shape (m,)
        Weight :math:`w_r` of each unit (finite, >= 0).
    saturation : str or dict
        ``"cap1"`` (default), ``"linear"``, ``"log1p"`` or ``{"pwl": [[z, h], ...]}``.
    budgets : number or array_like, optional
        The package's own budgets (numpy scalars and arrays are accepted).
    ids, unit_ids : sequences of str, optional
        Candidate and unit ids (default ``c0, c1, ...`` and ``u0, u1, ...``).
    package_id, representation, meta
        The package id, each candidate's representation label, free-form metadata.

    Raises
    ------
    PackageError
        For any shape mismatch or bad value, naming the array (and index) at fault.
    """
    cost_array = _vector(cost, "cost")
    n = len(cost_array)
    weight_array = _vector(weight, "weight")
    m = len(weight_array)
    candidate_ids = _ids(ids, n, "ids", "c")
    units = _ids(unit_ids, m, "unit_ids", "u")
    groups = _groups(group, n)
    rows = coverage_rows(coverage, n, m)
    if representation is not None:
        reps = _ids(representation, n, "representation", "")
    data: dict[str, Any] = {
        "format": "memaudit.package/1",
        "package_id": package_id,
        "objective": {"saturation": saturation},
    }
    if budgets is not None:
        data["budgets"] = _budgets(budgets)
    data["units"] = [{"unit_id": u, "weight": w} for u, w in zip(units, weight_array.tolist())]
    candidates = []
    for i in range(n):
        cand: dict[str, Any] = {"candidate_id": candidate_ids[i]}
        if groups is not None:
            cand["group"] = groups[i]
        if representation is not None:
            cand["representation"] = reps[i]
        cand["cost"] = cost_array[i].item()
        cand["coverage"] = {units[r]: value for r, value in rows[i]}
        candidates.append(cand)
    data["candidates"] = candidates
    data["meta"] = dict(meta or {})
    labels = {"candidates": "candidate", "units": "unit"}
    return data, lambda name, i: f"{labels.get(name, name)} {i}"
