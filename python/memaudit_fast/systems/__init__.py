"""External memory systems scored by MEMAUDIT through the union denominator.

- Importers (one module per system) read a store exactly as the system exports it:
  :func:`read_mem0`, :func:`read_letta`, :func:`read_amem`, :func:`read_own` (Membox, ENGRAM);
  an export without memories is refused, and what an importer tolerates is listed in the
  export's ``notices`` (``memaudit import`` prints them on stderr).
- :mod:`.arbiter` decides coverage rows ``a[m, r]`` for the exported memories (offline
  embedding judge calibrated on the package, or an LLM judge), cached on disk.
- :mod:`.union` adds a system's memories to a package as one-member groups: the union.
- :mod:`.diagnostics` reports full-store, recency-, salience- and upper-pruned ratios over
  ``OPT(union)``, the upper-pruned one both exact and greedy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .amem import read_amem
from .arbiter import Arbiter, ArbiterCache, EmbeddingJudge, LLMJudge, Thresholds, calibrate
from .diagnostics import score_store
from .letta import read_letta, split_block
from .mem0 import read_mem0
from .own import read_own
from .records import ExportedMemory, SystemExport
from .union import base_package, build_union, embedding_arbiter, system_names, system_package

#: Importer names, as the CLI takes them.
IMPORTERS = ("mem0", "letta", "amem", "membox", "engram")


def read_system(system: str, export: str | Path | None, **options: Any) -> SystemExport:
    """Read an export with the named importer (options as that importer takes them); what it
    tolerated and kept as exported is in the result's ``notices``. ``-`` is standard input, for
    one of ``export``, ``history`` and ``passages`` (it holds one file)."""
    piped = [name for name, value in (("export", export), ("history", options.get("history")),
                                      ("passages", options.get("passages"))) if value is not None and str(value) == "-"]
    if len(piped) > 1:
        raise UsageError(f"{' and '.join(piped)} are both '-': standard input holds one file; give the other "
                         "as a file path")
    if piped and system in ("membox", "engram"):
        # Their manifest (the conversation the store was written for) sits beside the file.
        raise UsageError(f"a {system} store is read from its directory or memories.jsonl path, whose manifest "
                         "names the conversation; give the path instead of '-'")
    if system == "mem0":
        return read_mem0(export, history=options.get("history"))
    if export is None:
        raise UsageError(f"the {system} importer needs an export file")
    if system == "letta":
        return read_letta(export, passages=options.get("passages"), labels=options.get("labels"))
    if system == "amem":
        return read_amem(export, view=options.get("view") or "full")
    if system in ("membox", "engram"):
        return read_own(export, system)
    raise UsageError(f"unknown system {system!r}; expected one of {', '.join(IMPORTERS)}")


__all__ = [
    "IMPORTERS",
    "Arbiter",
    "ArbiterCache",
    "EmbeddingJudge",
    "ExportedMemory",
    "LLMJudge",
    "SystemExport",
    "Thresholds",
    "base_package",
    "build_union",
    "calibrate",
    "embedding_arbiter",
    "read_amem",
    "read_letta",
    "read_mem0",
    "read_own",
    "read_system",
    "score_store",
    "split_block",
    "system_names",
    "system_package",
]
