"""Read results files and export them as tables in the format the output's suffix names.

A results file holds ``memaudit.result/1`` records, one JSON object a line (``batch``,
``solve --json``, ``sweep --json``, ``score-store --json``). :func:`read_records` refuses
anything else with a :class:`PackageError` naming the line: a package set (``memaudit.package/1``
lines, which ``batch`` turns into results), or an object of another format.

:func:`export_results` writes the table of :mod:`memaudit_fast.results.table`, every field kept:
by default one row per record (``writer_<name>_<field>`` columns), or with ``layout="long"``
one row per (package, budget, writer), as :func:`memaudit_fast.read_results` gives; as Parquet (``.parquet``, ``.pq``), Feather / Arrow
IPC (``.feather``, ``.arrow``), CSV (``.csv``), TSV (``.tsv``) or JSON lines (``.jsonl``,
``.ndjson``). CSV and TSV cannot hold lists: list columns (``selected``, ``writer_selected``)
are written there as JSON arrays. ``-`` writes to stdout (the format then comes from
``fmt``). Needs pyarrow (``pip install 'memaudit_fast[parquet]'``).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.jsonio import check_output_path, write_atomic
from . import records
from .records import PACKAGE_FORMAT, RESULT_FORMAT, read_results_text

__all__ = ["FORMATS", "PACKAGE_FORMAT", "RESULT_FORMAT", "export_parquet", "export_results", "format_of",
           "read_records", "read_results_text", "write_table"]

#: Output format of each suffix.
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".feather": "feather", ".arrow": "feather",
           ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every ``memaudit.result/1`` record of a results file, in order (``-``: stdin).

    Raises PackageError (exit code 2) at the first line that is not a result record, and when
    the file holds no record at all. The one reader of :mod:`.records`.
    """
    return records.read_records(path)


def format_of(out: str | Path, fmt: str | None = None) -> str:
    """The output format: ``fmt`` when given, else the one the suffix names."""
    if fmt is not None:
        if fmt not in set(FORMATS.values()):
            raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(sorted(set(FORMATS.values())))}")
        return fmt
    if str(out) == "-":
        raise UsageError("writing to stdout ('-') needs --format (csv, tsv, jsonl, parquet or feather)")
    name = Path(out).name.lower()
    for suffix, kind in FORMATS.items():
        if name.endswith(suffix):
            return kind
    raise UsageError(f"{out}: cannot tell the format from the name; use one of "
                     f"{', '.join(FORMATS)} or give --format")


def _text_table(pa: Any, table: Any) -> Any:
    """Lists as JSON arrays, so that CSV keeps them."""
    columns = []
    for column in table.columns:
        if pa.types.is_list(column.type):
            column = pa.array([None if v is None else json.dumps(v, ensure_ascii=False)
                               for v in column.to_pylist()], type=pa.string())
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def write_table(table: Any, out: str | Path, fmt: str) -> None:
    """Write an Arrow table as ``fmt`` to ``out`` (``-``: stdout), atomically for files."""
    import pyarrow as pa

    def write(handle: Any) -> None:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, handle)
        elif fmt == "feather":
            from pyarrow import feather

            feather.write_feather(table, handle)
        elif fmt in ("csv", "tsv"):
            import pyarrow.csv as pcsv

            pcsv.write_csv(_text_table(pa, table), handle,
                           pcsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ","))
        else:
            for row in table.to_pylist():
                handle.write((json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))

    if str(out) == "-":
        buffer = io.BytesIO()
        write(buffer)
        sys.stdout.flush()
        sys.stdout.buffer.write(buffer.getvalue())
        sys.stdout.buffer.flush()
    else:
        write_atomic(Path(out), write, binary=True)


def export_results(results: str | Path, out: str | Path, *, fmt: str | None = None,
                   layout: str = "wide", overwrite: bool = False) -> int:
    """Write the results table of a results file; returns the number of rows written.

    ``layout``: ``wide`` (one row per record, ``writer_<name>_<field>`` columns) or ``long``
    (one row per (package, budget, writer), as :func:`memaudit_fast.read_results` gives).
    """
    from .table import LAYOUTS, _pyarrow, build_table

    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")

    kind = format_of(out, fmt)
    _pyarrow()
    if str(out) != "-":
        inputs = () if str(results) == "-" else (Path(results),)
        check_output_path(Path(out), inputs=inputs, overwrite=overwrite)
    table = build_table(records.without_superseded_errors(read_records(results)), layout=layout)
    write_table(table, out, kind)
    return int(table.num_rows)


def export_parquet(results: str | Path, out: str | Path, *, overwrite: bool = False) -> int:
    """Write a results file as Parquet (whatever the suffix); returns the row count."""
    return export_results(results, out, fmt="parquet", overwrite=overwrite)
