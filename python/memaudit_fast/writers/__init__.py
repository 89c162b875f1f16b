"""Memory writers Membox and ENGRAM, a flat baseline, and their FAISS-backed retrieval.

Everything runs offline by default: the embedder is WordLlama loaded from its pip package (or
a non-semantic hashing fallback), the LLM decisions are the deterministic approximation of
:class:`~memaudit_fast.writers.llm.OfflineLLM`; :class:`~memaudit_fast.writers.openai_client.
OpenAIChatLLM` replaces it for users with an endpoint. FAISS and the embedding packages come
with the ``writers`` extra (``pip install 'memaudit_fast[writers]'``) and are imported only
when used.

Example::

    from memaudit_fast.writers import build_membox, get_embedder, load_locomo
    from memaudit_fast.writers.store import store_dir_name

    conv = load_locomo("locomo.json")[0]
    store = build_membox(conv.turns, get_embedder("auto"), sample_id=conv.sample_id)
    for item in store.retrieve("When did Caroline go to the support group?"):
        print(item.text)
    store.save("stores/membox/" + store_dir_name(conv.sample_id))  # the name 'memaudit write' gives
"""

from __future__ import annotations

from .builders import STORE_WRITERS, build_store, open_store
from .embed import Embedder, HashingEmbedder, get_embedder
from .engram import EngramParams, EngramStore, build_engram
from .errors import DependencyMissing, LLMError, StoreError, WriterError
from .export import export_store, read_export, write_export
from .flat import FlatStore, build_flat
from .llm import MemoryLLM, OfflineLLM
from .locomo_turns import Conversation, QAItem, Turn, load_locomo
from .membox import MemboxParams, MemboxStore, build_membox
from .store import ContextItem, within_budget

__all__ = [
    "STORE_WRITERS",
    "ContextItem",
    "Conversation",
    "DependencyMissing",
    "Embedder",
    "EngramParams",
    "EngramStore",
    "FlatStore",
    "HashingEmbedder",
    "LLMError",
    "MemboxParams",
    "MemboxStore",
    "MemoryLLM",
    "OfflineLLM",
    "QAItem",
    "StoreError",
    "Turn",
    "WriterError",
    "build_engram",
    "build_flat",
    "build_membox",
    "build_store",
    "export_store",
    "get_embedder",
    "load_locomo",
    "open_store",
    "read_export",
    "within_budget",
    "write_export",
]


def __getattr__(name: str) -> object:
    # ``WRITERS`` was renamed: it clashed with the baseline writers' registry of the same name.
    if name == "WRITERS":
        import warnings

        warnings.warn("memaudit_fast.writers.WRITERS is deprecated; use STORE_WRITERS",
                      DeprecationWarning, stacklevel=2)
        return STORE_WRITERS
    raise AttributeError(f"module 'memaudit_fast.writers' has no attribute {name!r}")
