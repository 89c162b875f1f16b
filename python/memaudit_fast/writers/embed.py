"""Sentence embedders: one small interface, an offline default, a hashing fallback.

Every embedder maps a list of texts to a ``float32`` array of shape ``(n, dim)`` whose rows are
L2-normalised, so that the inner product of two rows is their cosine similarity. An empty text
(nothing to embed) maps to the zero vector, whose similarity to anything is 0.

Choices, by name (see :func:`get_embedder`):

``wordllama`` (the default when installed)
    WordLlama ``l2_supercat`` at 256 dimensions: a static token-embedding table distilled from
    an LLM's input embeddings, average-pooled. No torch; about 10,000 sentences a second on one
    core; the weights (16 MB) and its tokenizer ship inside the pip package. It is loaded with
    downloads disabled and the package directory as cache, so it never reaches a model hub.
``hashing`` or ``hashing:DIM``
    Dependency-free feature hashing of words, word bigrams and character trigrams (signed
    buckets, sublinear term frequency). It is **not semantic**: it matches shared words and
    spellings, not meaning. It exists so that everything runs with numpy alone.
``st:MODEL`` (or ``sentence-transformers:MODEL``)
    Any sentence-transformers model by name or local path, for users who have that package and
    the model (it is not a dependency here, and may download from a hub).
``auto``
    ``wordllama`` when importable, else ``hashing``. Stores record the embedder actually used
    (:attr:`Embedder.spec`), so that a store is always queried with the embedder that built it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import UsageError, missing
from .text import words

DEFAULT_EMBEDDER = "auto"


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    #: The name that rebuilds this embedder with :func:`get_embedder`.
    spec: str
    dim: int
    #: False for embedders that only see surface forms (the hashing fallback).
    semantic: bool

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, dtype float32, rows of norm 1 or 0."""
        ...


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Scale each row to unit L2 norm; all-zero rows stay zero (no NaN, no warning)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


class HashingEmbedder:
    """Feature-hashing embedder: words, word bigrams and character trigrams, signed buckets.

    For a text with features ``f`` (counts ``c_f``), coordinate ``j`` is
    ``sum_{f : h(f) = j} s(f) (1 + log c_f) w_f`` where ``h`` and the sign ``s`` come from a
    BLAKE2b digest of the feature (stable across processes, unlike Python's ``hash``), and
    ``w_f`` weighs words 1, bigrams 0.5 and trigrams 0.25. The row is then L2-normalised.

    Not semantic: "doctor" and "physician" share nothing here.
    """

    semantic = False

    def __init__(self, dim: int = 1024) -> None:
        if dim < 8:
            raise UsageError(f"hashing embedder dimension must be at least 8, got {dim}")
        self.dim = dim
        self.spec = f"hashing:{dim}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def _features(self, text: str) -> dict[str, float]:
        tokens = words(text)
        counts: dict[str, float] = {}
        for tok in tokens:
            counts["w:" + tok] = counts.get("w:" + tok, 0.0) + 1.0
        for a, b in pairwise(tokens):
            key = f"b:{a} {b}"
            counts[key] = counts.get(key, 0.0) + 1.0
        for tok in tokens:
            padded = f"<{tok}>"
            for i in range(len(padded) - 2):
                key = "c:" + padded[i : i + 3]
                counts[key] = counts.get(key, 0.0) + 1.0
        weight = {"w": 1.0, "b": 0.5, "c": 0.25}
        return {f: (1.0 + np.log(c)) * weight[f[0]] for f, c in counts.items()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, value in self._features(text).items():
                j, sign = self._bucket(feature)
                out[row, j] += sign * value
        return normalise_rows(out)


def _import_wordllama() -> Any:
    """Import WordLlama without letting it reconfigure the root logger.

    Its ``__init__`` calls ``logging.basicConfig(level=INFO)``, which would make every library's
    INFO messages appear in the caller's output; the root logger is put back as it was.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError:
        raise missing("wordllama", "The default embedder") from None
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return wordllama


class WordLlamaEmbedder:
    """WordLlama (``l2_supercat``), loaded from the files inside its pip package, never a hub.

    WordLlama looks for weights in ``<package>/weights`` but for its tokenizer in
    ``<cache_dir>/tokenizers``; the tokenizer ships in ``<package>/tokenizers``, hence the package
    directory is passed as the cache and downloads are disabled.
    """

    semantic = True

    def __init__(self, dim: int = 256, batch_size: int = 256) -> None:
        wordllama = _import_wordllama()
        from pathlib import Path

        package_dir = Path(wordllama.__file__).resolve().parent
        try:
            self._model = wordllama.WordLlama.load(
                config="l2_supercat", dim=dim, cache_dir=package_dir, disable_download=True
            )
        except (FileNotFoundError, ValueError) as exc:
            raise UsageError(f"cannot load WordLlama offline at dim={dim}: {exc}") from None
        self.dim = dim
        self.batch_size = batch_size
        self.spec = "wordllama" if dim == 256 else f"wordllama:{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Normalise here rather than in WordLlama: its own division turns empty texts into NaN.
        raw = self._model.embed(texts, norm=False, batch_size=self.batch_size)
        return normalise_rows(np.asarray(raw, dtype=np.float32))


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, by hub name or local path (optional, user-provided)."""

    semantic = True

    def __init__(self, model_name: str, batch_size: int = 64) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise missing("sentence-transformers", f"The embedder 'st:{model_name}'") from None
        self._model = SentenceTransformer(model_name)
        dim = self._model.get_sentence_embedding_dimension()
        if dim is None:
            raise UsageError(f"sentence-transformers model {model_name!r} reports no dimension")
        self.dim = int(dim)
        self.batch_size = batch_size
        self.spec = f"st:{model_name}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self._model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True,
            normalize_embeddings=False, show_progress_bar=False,
        )
        return normalise_rows(np.asarray(raw, dtype=np.float32))


def wordllama_available() -> bool:
    try:
        return importlib.util.find_spec("wordllama") is not None
    except (ImportError, ValueError):
        return False


def get_embedder(spec: str | Embedder | None = None) -> Embedder:
    """Build an embedder from its name (see the module docstring); pass instances through.

    Raises
    ------
    DependencyMissing
        When the named embedder's package is not installed.
    UsageError
        For an unknown name or a bad dimension.
    """
    if spec is not None and not isinstance(spec, str):
        return spec
    name = check_embedder_name(spec)
    if name == "auto":
        name = "wordllama" if wordllama_available() else "hashing"
    head, _, arg = name.partition(":")
    if head == "hashing":
        return HashingEmbedder(int(arg) if arg else 1024)
    if head == "wordllama":
        return WordLlamaEmbedder(int(arg) if arg else 256)
    if head in ("st", "sentence-transformers"):
        if not arg:
            raise UsageError("name the model: st:MODEL (e.g. st:all-MiniLM-L6-v2)")
        return SentenceTransformerEmbedder(arg)
    raise AssertionError(name)  # check_embedder_name let it through


def check_embedder_name(spec: str | None) -> str:
    """The embedder name ``spec`` stands for, checked without building it (UsageError for an
    unknown name or a bad dimension), so that a run is refused before it starts."""
    name = (spec or DEFAULT_EMBEDDER).strip()
    head, _, arg = name.partition(":")
    if head in ("hashing", "wordllama") and arg and not (arg.isdigit() and int(arg) > 0):
        raise UsageError(f"embedder {name!r}: the dimension must be a whole number > 0, e.g. {head}:256")
    if head in ("st", "sentence-transformers") and not arg:
        raise UsageError("name the model: st:MODEL (e.g. st:all-MiniLM-L6-v2)")
    if name != "auto" and head not in ("hashing", "wordllama", "st", "sentence-transformers"):
        raise UsageError(f"unknown embedder {name!r}; use auto, wordllama, wordllama:DIM, hashing, hashing:DIM "
                         "or st:MODEL")
    return name
