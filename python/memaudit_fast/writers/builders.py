"""Every memory writer by name: ``membox``, ``engram`` or ``flat``, built or reopened.

One table holds, per writer, how to build its store from a turn stream and how to reopen a
saved one; ``build_store`` and ``open_store`` both dispatch through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .embed import Embedder
from .engram import EngramStore, build_engram
from .errors import StoreError, UsageError
from .flat import FlatStore, build_flat
from .llm import MemoryLLM
from .locomo_turns import Turn
from .membox import MemboxStore, build_membox
from .store import MemoryStore, read_manifest


@dataclass(frozen=True)
class _StoreWriter:
    build: Callable[..., MemoryStore]  # (turns, embedder, llm, params, sample_id) -> store
    open: Callable[..., MemoryStore]  # (directory, embedder=...) -> store


_TABLE: dict[str, _StoreWriter] = {
    "membox": _StoreWriter(
        lambda turns, embedder, llm, params, sample_id: build_membox(turns, embedder, llm, params, sample_id=sample_id),
        MemboxStore.open,
    ),
    "engram": _StoreWriter(
        lambda turns, embedder, llm, params, sample_id: build_engram(turns, embedder, llm, params, sample_id=sample_id),
        EngramStore.open,
    ),
    # The flat baseline takes no LLM and no parameters.
    "flat": _StoreWriter(
        lambda turns, embedder, llm, params, sample_id: build_flat(turns, embedder, sample_id=sample_id),
        FlatStore.open,
    ),
}

#: Every memory writer's name.
STORE_WRITERS: tuple[str, ...] = tuple(_TABLE)


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
    if writer not in _TABLE:
        raise UsageError(f"unknown writer {writer!r}; choose from {', '.join(STORE_WRITERS)}")
    return _TABLE[writer].build(turns, embedder, llm, params, sample_id)


def open_store(directory: str | Path, embedder: Any = None) -> MemoryStore:
    """Reopen a store written by any writer, dispatching on its manifest.

    Parameters
    ----------
    embedder:
        Overrides the embedder named in the manifest (it must have the same dimension).
    """
    writer = read_manifest(directory).get("writer")
    if not isinstance(writer, str) or writer not in _TABLE:
        raise StoreError(f"{directory}: unknown writer {writer!r} in manifest")
    return _TABLE[writer].open(directory, embedder=embedder)
