"""Results as pandas DataFrames and Arrow tables: one row per (package, budget, writer).

:func:`results_to_table` turns ``memaudit.result/1`` records (dicts, :class:`SolveResult`
objects, or a results file) into a ``pyarrow.Table``; :func:`results_to_frame` into a pandas
``DataFrame``; :func:`read_results` reads a results file (``-`` for stdin). The rows and the
fixed columns are documented in :mod:`memaudit_fast.results.table`. Needs pyarrow (and pandas
for the frame): ``pip install 'memaudit_fast[pandas]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .export import read_records
from .records import validate_record, without_superseded_errors
from .table import COLUMNS, LAYOUTS, SCHEMA, _pyarrow, build_table

__all__ = ["COLUMNS", "LAYOUTS", "SCHEMA", "read_results", "results_to_frame", "results_to_table",
           "table_to_frame"]


def _as_records(results: Any) -> list[dict[str, Any]]:
    if isinstance(results, (str, Path)):
        # A batch's error record that a resumed run's success superseded is not a failure.
        return without_superseded_errors(read_records(results))
    records = []
    for k, item in enumerate(results):
        if hasattr(item, "to_record"):
            item = item.to_record()
        if not isinstance(item, dict):
            raise UsageError(f"results[{k}]: expected a memaudit.result/1 dict or a SolveResult, "
                             f"got {type(item).__name__}")
        # The checks a results file meets, so that a table never meets a field of a wrong type.
        records.append(validate_record(item, "results", f"results[{k}]"))
    return records


def results_to_table(results: Iterable[Any] | str | Path, *, layout: str = "long") -> Any:
    """A ``pyarrow.Table`` of records, SolveResults or a results file.

    ``layout="long"`` (the default): one row per (package, budget, writer). ``layout="wide"``:
    one row per record, each writer's or system's fields as ``writer_<name>_<field>`` /
    ``system_<name>_<field>`` columns, the layout of ``memaudit export``.
    """
    return build_table(_as_records(results), layout=layout)


def table_to_frame(table: Any) -> Any:
    """A pandas DataFrame of a results table (nullable Int64 / boolean dtypes)."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError("results as data frames need pandas: pip install 'memaudit_fast[pandas]'") from None
    pa = _pyarrow()
    mapping = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return table.to_pandas(types_mapper=mapping.get)


def results_to_frame(results: Iterable[Any] | str | Path, *, layout: str = "long") -> Any:
    """A pandas DataFrame, one row per (package, budget, writer) (see the module doc).

    ``results``: records (dicts), :class:`~memaudit_fast.SolveResult` objects, or the path of
    a results file; every record meets the checks of a results file (a PackageError names
    the first one that does not). ``layout="wide"``: one row per record instead.
    """
    return table_to_frame(results_to_table(results, layout=layout))


def read_results(path: str | Path, *, arrow: bool = False, layout: str = "long") -> Any:
    """Read a ``memaudit.result/1`` JSONL file (``-``: stdin) as a DataFrame (or Arrow table).

    Anything but result records (a package set, another JSON file) is a PackageError.
    """
    table = results_to_table(path, layout=layout)
    return table if arrow else table_to_frame(table)
