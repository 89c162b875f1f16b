"""Export batch results (memaudit.result/1 JSONL) to Parquet, one row per record.

Columns: the scalar fields of a record, ``selected`` as a list of strings, each writer's
value and ratio as ``writer_<name>_value`` / ``writer_<name>_ratio``, and the certificate's
``certificate_<field>`` scalars. Needs pyarrow (``pip install 'memaudit_fast[parquet]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.jsonio import check_output_path
from . import records

SCALARS = (
    "package_id", "source", "budget", "saturation", "weights_rule", "opt", "upper_bound", "gap",
    "status", "proven_optimal", "cost", "nodes", "seconds", "error",
)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {key: record.get(key) for key in SCALARS}
    row["selected"] = [str(s) for s in record.get("selected") or []]
    for name, block in sorted((record.get("writers") or {}).items()):
        if isinstance(block, dict):
            row[f"writer_{name}_value"] = block.get("value")
            row[f"writer_{name}_ratio"] = block.get("ratio")
    for key, value in sorted((record.get("certificate") or {}).items()):
        if isinstance(value, (str, int, float, bool)) or value is None:
            row[f"certificate_{key}"] = value
    return row


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a results file (the one reader of :mod:`.records`)."""
    return records.read_records(path)


def export_parquet(results: str | Path, out: str | Path, *, overwrite: bool = False) -> int:
    """Write every record of a results file to Parquet; returns the row count."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("Parquet export needs pyarrow: pip install 'memaudit_fast[parquet]'") from None
    check_output_path(Path(out), inputs=(Path(results),), overwrite=overwrite)
    rows = [flatten(r) for r in read_records(results)]
    columns: dict[str, list[Any]] = {}
    for row in rows:
        for key in row:
            columns.setdefault(key, [])
    for row in rows:
        for key, values in columns.items():
            values.append(row.get(key))
    table = pa.table({key: pa.array(values) for key, values in columns.items()})
    pq.write_table(table, str(out))
    return len(rows)
