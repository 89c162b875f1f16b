"""Build any writer's store from a turn stream by name: ``membox``, ``engram`` or ``flat``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .embed import Embedder
from .errors import StoreError, UsageError
from .llm import MemoryLLM
from .locomo_turns import Turn
from .store import MemoryStore, read_manifest

WRITERS = ("membox", "engram", "flat")


def build_store(
    writer: str,
    turns: Iterable[Turn],
    embedder: Embedder,
    llm: MemoryLLM | None = None,
    *,
    sample_id: str = "",
    params: Any = None,
) -> MemoryStore:
    """Run the named writer over ``turns`` and return its (unsaved) store."""
    if writer == "membox":
        from .membox import build_membox

        return build_membox(turns, embedder, llm, params, sample_id=sample_id)
    if writer == "engram":
        from .engram import build_engram

        return build_engram(turns, embedder, llm, params, sample_id=sample_id)
    if writer == "flat":
        from .flat import build_flat

        return build_flat(turns, embedder, sample_id=sample_id)
    raise UsageError(f"unknown writer {writer!r}; choose from {', '.join(WRITERS)}")


def open_store(directory: str | Path, embedder: Any = None) -> MemoryStore:
    """Reopen a store written by any writer, dispatching on its manifest.

    Parameters
    ----------
    embedder:
        Overrides the embedder named in the manifest (it must have the same dimension).
    """
    manifest = read_manifest(directory)
    writer = manifest.get("writer")
    if writer == "membox":
        from .membox import MemboxStore

        return MemboxStore.open(directory, embedder=embedder)
    if writer == "engram":
        from .engram import EngramStore

        return EngramStore.open(directory, embedder=embedder)
    if writer == "flat":
        from .flat import FlatStore

        return FlatStore.open(directory, embedder=embedder)
    raise StoreError(f"{directory}: unknown writer {writer!r} in manifest")
