"""Write-time value estimates for the coverage-blind writers (MISSION.md section 4).

A deployed writer cannot see a candidate's true coverage. ``estimated_greedy`` and
``estimated_gvt`` run the ``greedy`` and ``gvt`` rules on an *estimate problem* ``F~`` and
are scored with the true ``F``. Per candidate ``u`` the estimate is, in this order:

1. its ``estimated_coverage`` ``a~_u``, through the package's own weights and saturation:
   ``F~(S) = sum_r w_r h_r(sum_{u in S} a~_ur) + ...``;
2. else its ``estimated_value`` ``v_u`` as a modular value (a private unit of weight ``v_u``
   and linear saturation, so that ``F~`` adds ``v_u`` whenever u is stored);
3. else the value an estimator predicts, modular in the same way:

   - :class:`RidgeEstimator` (``memaudit train-estimator``): a ridge regression from
     features visible at write time (:func:`visible_features`) to the true singleton value
     ``F({u})``, fitted on *other* packages; it refuses a package it was trained on;
   - :class:`EmbeddingEstimator` (``--estimator embed``): the similarity of a candidate to the
     stream's salient content through an offline embedder, labelled ``embedding``.

Costs, groups and arrival order are the package's own: only the gains differ.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .. import _core
from ..errors import PackageError, UsageError
from ..model.compiled import CompiledPackage
from ..model.estimates import candidate_estimates
from ..model.jsonio import loads_strict, read_text
from ..model.package import Package, SaturationSpec

MODEL_FORMAT = "memaudit.estimator/1"
TARGET = "true singleton value F({u}) of the training packages"

# Cue-word families a writer can read in a candidate's text (lower-cased whole words).
CUE_WORDS: dict[str, frozenset[str]] = {
    "change": frozenset("now changed change moved switched became new instead updated update anymore".split()),
    "negation": frozenset("not no never longer stopped quit cancelled canceled wrong obsolete invalid".split()),
    "time": frozenset("yesterday today tomorrow week month year ago since until last next recently".split()),
    "preference": frozenset("like likes love loves prefer prefers favorite favourite hate enjoy enjoys".split()),
    "plan": frozenset("plan plans planning going will goal decided want wants hope".split()),
    "self": frozenset("i my me mine i'm".split()),
}
_WORD = re.compile(r"[a-z0-9']+")
BASE_FEATURES = ("cost", "log_cost", "inv_cost", "position", "log_words", "has_number",
                 "capitalised", "confidence", "has_confidence")


def candidate_text(cand: dict[str, Any]) -> str:
    """The text a writer reads: ``text``, else the artifact's ``serialized``."""
    for key in ("text", "serialized"):
        if isinstance(cand.get(key), str):
            return str(cand[key])
    return ""


def feature_names(representations: Sequence[str]) -> list[str]:
    return [*BASE_FEATURES, *(f"cue:{k}" for k in CUE_WORDS),
            *(f"rep:{r}" for r in representations), "rep:other"]


def visible_features(package: Package, representations: Sequence[str]) -> np.ndarray:
    """Rows of write-time-visible features, one per candidate (see :func:`feature_names`).

    Position is the candidate's arrival time ranked among the package's distinct times and
    scaled to [0, 1]; confidence is the candidate's ``confidence`` when it is a number.
    """
    cands = package.candidates
    times = sorted(set(package.candidate_times))
    rank = {t: (k / (len(times) - 1) if len(times) > 1 else 0.5) for k, t in enumerate(times)}
    rep_index = {r: k for k, r in enumerate(representations)}
    n_base, n_cue = len(BASE_FEATURES), len(CUE_WORDS)
    x = np.zeros((len(cands), n_base + n_cue + len(representations) + 1))
    for i, cand in enumerate(cands):
        text = candidate_text(cand)
        words = _WORD.findall(text.lower())
        cost = float(cand["cost"])
        conf = cand.get("confidence")
        has_conf = isinstance(conf, (int, float)) and not isinstance(conf, bool) and math.isfinite(conf)
        x[i, :n_base] = (
            cost, math.log1p(cost), 1.0 / max(cost, 1.0), rank[package.candidate_times[i]],
            math.log1p(len(words)), float(any(ch.isdigit() for ch in text)),
            float(sum(1 for w in text.split()[1:] if w[:1].isupper())) / max(1, len(words)),
            float(conf) if has_conf else 0.0, float(has_conf),  # type: ignore[arg-type]
        )
        wordset = set(words)
        for k, cues in enumerate(CUE_WORDS.values()):
            x[i, n_base + k] = len(wordset & cues)
        rep = str(cand.get("representation", ""))
        x[i, n_base + n_cue + rep_index.get(rep, len(representations))] = 1.0
    return x


def package_digest(package: Package) -> str:
    """sha256 of the package's content (canonical JSON), to recognise it whatever its file."""
    text = json.dumps(package.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def singleton_values(compiled: CompiledPackage) -> np.ndarray:
    """The true ``F({u})`` of every candidate: the regression target."""
    return np.array([compiled.objective([i]) for i in range(compiled.num_candidates)], dtype=np.float64)


class Estimator(Protocol):
    """Predicts a modular write-time value per candidate of a package."""

    label: str

    def predict(self, package: Package) -> np.ndarray: ...

    def describe(self, package: Package) -> dict[str, Any]: ...


@dataclass
class RidgeEstimator:
    """A fitted ridge regression over :func:`visible_features` (see ``memaudit train-estimator``)."""

    representations: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    alpha: float
    train: dict[str, Any]
    test: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    split: dict[str, Any] | None = None  # how train-estimator split its packages
    label: str = "ridge"

    def predict(self, package: Package) -> np.ndarray:
        self.check_not_trained_on(package)
        return self.raw_predict(package)

    def raw_predict(self, package: Package) -> np.ndarray:
        x = (visible_features(package, self.representations) - self.mean) / self.scale
        return np.maximum(0.0, x @ self.coef + self.intercept)

    def check_not_trained_on(self, package: Package) -> None:
        if package.package_id in set(self.train.get("packages", [])) or \
                package_digest(package) in set(self.train.get("digests", [])):
            raise PackageError(
                f"the estimator {self.source or ''} was trained on this package; an estimated writer "
                "must never be scored on its own training data: train it on other packages "
                "(memaudit train-estimator ... --exclude, or a disjoint set)",
                package_id=package.package_id,
            )

    def describe(self, package: Package) -> dict[str, Any]:
        return {
            "estimator": "ridge", "model": self.source, "alpha": self.alpha, "target": TARGET,
            "train": {"packages": len(self.train.get("packages", [])),
                      "candidates": self.train.get("candidates"), "sets": self.train.get("sets")},
            "test": {"package": package.package_id, "in_training_set": False,
                     "held_out_r2": self.test.get("r2")},
            "split": self.split,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT, "kind": "ridge", "target": TARGET, "alpha": self.alpha,
            "features": feature_names(self.representations), "representations": self.representations,
            "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(),
            "intercept": self.intercept, "train": self.train, "test": self.test,
            **({"split": self.split} if self.split is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any, source: str | None = None) -> RidgeEstimator:
        def bad(what: str) -> PackageError:
            return PackageError(f"{what}; expected a model written by memaudit train-estimator",
                                source=source)

        if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT or data.get("kind") != "ridge":
            raise bad(f"not a {MODEL_FORMAT} ridge model")
        try:
            reps = [str(r) for r in data["representations"]]
            width = len(feature_names(reps))
            arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
            intercept, alpha = float(data["intercept"]), float(data["alpha"])
            train, test = dict(data["train"]), dict(data.get("test") or {})
            split = dict(data["split"]) if isinstance(data.get("split"), dict) else None
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"missing or malformed field ({exc})") from None
        if any(a.shape != (width,) or not np.all(np.isfinite(a)) for a in arrays) or not math.isfinite(intercept):
            raise bad(f"mean, scale and coef must be {width} finite numbers each")
        if np.any(arrays[1] <= 0):
            raise bad("scale must be positive")
        return cls(reps, arrays[0], arrays[1], arrays[2], intercept, alpha, train, test, source, split)


def fit_ridge(
    train: Sequence[Package], *, alpha: float = 1.0, test: Sequence[Package] = (), sets: Sequence[str] = ()
) -> RidgeEstimator:
    """Fit the ridge estimator on ``train``; report its fit on the held-out ``test`` packages.

    ``alpha = 0`` is ordinary least squares (the minimum-norm solution when features are
    constant or collinear).
    """
    if not train:
        raise UsageError("no training packages: give a set with at least one package")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise UsageError(f"--alpha must be finite and >= 0, got {alpha}")
    from ..model.compiled import compile_package

    reps = sorted({str(c.get("representation", "")) for p in train for c in p.candidates})
    xs = [visible_features(p, reps) for p in train]
    ys = [singleton_values(compile_package(p)) for p in train]
    x, y = np.vstack(xs), np.concatenate(ys)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    y_mean = float(y.mean())
    if alpha > 0:
        coef = np.linalg.solve(z.T @ z + alpha * np.eye(z.shape[1]), z.T @ (y - y_mean))
    else:
        # No penalty: ordinary least squares. Constant or collinear features make z^T z
        # singular, so take the minimum-norm solution, the limit of the ridge fit as alpha -> 0.
        coef = np.linalg.lstsq(z, y - y_mean, rcond=None)[0]
    model = RidgeEstimator(
        reps, mean, scale, coef, y_mean, float(alpha),
        train={"packages": [p.package_id for p in train], "digests": [package_digest(p) for p in train],
               "candidates": int(y.size), "sets": list(sets), "r2": _r2(y, np.maximum(0, z @ coef + y_mean))},
    )
    train_ids = set(model.train["packages"])
    leaked = [p.package_id for p in test if p.package_id in train_ids]
    if leaked:
        raise UsageError(f"test packages also in training: {', '.join(leaked[:5])}")
    if test:
        ty = np.concatenate([singleton_values(compile_package(p)) for p in test])
        tp = np.concatenate([model.raw_predict(p) for p in test])
        model.test = {"packages": [p.package_id for p in test], "candidates": int(ty.size), "r2": _r2(ty, tp)}
    return model


def _r2(y: np.ndarray, pred: np.ndarray) -> float | None:
    total = float(np.sum((y - y.mean()) ** 2))
    return None if total == 0 else 1.0 - float(np.sum((y - pred) ** 2)) / total


@dataclass
class EmbeddingEstimator:
    """Similarity of a candidate to the stream's salient content (natural packages).

    Each experience ``e`` gets a salience ``s_e`` = its mean cosine similarity to the other
    experiences (clipped at 0): content the conversation keeps returning to. A candidate's
    value is ``sum_e s_e max(0, cos(u, e))^2 / sum_e s_e``. Texts go through an offline
    embedder (:func:`memaudit_fast.writers.embed.get_embedder`, ``hashing`` by default).
    """

    embedder: str = "hashing"
    label: str = "embedding"

    def predict(self, package: Package) -> np.ndarray:
        from ..writers.embed import get_embedder, normalise_rows

        texts = [str(e.get("text", "")) for e in package.experiences if str(e.get("text", "")).strip()]
        if not texts:
            raise PackageError("the embedding estimator needs experiences with text (natural packages)",
                               package_id=package.package_id, field="experiences")
        enc = get_embedder(self.embedder)
        exp = normalise_rows(np.asarray(enc.encode(texts), dtype=np.float64))
        cand = normalise_rows(np.asarray(enc.encode([candidate_text(c) for c in package.candidates]),
                                         dtype=np.float64))
        sim = exp @ exp.T
        n = len(texts)
        salience = np.clip((sim.sum(axis=1) - np.diag(sim)) / max(1, n - 1), 0.0, None) if n > 1 else np.ones(1)
        if salience.sum() <= 0:
            salience = np.ones(n)
        s = np.clip(cand @ exp.T, 0.0, None) ** 2
        return np.asarray(s @ salience / salience.sum(), dtype=np.float64)

    def describe(self, package: Package) -> dict[str, Any]:
        return {"estimator": "embedding", "embedder": self.embedder,
                "rule": "salience-weighted squared cosine to the stream's experiences",
                "trained": False, "test": {"package": package.package_id}}


def load_estimator(spec: str | Estimator | None) -> Estimator | None:
    """``None``, ``embed`` / ``embed:EMBEDDER``, or the path of a ridge model JSON."""
    if spec is None or not isinstance(spec, str):
        return spec
    if spec == "embed" or spec.startswith("embed:"):
        from ..writers.embed import check_embedder_name

        name = spec.partition(":")[2] or "hashing"
        try:
            check_embedder_name(name)  # before any work: a run with it would fail every package
        except UsageError as exc:
            raise UsageError(f"--estimator {spec!r}: {exc}") from None
        return EmbeddingEstimator(name)
    path = Path(spec)
    if not path.is_file():
        raise UsageError(f"--estimator {spec!r}: no such file; give a model from memaudit train-estimator, or embed")
    return RidgeEstimator.from_json(loads_strict(read_text(path), source=spec), source=spec)


@dataclass(frozen=True)
class EstimateProblem:
    """The core problem whose F is the estimate ``F~``, and where each estimate came from."""

    problem: Any  # _core.Problem
    sources: dict[str, int]
    info: dict[str, Any]


def estimate_problem(compiled: CompiledPackage, estimator: Estimator | None = None) -> EstimateProblem:
    """Build ``F~`` for ``compiled`` (see the module docstring)."""
    pkg = compiled.package
    est = candidate_estimates(pkg.candidates)
    unit_index = {u: r for r, u in enumerate(compiled.unit_ids)}
    missing = [i for i, e in enumerate(est) if e.coverage is None and e.value is None]
    predicted = None
    if missing:
        if estimator is None:
            raise PackageError(
                f"candidate {compiled.candidate_ids[missing[0]]!r} (and {len(missing) - 1} more) has no "
                "estimated_value or estimated_coverage; give --estimator MODEL.json (from memaudit "
                "train-estimator) or --estimator embed",
                package_id=compiled.package_id, field="estimated_value",
            )
        predicted = estimator.predict(pkg)
    sats = list(compiled.saturations)
    linear = SaturationSpec("linear")
    if linear not in sats:
        sats.append(linear)
    linear_index = sats.index(linear)
    weight = list(map(float, compiled.weight))
    saturation_of = list(map(int, compiled.saturation_of))
    indptr, indices, values = [0], [], []
    sources = {"estimated_coverage": 0, "estimated_value": 0, "estimator": 0}
    for i, e in enumerate(est):
        if e.coverage is not None:
            for unit_id, amount in e.coverage.items():
                indices.append(unit_index[unit_id])
                values.append(amount)
            sources["estimated_coverage"] += 1
        else:
            value = e.value if e.value is not None else float(predicted[i])  # type: ignore[index]
            sources["estimated_value" if e.value is not None else "estimator"] += 1
            if value > 0:
                indices.append(len(weight))  # a private unit
                weight.append(value)
                saturation_of.append(linear_index)
                values.append(1.0)
        indptr.append(len(indices))
    problem = _core.Problem(
        compiled.cost, compiled.group_of, len(compiled.group_ids),
        np.array(weight, dtype=np.float64), np.array(indptr, dtype=np.int64),
        np.array(indices, dtype=np.int32), np.array(values, dtype=np.float64),
        np.array(saturation_of, dtype=np.int32),
        [_core.SaturationKind.__members__[s.name] for s in sats],
        [np.array([p[0] for p in s.points], dtype=np.float64) for s in sats],
        [np.array([p[1] for p in s.points], dtype=np.float64) for s in sats],
    )
    info: dict[str, Any] = {"sources": {k: v for k, v in sources.items() if v}}
    if predicted is not None and estimator is not None:
        info.update(estimator.describe(pkg))
    return EstimateProblem(problem, sources, info)
