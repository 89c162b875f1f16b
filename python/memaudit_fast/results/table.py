"""Results as tables: one row per (package, budget, writer), with a fixed schema.

:func:`build_table` lays records out; :mod:`memaudit_fast.results.frame` gives the public
:func:`results_to_table` which turns ``memaudit.result/1`` records (dicts, :class:`SolveResult`
objects, or a results file) into a ``pyarrow.Table``; :func:`results_to_frame` into a pandas
``DataFrame``; :func:`read_results` reads a results file (``-`` for stdin).

Rows. A record with a ``writers`` block (``sweep``, ``batch --writers``) gives one row per
baseline writer (``writer_kind = "baseline"``); a record with a ``systems`` block
(``score-store``) one row per external system (``writer_kind = "system"``); a record with
neither (a plain ``solve``, an error record) one row whose ``writer`` is null. The record's
own fields repeat on each of its rows, so a filter on ``writer`` never loses OPT.

Columns. The columns of :data:`SCHEMA` are always present, in that order and with those types
(null where a record lacks the field), so tables from different runs concatenate:

========================  ===========  =====================================================
column                    type         meaning
========================  ===========  =====================================================
package_id                string       the package
source                    string       where the package was read (batch records)
distribution              string       stress distribution (the record's, else the ``d`` of a
                                       ``small/<d>/...`` package id)
budget                    float64      B, always a float
budget_frac               float64      B as a fraction of the total cost, when given so
status                    string       optimal / time_limit / node_limit / interrupted / error
proven_optimal            bool
opt                       float64      value of the best store found (OPT when proven)
upper_bound, gap          float64      proven bound and its gap
cost                      float64      cost of the optimal store
selected                  list<str>    the optimal store
nodes                     int64        search nodes
seconds                   float64      solver seconds
saturation, weights_rule  string
group_capacity            int64        when not 1
proved_by                 string       when not the branch-and-bound alone
error                     string       cause of an error record
size_candidates ...       int64        ``size`` block: candidates, groups, units, nonzeros
certificate_*             mixed        solver, version, status (string), value, seconds
                                       (float64), agrees (bool)
writer                    string       writer or system name (null: none)
writer_kind               string       ``baseline`` or ``system``
writer_value, writer_ratio float64     the writer's F(X) and F(X) / OPT
writer_cost               float64      the writer's store cost
writer_selected           list<str>    the writer's store
========================  ===========  =====================================================

Every other field is kept too, after these columns in name order: nested objects are
flattened with ``_`` (``ablation_tombstone+update_fraction_of_opt``, ``package_opt_value``,
``certificate_bracket_lower``), a writer's other fields become ``writer_<field>`` and a
system's fields ``system_<field>`` (``system_full_store_ratio``, ``system_reasons_<key>``).
A column whose values mix types (a number in one record, text in another) is kept as JSON
text rather than coerced.

``results_to_table(..., layout="wide")`` gives one row per record instead (the layout of
``memaudit export``): the columns above without the ``writer*`` ones, then each writer's and
system's fields as ``writer_<name>_<field>`` / ``system_<name>_<field>``.

In pandas, integer and boolean columns use the nullable ``Int64`` and ``boolean`` dtypes,
floats ``float64`` (NaN for null). Needs pyarrow (and pandas for the frame):
``pip install 'memaudit_fast[pandas]'``.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import PackageError, UsageError

#: (column, arrow type name) of the fixed part of the schema, in order.
SCHEMA: tuple[tuple[str, str], ...] = (
    ("package_id", "string"), ("source", "string"), ("distribution", "string"),
    ("budget", "float64"), ("budget_frac", "float64"), ("status", "string"),
    ("proven_optimal", "bool"), ("opt", "float64"), ("upper_bound", "float64"),
    ("gap", "float64"), ("cost", "float64"), ("selected", "list<string>"), ("nodes", "int64"),
    ("seconds", "float64"), ("saturation", "string"), ("weights_rule", "string"),
    ("group_capacity", "int64"), ("proved_by", "string"), ("error", "string"),
    ("size_candidates", "int64"), ("size_groups", "int64"), ("size_units", "int64"),
    ("size_nonzeros", "int64"),
    ("certificate_solver", "string"), ("certificate_version", "string"),
    ("certificate_status", "string"), ("certificate_value", "float64"),
    ("certificate_agrees", "bool"), ("certificate_seconds", "float64"),
    ("writer", "string"), ("writer_kind", "string"), ("writer_value", "float64"),
    ("writer_ratio", "float64"), ("writer_cost", "float64"), ("writer_selected", "list<string>"),
)
COLUMNS = tuple(name for name, _ in SCHEMA)
_SKIP = frozenset({"format", "writers", "systems"})


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise UsageError("results as tables need pyarrow: pip install 'memaudit_fast[pandas]'") from None
    return pyarrow


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(f"{prefix}_{key}", item, out)
    elif isinstance(value, dict):
        out[prefix] = None  # an empty block: the column exists, nothing in it
    else:
        out[prefix] = value


def _distribution(record: dict[str, Any]) -> Any:
    if "distribution" in record:
        return record["distribution"]
    parts = str(record.get("package_id") or "").split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "small" else None


def record_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one record (see the module doc)."""
    base: dict[str, Any] = {}
    for key, value in record.items():
        if key not in _SKIP:
            _flatten(key, value, base)
    base["distribution"] = _distribution(record)
    rows = []
    for kind, block_name, prefix in (("baseline", "writers", "writer"), ("system", "systems", "system")):
        block = record.get(block_name)
        if not isinstance(block, dict):
            if block is not None:
                raise PackageError(f"expected an object of {block_name}, found {type(block).__name__}",
                                   field=block_name)
            continue
        for name, fields in block.items():
            row = dict(base, writer=name, writer_kind=kind)
            if isinstance(fields, dict):
                for key, value in fields.items():
                    _flatten(f"{prefix}_{key}", value, row)
            else:
                row[f"{prefix}_value"] = fields
            rows.append(row)
    return rows or [base]


def _column(pa: Any, name: str, values: list[Any], type_name: str | None) -> Any:
    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_(),
             "list<string>": pa.list_(pa.string())}
    if type_name == "float64":
        values = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
    try:
        return pa.array(values, type=types[type_name] if type_name else None)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        if type_name is None:  # mixed types in a free column: keep every value, as JSON text
            return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values],
                            type=pa.string())
        bad = next((v for v in values if v is not None and not _fits(v, type_name)), None)
        raise PackageError(f"found {bad!r}, expected {type_name} (column {name!r} of the results table)",
                           field=name) from None


def _fits(value: Any, type_name: str) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "float64":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "int64":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "bool":
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def wide_row(record: dict[str, Any]) -> dict[str, Any]:
    """The one row of a record in the ``wide`` layout (see :func:`results_to_table`)."""
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key not in _SKIP:
            _flatten(key, value, row)
    row["distribution"] = _distribution(record)
    for block_name, prefix in (("writers", "writer"), ("systems", "system")):
        block = record.get(block_name)
        if isinstance(block, dict):
            for name, fields in block.items():
                _flatten(f"{prefix}_{name}", fields, row)
        elif block is not None:
            raise PackageError(f"expected an object of {block_name}, found {type(block).__name__}",
                               field=block_name)
    return row


LAYOUTS = ("long", "wide")


def build_table(records: list[dict[str, Any]], *, layout: str = "long") -> Any:
    """A ``pyarrow.Table`` of results.

    ``layout="long"`` (the default): one row per (package, budget, writer), schema as documented
    above. ``layout="wide"``: one row per record, the record's columns as above without the
    ``writer*`` ones, and each writer's or system's fields as ``writer_<name>_<field>`` /
    ``system_<name>_<field>`` columns (``writer_gvt_ratio``), the layout of ``memaudit export``.
    """
    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    pa = _pyarrow()
    if layout == "long":
        rows = [row for record in records for row in record_rows(record)]
        schema = SCHEMA
    else:
        rows = [wide_row(record) for record in records]
        schema = tuple((name, kind) for name, kind in SCHEMA if not name.startswith("writer"))
    names = [name for name, _ in schema]
    extra = sorted({key for row in rows for key in row} - set(names))
    fixed = dict(schema)
    arrays = [_column(pa, name, [row.get(name) for row in rows], fixed.get(name)) for name in (*names, *extra)]
    return pa.Table.from_arrays(arrays, names=[*names, *extra])
