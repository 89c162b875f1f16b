"""What every writer store shares: the manifest, context items, budgets and reopening.

A store is a directory::

    STORE_DIR/
      manifest.json     writer, format version, embedder spec, parameters, counts
      store.sqlite      the store's records (tables depend on the writer)
      *.faiss           FAISS indexes over the records' embeddings (ids = SQLite row ids)
      memories.jsonl    the export of :mod:`memaudit_fast.writers.export`

The embedder that built a store is named in the manifest and rebuilt to embed queries, so a
store reopened later answers exactly as it did when it was written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import UsageError
from ..model.outputs import safe_name
from .errors import StoreError, sqlite_os_error
from .text import word_count

STORE_FORMAT = "memaudit.writer-store/1"
MANIFEST = "manifest.json"
DATABASE = "store.sqlite"
EXPORT = "memories.jsonl"


@dataclass(frozen=True)
class ContextItem:
    """One piece of retrieved context, as it would be pasted into a prompt.

    Attributes
    ----------
    text:
        The serialised memory (what the answering model would read).
    source_turns:
        Dia ids of the turns the memory comes from (for evidence recall).
    score:
        Retrieval similarity that ranked it.
    kind:
        ``box``, ``event``, ``episodic``, ``semantic``, ``procedural`` or ``turn``.
    memory_id:
        The id of the memory in the store's export.
    """

    text: str
    source_turns: tuple[str, ...]
    score: float
    kind: str
    memory_id: str

    @cached_property
    def words(self) -> int:
        return word_count(self.text)


def within_budget(items: Sequence[ContextItem], budget: float) -> list[ContextItem]:
    """Items in rank order, each kept when it still fits the remaining word budget.

    An item too long for what is left is skipped and later, shorter items may still fit
    (first fit), the same rule for every writer, so that context sizes are comparable.
    """
    out: list[ContextItem] = []
    left = float(budget)
    for item in items:
        if left < 1:
            break
        if item.words <= left:
            out.append(item)
            left -= item.words
    return out


class MemoryStore(Protocol):
    """A written memory that answers queries."""

    writer: str

    def ranked_context(self, query: str) -> list[ContextItem]:
        """All the context the store would give for ``query``, best first (for budgeted use)."""
        ...

    def retrieve(self, query: str, k: int | None = None) -> list[ContextItem]:
        """The store's own retrieval with its own defaults (``k`` overrides its size knob)."""
        ...

    def export_records(self) -> Iterator[dict[str, Any]]:
        """The memories as export records (see :mod:`memaudit_fast.writers.export`)."""
        ...

    def save(self, directory: str | Path) -> Path:
        """Write the store into ``directory`` (created if needed)."""
        ...


def embedding_blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def blob_embedding(blob: bytes, dim: int) -> np.ndarray:
    vec = np.frombuffer(blob, dtype=np.float32)
    if vec.shape[0] != dim:
        raise StoreError(f"stored embedding has {vec.shape[0]} values, expected {dim}")
    return vec


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    from ..model.jsonio import write_atomic

    body = {"format": STORE_FORMAT, **manifest}
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    write_atomic(directory / MANIFEST, lambda handle: handle.write(text))  # replaces a link, never follows it


def write_store_manifest(directory: Path, store: Any, llm: str | None) -> None:
    """The manifest every writer store saves: what built it, with which embedder and params."""
    write_manifest(
        directory,
        {
            "writer": store.writer, "sample_id": store.sample_id,
            "embedder": store.embedder.spec, "dim": store.embedder.dim, "llm": llm,
            "params": asdict(store.params), "counts": store.stats(),
        },
    )


def reopen_manifest(directory: Path, writer: str, embedder: Any) -> tuple[dict[str, Any], Any]:
    """Check a saved store is the expected writer's; return its manifest and its embedder."""
    from .embed import get_embedder

    manifest = read_manifest(directory)
    if manifest.get("writer") != writer:
        raise StoreError(f"{directory} holds a {manifest.get('writer')!r} store, not {writer}")
    embedder = get_embedder(embedder or manifest["embedder"])
    check_dim(embedder, manifest, directory)
    return manifest, embedder


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """Read and check a store's manifest."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise StoreError(f"{directory} is not a writer store (no {MANIFEST})")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}: not valid JSON ({exc})") from None
    if manifest.get("format") != STORE_FORMAT:
        raise StoreError(
            f"{path}: format {manifest.get('format')!r}, this version reads {STORE_FORMAT!r}"
        )
    return manifest


def load_database(path: Path) -> sqlite3.Connection:
    """Copy an existing SQLite file into memory (never create one by accident).

    Working on a copy leaves the file untouched and unlocked while the store is in use.
    """
    if not path.is_file():
        raise StoreError(f"SQLite database not found: {path}")
    source = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    conn = sqlite3.connect(":memory:")
    try:
        source.backup(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a readable SQLite database ({exc})") from None
    finally:
        source.close()
    return conn


def copy_database(conn: sqlite3.Connection, path: Path) -> None:
    """Write an (in-memory or file) database to ``path`` through SQLite's backup API.

    A full disk, a read-only file system or a refused permission raises the :class:`OSError`
    behind it (so callers report it as they report any failed write) and leaves no partial file.
    """
    if path.exists() or path.is_symlink():
        path.unlink()  # a link is removed, never written through
    try:
        dest = sqlite3.connect(str(path))
        try:
            conn.backup(dest)
        finally:
            dest.close()
    except sqlite3.Error as exc:
        if path.exists() and not path.is_symlink():
            path.unlink()
        cause = sqlite_os_error(exc, path)
        if cause is None:
            raise
        raise cause from None


def store_dir_name(sample_id: str) -> str:
    """The directory name of a conversation's store under ``memaudit write --out``.

    It depends on the sample id alone, so a store keeps its name across runs and subsets of
    conversations: a short id that is already a plain file name is used as it is; any other
    gets its safe form (:func:`~memaudit_fast.model.outputs.safe_name`) plus a digest of the
    exact id, so ``a/b`` and ``a_b`` never share a directory.
    """
    name = safe_name(sample_id, fallback="conversation")
    if name == sample_id:
        return name
    digest = hashlib.sha256(sample_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[:100]}-{digest}"


def check_store_owner(directory: Path, sample_id: str) -> None:
    """Refuse to replace ``directory`` when it holds the store of another conversation.

    ``--force`` replaces a conversation's earlier store; a store whose manifest names another
    ``sample_id`` (or none that can be read) is someone else's and is left as it was.
    """
    if directory.is_symlink() or not (directory / MANIFEST).is_file():
        return
    try:
        owner = read_manifest(directory).get("sample_id")
    except StoreError as exc:
        raise UsageError(f"{directory}: cannot tell which conversation this store holds ({exc}); it is "
                         f"never replaced, even with --force: move it away or choose another --out") from None
    if owner != sample_id:
        raise UsageError(f"{directory} holds the store of sample_id {owner!r}, not {sample_id!r}; --force "
                         f"replaces a store only with one of the same conversation, so it was left as it "
                         f"was: move it away or choose another --out")


def find_stores(directory: str | Path) -> list[Path]:
    """``directory`` itself when it is a store, else its immediate sub-directories that are."""
    directory = Path(directory)
    if (directory / MANIFEST).is_file():
        return [directory]
    if not directory.is_dir():
        raise StoreError(f"store directory not found: {directory}")
    return sorted(p for p in directory.iterdir() if (p / MANIFEST).is_file())




def check_dim(embedder: Any, manifest: dict[str, Any], directory: str | Path) -> None:
    if int(manifest.get("dim", -1)) != int(embedder.dim):
        raise StoreError(
            f"{directory}: built with {manifest.get('embedder')} (dim {manifest.get('dim')}), "
            f"cannot be queried with {embedder.spec} (dim {embedder.dim})"
        )
