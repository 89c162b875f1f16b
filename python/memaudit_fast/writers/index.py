"""A FAISS vector index over L2-normalised vectors, with stable integer ids and a file format.

Similarity is the inner product, which on unit vectors is the cosine. Below
``hnsw_threshold`` vectors the index is exact (``IndexFlatIP``); from that size on it is an
HNSW graph (``IndexHNSWFlat`` with inner-product metric), approximate but sub-linear. Both sit
inside an ``IndexIDMap2`` so that results are the caller's ids (record ids of a SQLite table),
and the whole index is written in ``faiss.write_index``'s format next to the store that owns it.

FAISS runs on one OpenMP thread unless ``MEMAUDIT_FAISS_THREADS`` says otherwise: the writers
search one query at a time, where threads only add overhead.

FAISS is imported inside the functions: importing this module does not need it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import StoreError, UsageError, missing

#: From this many vectors on, an index is (re)built as HNSW instead of exact flat search.
DEFAULT_HNSW_THRESHOLD = 50_000
DEFAULT_HNSW_M = 32


_THREADS_SET = False


def _faiss() -> Any:
    # FAISS logs which CPU build it picked at INFO level; that is noise in a CLI's output.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    try:
        import faiss
    except ImportError:
        raise missing("faiss-cpu", "Vector search") from None
    global _THREADS_SET
    if not _THREADS_SET:
        # Queries here come one at a time against small indexes: OpenMP's thread start-up and
        # spinning cost far more than the search (ms instead of us on a busy machine).
        faiss.omp_set_num_threads(int(os.environ.get("MEMAUDIT_FAISS_THREADS", "1")))
        _THREADS_SET = True
    return faiss


def faiss_available() -> bool:
    try:
        _faiss()
    except UsageError:
        return False
    return True


class VectorIndex:
    """Inner-product nearest-neighbour search over unit vectors, keyed by int64 ids.

    Parameters
    ----------
    dim:
        Vector dimension.
    hnsw_threshold:
        Size from which the index is HNSW rather than exact. Crossing it while adding rebuilds
        the index once from the stored vectors.
    hnsw_m:
        Graph degree of the HNSW index.
    ef_search:
        Minimum HNSW search breadth (raised to ``2 k`` for larger ``k``).
    """

    def __init__(
        self,
        dim: int,
        *,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
        hnsw_m: int = DEFAULT_HNSW_M,
        ef_search: int = 64,
    ) -> None:
        if dim <= 0:
            raise UsageError(f"vector dimension must be positive, got {dim}")
        self.dim = dim
        self.hnsw_threshold = hnsw_threshold
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._index = self._new_index(hnsw=False)

    # -- construction ---------------------------------------------------------------------
    def _new_index(self, *, hnsw: bool) -> Any:
        faiss = _faiss()
        if hnsw:
            inner = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            inner = faiss.IndexFlatIP(self.dim)
        return faiss.IndexIDMap2(inner)

    @property
    def kind(self) -> str:
        """``"flat"`` (exact) or ``"hnsw"``."""
        faiss = _faiss()
        inner = faiss.downcast_index(self._index.index)
        return "hnsw" if isinstance(inner, faiss.IndexHNSW) else "flat"

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    @property
    def ids(self) -> np.ndarray:
        return self._ids.copy()

    def add(self, vectors: np.ndarray, ids: np.ndarray | list[int]) -> None:
        """Add rows of ``vectors`` under ``ids`` (int64, not already present)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        ids_arr = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        if ids_arr.shape[0] != vectors.shape[0]:
            raise UsageError(f"{vectors.shape[0]} vectors but {ids_arr.shape[0]} ids")
        if ids_arr.size == 0:
            return
        if np.unique(ids_arr).size != ids_arr.size or any(int(i) in self._row for i in ids_arr):
            raise UsageError("vector ids must be unique within an index")
        self._row.update((int(i), len(self._ids) + n) for n, i in enumerate(ids_arr))
        self._vectors = np.vstack([self._vectors, vectors])
        self._ids = np.concatenate([self._ids, ids_arr])
        if self.kind == "flat" and len(self) >= self.hnsw_threshold:
            # Rebuild once as a graph: exact search stops paying off at this size.
            self._index = self._new_index(hnsw=True)
            self._index.add_with_ids(self._vectors, self._ids)
        else:
            self._index.add_with_ids(vectors, ids_arr)

    def vector(self, id_: int) -> np.ndarray:
        """The stored vector of ``id_`` (a read-only view; ``KeyError`` if absent)."""
        return self._vectors[self._row[int(id_)]].copy()

    def scores(self, query: np.ndarray) -> dict[int, float]:
        """Exact inner product of ``query`` with every stored vector, by id (no FAISS)."""
        values = self._vectors @ np.asarray(query, dtype=np.float32)
        return dict(zip(self._ids.tolist(), values.tolist()))

    # -- search ---------------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` by inner product for each query row.

        Returns
        -------
        scores, ids:
            Arrays of shape ``(n_queries, min(k, len(self)))``, best first.
        """
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        k = min(int(k), len(self))
        if k <= 0:
            empty = np.zeros((queries.shape[0], 0))
            return empty.astype(np.float32), empty.astype(np.int64)
        if self.kind == "hnsw":
            faiss = _faiss()
            faiss.downcast_index(self._index.index).hnsw.efSearch = max(self.ef_search, 2 * k)
        scores, ids = self._index.search(queries, k)
        return scores, ids

    def search_one(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """``[(id, score), ...]`` for one query, best first, without FAISS's -1 padding."""
        scores, ids = self.search(query.reshape(1, -1), k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the index (vectors and ids included) in ``faiss.write_index``'s format.

        FAISS serialises into memory and Python writes the bytes: a full disk or a refused
        permission is then an :class:`OSError` with its errno (``faiss.write_index`` reports
        it as a ``RuntimeError``), and a partial file is removed.
        """
        data = _faiss().serialize_index(self._index)
        path = Path(path)
        if path.is_symlink():
            path.unlink()  # a link is replaced, never written through
        try:
            with open(path, "wb") as handle:
                handle.write(np.ascontiguousarray(data).tobytes())
        except OSError:
            if path.exists() and not path.is_symlink():
                path.unlink()
            raise

    @classmethod
    def load(cls, path: str | Path, *, hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD) -> VectorIndex:
        """Read an index written by :meth:`save`."""
        faiss = _faiss()
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"vector index file not found: {path}")
        raw = faiss.read_index(str(path))
        if not isinstance(raw, faiss.IndexIDMap2):
            raise StoreError(f"{path} is not an id-mapped FAISS index")
        inner = faiss.downcast_index(raw.index)
        if inner.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise StoreError(f"{path} does not use the inner-product metric")
        out = cls(raw.d, hnsw_threshold=hnsw_threshold)
        if isinstance(inner, faiss.IndexHNSW):
            out.hnsw_m = int(inner.hnsw.nb_neighbors(1))
        out._index = raw
        out._ids = faiss.vector_to_array(raw.id_map).astype(np.int64)
        out._row = {int(i): n for n, i in enumerate(out._ids)}
        out._vectors = (
            inner.reconstruct_n(0, raw.ntotal).astype(np.float32)
            if raw.ntotal
            else np.zeros((0, raw.d), dtype=np.float32)
        )
        return out
