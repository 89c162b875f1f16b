"""The arbiter: coverage rows ``a[m, r]`` for exported memories, from a pluggable judge.

An external system's memory ``m`` has no annotated coverage; the arbiter decides, for each
evidence unit ``r`` of the package, ``a[m, r] = 1`` (the memory states the unit), ``0.5``
(it states part of it) or ``0``. Two judges:

:class:`EmbeddingJudge` (offline default) -- an **approximation**
    A memory is split into sentences (a sentence states one thing; a Membox box holds many).
    Sentences and units are embedded (the writers' embedder, rows L2-normalised) and each
    sentence's ``top_k`` nearest units are found with FAISS (inner product = cosine). The
    score of ``(m, r)`` is the best cosine of a sentence of ``m`` that has ``r`` among its
    ``top_k``; it gives ``1`` when ``>= t_full``, ``0.5`` when ``>= t_partial``, else ``0``.
    So a memory is credited with at most ``top_k`` units per sentence, and one generic
    sentence cannot claim every unit that shares its words. Similarity is not entailment:
    a memory that *contradicts* a unit in the same words scores high.
:class:`LLMJudge`
    An OpenAI-compatible chat model (the writers' :class:`OpenAIChatLLM`) reads each memory
    with its ``top_k`` nearest units (FAISS on the whole memory) and answers which units the
    memory states fully or partly. Units outside the prefilter get ``0``.

Calibration (:func:`calibrate`). The package's own candidates carry annotated coverage, so
they are labelled examples of the judge's task: every (candidate, unit) pair is labelled
*full* (``a >= 0.75``), *partial* (``0 < a < 0.75``) or *none*. Exported memories are
rewritten text, so the calibration uses the candidates that are rewritten too (every
representation but the raw ones: ``raw``, ``raw_span``, ``turn``) unless they hold fewer than
``min_positives`` positive pairs, in which case all candidates are used; pairs in which the
candidate's text is the unit's text verbatim are always left out (they teach nothing about
paraphrase). With the candidates scored exactly as memories are, ``t_partial`` is the cosine
cut that maximises F1 of "covers at least partly" over all labelled pairs (positives the
search never reaches count as misses), ``t_full >= t_partial`` the cut that maximises F1 of
"covers fully", and ``top_k`` the value in (1, 2, 3) with the best partial F1. With fewer than
``min_positives`` positive pairs the embedder family's defaults are used, and the result
says so. On the 7 LoCoMo natural packages in ``../shared`` this gives partial F1 0.50-0.60
with the hashing embedder and 0.34-0.57 with WordLlama, ``top_k`` 1 throughout (whole-memory
matching with eight neighbours: 0.41-0.52 and 0.24-0.44; raw turns in the calibration
population halve it again).

Salience (for the salience-pruned store, no gold labels): the embedding judge rates a memory
by its largest cosine to the package's *questions* (their text only, never answers or
evidence), clipped to [0, 1]; the LLM judge asks the model how useful the memory is likely to
be later, on a 0-1 scale, without showing it any question.

Every decision is cached on disk (:class:`ArbiterCache`, SQLite), keyed by hashes of the
memory text, the unit text and the judge's configuration, so re-importing is free and
reproducible.
"""

from __future__ import annotations

from .cache import ArbiterCache, config_hash, text_hash
from .calibration import (
    CHOOSING_EMBEDDERS,
    FULL_LABEL,
    RAW_REPRESENTATIONS,
    calibrate,
    embedder_choice,
)
from .core import Arbiter
from .judges import (
    DEFAULT_THRESHOLDS,
    DEFAULT_TOP_K,
    LEVELS,
    TOP_K_CHOICES,
    EmbeddingJudge,
    Judge,
    LLMJudge,
    Thresholds,
    default_thresholds,
    sentence_scores,
    snap,
    split_sentences,
)

__all__ = [
    "CHOOSING_EMBEDDERS", "DEFAULT_THRESHOLDS", "DEFAULT_TOP_K", "FULL_LABEL", "LEVELS", "RAW_REPRESENTATIONS",
    "TOP_K_CHOICES", "Arbiter", "ArbiterCache", "EmbeddingJudge", "Judge", "LLMJudge",
    "Thresholds", "calibrate", "config_hash", "default_thresholds", "embedder_choice", "sentence_scores", "snap",
    "split_sentences", "text_hash",
]
