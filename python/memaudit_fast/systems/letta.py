"""Letta stores: core memory blocks, split into atoms, and archival passages.

Input: a JSON object holding ``"blocks"`` (a list of Letta ``Block`` objects: ``label``,
``value``, ``limit``, optionally ``id``, ``description``, ``read_only``, ``metadata``, ...) and/or ``"passages"`` (a list of
``Passage`` objects: ``text``, optionally ``id``, ``created_at``, ``updated_at``, ``tags``,
``is_deleted``, ``metadata``). An agent's state (``{"memory": {"blocks": [...]}}``) and an
agent file (``.af``, blocks at the top level) are read the same way; passages may also come
from a separate file (what ``client.agents.passages.list`` returns, as a JSON list or JSONL).

A block is one string the agent keeps in its context window; MEMAUDIT needs the separate
facts in it, so each block ``value`` is split into **atoms** by this rule:

1. split at line breaks;
2. strip each line and a leading list marker (``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``);
3. split the line into sentences after ``.``, ``!`` or ``?`` followed by white space and an
   upper-case letter, a digit or a quote;
4. pieces without any letter or digit (separators such as ``---``) are not memories; they
   are counted in the export details, never silently lost.

Atom ``k`` (from 1) of the block labelled ``human`` has id ``human#k``. Archival passages
become one memory each (id: the passage ``id``, else ``passage-<index>``). A passage with
``is_deleted`` true is kept as a ``deleted`` memory ``"[date] Deleted: TEXT"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError
from ..model.jsonio import describe
from .records import (
    ExportedMemory,
    RecordReader,
    SystemExport,
    deletion_text,
    load_json_file,
    load_records,
    require_memories,
    source_name,
    stdin_read_once,
)

_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“])")
_WORDLIKE = re.compile(r"[^\W_]")

SPLIT_RULE = "lines, list markers stripped, then sentences; separator-only pieces dropped (counted)"


def split_block(value: str) -> tuple[list[str], int]:
    """Atoms of a block value and the number of separator-only pieces left out."""
    atoms: list[str] = []
    dropped = 0
    for line in value.splitlines():
        line = _MARKER.sub("", line.strip()).strip()
        if not line:
            continue
        for piece in _SENTENCE.split(line):
            piece = piece.strip()
            if not piece:
                continue
            if _WORDLIKE.search(piece):
                atoms.append(piece)
            else:
                dropped += 1
    return atoms, dropped


@stdin_read_once
def read_letta(
    export: str | Path,
    *,
    passages: str | Path | None = None,
    labels: Sequence[str] | None = None,
) -> SystemExport:
    """Read Letta core memory blocks and archival passages.

    Parameters
    ----------
    export:
        JSON file with ``blocks`` and/or ``passages`` (see the module docstring).
    passages:
        Optional separate file of passages (JSON list or JSONL).
    labels:
        Keep only the blocks with these labels (default: every block).
    """
    path = Path(export)
    data = load_json_file(path, "letta")
    if not isinstance(data, dict):
        raise PackageError(
            f"found {describe(data)}, expected an object with 'blocks' and/or 'passages'", source=source_name(path)
        )
    reader = RecordReader(source_name(path), "letta")
    blocks, block_field = _find_blocks(data, reader)
    # Each passage with the reader of the file it came from: a defect is blamed on that file.
    raw_passages: list[tuple[RecordReader, str, Any]] = []
    if "passages" in data and data["passages"] is not None:
        if not isinstance(data["passages"], list):
            reader.fail(f"found {describe(data['passages'])}, expected a list of passages", fld="passages")
        raw_passages = [(reader, f"passages[{i}]", p) for i, p in enumerate(data["passages"])]
    if passages is not None:
        separate = RecordReader(source_name(passages), "letta")
        raw_passages.extend((separate, where, p) for where, p in load_records(Path(passages), "letta passages"))
    if blocks is None and not raw_passages:
        reader.fail("found neither 'blocks' nor 'passages'; expected at least one of them")

    memories: list[ExportedMemory] = []
    seen: dict[str, str] = {}
    block_labels: dict[str, str] = {}
    wanted = set(labels) if labels else None
    counts = {"blocks": 0, "blocks_skipped": 0, "atoms": 0, "separators_dropped": 0}
    for i, raw in enumerate(blocks or []):
        where = f"{block_field}[{i}]"
        rec = reader.obj(raw, where)
        label = reader.string(rec, "label", where, nonempty=True)
        value = reader.string(rec, "value", where)
        assert label is not None and value is not None
        limit = reader.integer(rec, "limit", where)
        reader.string(rec, "description", where, required=False)
        reader.boolean(rec, "read_only", where)
        reader.mapping(rec, "metadata", where)
        if limit is not None and len(value) > limit:
            reader.fail(f"value has {len(value)} characters, above the block's limit {limit}",
                        record=where, fld="value")
        block_id = reader.ident(rec, "id", where, required=False)
        if label in block_labels:
            reader.fail(f"a second block labelled {label!r} (first at {block_labels[label]}); "
                        "labels must be unique within an agent", record=where, fld="label")
        block_labels[label] = where
        if wanted is not None and label not in wanted:
            counts["blocks_skipped"] += 1
            continue
        atoms, dropped = split_block(value)
        counts["blocks"] += 1
        counts["atoms"] += len(atoms)
        counts["separators_dropped"] += dropped
        for k, atom in enumerate(atoms, start=1):
            memory_id = f"{label}#{k}"
            seen[memory_id] = where
            extra = {"label": label, "block_atom": k}
            if block_id:
                extra["block_id"] = block_id
            memories.append(ExportedMemory(memory_id, atom, "core_atom", "active", None, None,
                                           len(memories), (), extra))

    if wanted is not None and not wanted <= set(block_labels):
        missing = ", ".join(repr(label) for label in sorted(wanted - set(block_labels)))
        have = ", ".join(repr(label) for label in block_labels) or "none"
        raise UsageError(f"--labels {missing}: no block of {path} has such a label (its labels: {have})")

    n_deleted = 0
    for j, (preader, where, raw) in enumerate(raw_passages):
        rec = preader.obj(raw, where)
        text = preader.string(rec, "text", where)
        assert text is not None
        memory_id = preader.ident(rec, "id", where, required=False) or f"passage-{j}"
        preader.unique(seen, memory_id, where, "id")
        created = preader.time(rec, "created_at", where)
        updated = preader.time(rec, "updated_at", where)
        tags = preader.string_list(rec, "tags", where)
        deleted = preader.boolean(rec, "is_deleted", where)
        meta = rec.get("metadata", rec.get("metadata_"))
        if meta is not None and not isinstance(meta, dict):
            preader.fail(f"found {describe(meta)}, expected an object or null", record=where, fld="metadata")
        kept: dict[str, Any] = {"tags": tags} if tags else {}
        if meta:
            kept["metadata"] = meta
        if deleted:
            n_deleted += 1
            when, key_value = updated if updated[0] is not None else created
            memories.append(ExportedMemory(memory_id, deletion_text(text, when), "passage", "deleted",
                                           when, key_value, len(memories), (), kept))
        else:
            memories.append(ExportedMemory(memory_id, text, "passage", "active", created[0], created[1],
                                           len(memories), (), kept))
    details = {
        **counts,
        "passages": len(raw_passages),
        "passages_deleted": n_deleted,
        "labels": sorted(wanted) if wanted else None,
        "split_rule": SPLIT_RULE,
    }
    sources = source_name(path) if passages is None else f"{source_name(path)} + {source_name(passages)}"
    n_blocks, skipped, separators = counts["blocks"], counts["blocks_skipped"], counts["separators_dropped"]
    parts = [f"{n_blocks} block{'s' if n_blocks != 1 else ''} read"]
    if skipped:
        parts.append(f"{skipped} left out by the labels asked for")
    if separators:
        parts.append(f"{separators} separator-only piece{'s' if separators != 1 else ''} dropped")
    what = f"no atoms from the blocks: {', '.join(parts)}; no passages"
    return require_memories(SystemExport("letta", sources, memories, details), what)


def _find_blocks(data: dict[str, Any], reader: RecordReader) -> tuple[list[Any] | None, str]:
    if "blocks" in data and data["blocks"] is not None:
        if not isinstance(data["blocks"], list):
            reader.fail(f"found {describe(data['blocks'])}, expected a list of blocks", fld="blocks")
        return data["blocks"], "blocks"
    memory = data.get("memory")
    if isinstance(memory, dict) and "blocks" in memory:
        if not isinstance(memory["blocks"], list):
            reader.fail(f"found {describe(memory['blocks'])}, expected a list of blocks", fld="memory.blocks")
        return memory["blocks"], "memory.blocks"
    return None, "blocks"
