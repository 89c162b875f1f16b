"""The union package: a package's candidates plus the memories of one or more systems.

Scoring an external store against ``OPT`` of the package alone would be unfair both ways:
the system's memories are not among the package's candidates, so it may hold value the
package cannot express, and it may miss value the package can. MEMAUDIT scores it against
``OPT(union)``: the package's candidates plus each exported memory as a candidate of **its own
one-member group** (``group = candidate_id``; an import whose memory would take the name
of a group the package already has is refused, as a candidate-id clash is), costed by the package's cost model, with coverage
from the arbiter against the package's units, and the same units and weights.

The union is an ordinary ``memaudit.package/1`` file. A system's memories are marked by
``representation: "system:<name>"`` and ``system: "<name>"``, and carry ``memory_id``,
``memory_kind``, ``memory_status``, ``memory_time``, ``recency_rank`` (0 = oldest) and
``salience``. ``meta.systems[<name>]`` records the import (source, counts, store cost, cost
model, arbiter configuration and calibration); ``meta.union`` names the base package. Imports
accumulate: importing into a union adds another system beside those already there.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError
from ..model.jsonio import describe, is_number
from ..model.package import Package
from .arbiter import (
    DEFAULT_TOP_K,
    TOP_K_CHOICES,
    Arbiter,
    ArbiterCache,
    EmbeddingJudge,
    Thresholds,
    calibrate,
    embedder_choice,
)
from .records import SystemExport

SYSTEM_PREFIX = "system:"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def check_union(data: dict[str, Any], source: str | None = None) -> None:
    """What a union package must hold for its systems to be scored (PackageError naming the
    field otherwise): ``meta.systems`` an object of systems, each an object whose
    ``memories`` counts its candidates; every system candidate of a listed system, with a
    number ``recency_rank`` and, when given, a number ``salience``; ``meta.union`` an object."""
    meta = data.get("meta")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise PackageError(f"found {describe(meta)}, expected an object", field="meta", source=source)
    systems = meta.get("systems", {})
    if not isinstance(systems, dict):
        raise PackageError(f"found {describe(systems)}, expected an object of imported systems (name: block); "
                           "import stores with 'memaudit import'", field="meta.systems", source=source)
    if "union" in meta and not isinstance(meta["union"], dict):
        raise PackageError(f"found {describe(meta['union'])}, expected an object", field="meta.union", source=source)
    counts = dict.fromkeys(systems, 0)
    for i, cand in enumerate(data.get("candidates") or []):
        if not (isinstance(cand, dict) and is_system_candidate(cand)):
            continue
        where = f"candidates[{i}]"
        name = cand["system"]
        if not isinstance(name, str) or name not in systems:
            raise PackageError(f"system {name!r} is not in meta.systems ({', '.join(map(repr, systems)) or 'none'})",
                               record=where, field="system", source=source)
        counts[name] += 1
        for key, required in (("recency_rank", True), ("salience", False)):
            value = cand.get(key)
            if (value is None and not required) or is_number(value):
                continue
            raise PackageError(f"found {describe(value)}, expected a number", record=where, field=key, source=source)
    for name, block in systems.items():
        if not isinstance(block, dict):
            raise PackageError(f"found {describe(block)}, expected an object", field=f"meta.systems.{name}",
                               source=source)
        stated = block.get("memories")
        if stated is not None and stated != counts[name]:
            raise PackageError(f"says {stated!r} memories, but the union holds {counts[name]} candidates of "
                               f"system {name!r}", field=f"meta.systems.{name}.memories", source=source)


def candidate_groups(pkg: Package) -> list[str]:
    """Each candidate's group key, as the validator resolves it (``group``, else
    ``experience_id``, else a group of its own)."""
    from ..model.package import OWN_GROUP

    if len(pkg.candidate_groups) == len(pkg.candidates):
        return list(pkg.candidate_groups)
    out = []
    for cand in pkg.candidates:
        if "group" in cand:
            out.append(str(cand["group"]))
        elif cand.get("experience_id") is not None:
            out.append(str(cand["experience_id"]))
        else:
            out.append(OWN_GROUP + str(cand.get("candidate_id")))
    return out


def check_own_groups(pkg: Package) -> None:
    """Every system memory is alone in its group (PackageError naming the candidate and field
    ``group`` otherwise). The full, recency- and salience-pruned stores take memories without
    regard to groups, so a shared group would let them score above OPT(union) and above the
    exact ceiling, which respects groups."""
    groups = candidate_groups(pkg)
    members: dict[str, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    for i, cand in enumerate(pkg.candidates):
        if not (isinstance(cand, dict) and is_system_candidate(cand)):
            continue
        shared = [j for j in members[groups[i]] if j != i]
        if shared:
            other = pkg.candidates[shared[0]].get("candidate_id")
            raise PackageError(
                f"found group {cand.get('group', groups[i])!r}, shared with candidate {other!r}"
                f"{f' and {len(shared) - 1} more' if len(shared) > 1 else ''}; expected a group of its "
                "own (each system memory is a one-member group)",
                record=f"candidates[{i}] ({cand.get('candidate_id')!r})", field="group", source=pkg.source,
            )


def is_system_candidate(cand: dict[str, Any]) -> bool:
    return str(cand.get("representation", "")).startswith(SYSTEM_PREFIX) and "system" in cand


def system_names(data: dict[str, Any]) -> list[str]:
    """Systems in a union package, in import order."""
    return list(((data.get("meta") or {}).get("systems") or {}).keys())


def system_candidates(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [c for c in data["candidates"] if is_system_candidate(c) and c["system"] == name]


def _without_candidates(data: dict[str, Any], keep: Any) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k != "candidates"}
    out["candidates"] = [c for c in data["candidates"] if keep(c)]
    return out


def base_package(data: dict[str, Any]) -> dict[str, Any]:
    """The package without any system's memories (its own candidates only)."""
    out = _without_candidates(data, lambda c: not is_system_candidate(c))
    meta = dict(out.get("meta") or {})
    union = meta.pop("union", None)
    meta.pop("systems", None)
    out["meta"] = meta
    if union and union.get("base_package_id"):
        out["package_id"] = union["base_package_id"]
    return out


def system_package(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The sub-package of one system's memories (same units, weights and objective)."""
    out = _without_candidates(data, lambda c: is_system_candidate(c) and c["system"] == name)
    out["package_id"] = f"{data['package_id']}/{name}"
    return out


def check_system_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(f"system name {name!r}: use letters, digits, '_', '.', '-' (starting with a letter or digit)")
    return name


def embedding_arbiter(
    package: Package | dict[str, Any],
    *,
    embedder: Any = "auto",
    top_k: int | None = None,
    thresholds: tuple[float, float] | None = None,
    cache: str | Path | ArbiterCache | None = None,
) -> Arbiter:
    """The offline arbiter for a package: embedding judge calibrated on its own candidates.

    ``thresholds = (t_full, t_partial)`` skips calibration; ``top_k`` fixes the neighbours
    per sentence (default: calibrated among 1, 2, 3). Candidates of systems already in a
    union are left out of the calibration. ``embedder="auto"`` is ``wordllama`` when installed,
    else ``hashing``. With ``embedder="best"`` every offline embedder (``hashing``, and
    ``wordllama`` when installed) is calibrated and the one whose judge best reproduces the
    package's own annotations (partial F1, then full F1) is kept; the others' F1 are recorded.
    On the LoCoMo natural packages that is the hashing embedder in all 7 conversations in
    ``../shared``: the writers' memories and LoCoMo's observations reuse the dialogue's own
    words, which surface features match well. How the embedder was chosen is recorded as
    ``embedder_choice`` in the calibration.
    """
    from ..writers.embed import get_embedder

    data = package.data if isinstance(package, Package) else package
    names, choice = embedder_choice(embedder)
    if thresholds is not None:
        if len(names) > 1:
            raise UsageError("embedder 'best' compares calibrated judges; with given thresholds name the embedder")
        emb = get_embedder(names[0])
        full, partial = thresholds
        k = top_k or DEFAULT_TOP_K
        stats = {"embedder": emb.spec, "top_k": k, **({"embedder_choice": choice} if choice else {})}
        fitted = Thresholds(float(full), float(partial), "given", stats, k)
    else:
        exclude = [c["candidate_id"] for c in data["candidates"] if is_system_candidate(c)]
        fits = []
        for spec in names:
            emb_k = get_embedder(spec)
            top_ks = (top_k,) if top_k else TOP_K_CHOICES
            fits.append((emb_k, calibrate(data, emb_k, top_ks=top_ks, exclude=exclude)))
        emb, fitted = max(fits, key=lambda f: _calibration_quality(f[1]))
        if choice:
            compared = {"compared": {e.spec: t.stats.get("partial_f1") for e, t in fits}} if len(fits) > 1 else {}
            fitted = Thresholds(fitted.full, fitted.partial, fitted.method,
                                {**fitted.stats, "embedder_choice": choice, **compared}, fitted.top_k)
    store = cache if isinstance(cache, ArbiterCache) or cache is None else ArbiterCache(cache)
    return Arbiter(EmbeddingJudge(emb, fitted), store)


def _calibration_quality(t: Thresholds) -> tuple[int, float, float]:
    return (t.method == "calibrated", t.stats.get("partial_f1", 0.0), t.stats.get("full_f1", 0.0))


def _cost_function(data: dict[str, Any], cost_model: str | None) -> tuple[str, Any]:
    from ..suites.costs import COST_MODELS

    name = cost_model or data.get("cost_model") or "words"
    if name not in COST_MODELS:
        raise UsageError(
            f"the package's cost model {name!r} is not one this version computes "
            f"({', '.join(COST_MODELS)}); pass cost_model= (--cost-model) to choose one"
        )
    return name, COST_MODELS[name]


def build_union(
    package: Package | dict[str, Any] | str | Path,
    export: SystemExport,
    arbiter: Arbiter,
    *,
    name: str | None = None,
    cost_model: str | None = None,
    replace: bool = False,
) -> Package:
    """Add a system's exported memories to a package (or a union) and return the union.

    Parameters
    ----------
    package:
        The base package, or a union built earlier (imports accumulate).
    export:
        What an importer read.
    arbiter:
        Decides coverage rows and saliences.
    name:
        The system's name in the union (default: the importer's, e.g. ``mem0``); two stores
        of the same system need two names.
    cost_model:
        Overrides the package's ``cost_model`` (``words``, ``bytes`` or ``tokens``).
    replace:
        Replace a system of the same name already in the union (else that is an error).

    Each memory becomes the candidate ``<name>:<memory_id>`` in the one-member group of the
    same name. When the package already holds that candidate id, or a group of that name
    (which the memory would join), the import is refused (PackageError naming the memory).
    """
    from ..model.compiled import as_package

    base = as_package(package)
    check_union(base.data, base.source)
    data = copy.deepcopy(base.data)
    name = check_system_name(name or export.system)
    meta = data.setdefault("meta", {})
    if not isinstance(meta, dict):
        raise PackageError("meta must be an object to hold the systems", field="meta", source=base.source)
    systems = meta.setdefault("systems", {})
    if name in systems:
        check_name_free(data, name, replace)
        data["candidates"] = [c for c in data["candidates"] if not (is_system_candidate(c) and c["system"] == name)]
        del systems[name]
    _check_conversation(meta, systems, export, base.source)
    check_new_ids(data, export, name)
    cost_name, cost_of = _cost_function(data, cost_model)

    units = [(u["unit_id"], str(u.get("text") or "")) for u in data["units"]]
    texts = [m.text for m in export.memories]
    rows = arbiter.coverage(texts, units)
    queries = [str(q.get("text") or "") for q in data.get("queries") or []]
    salience = arbiter.salience(texts, queries) if texts else None

    order = sorted(range(len(export.memories)), key=lambda i: (
        export.memories[i].time_key if export.memories[i].time_key is not None else float("-inf"),
        export.memories[i].position,
    ))
    rank = {i: r for r, i in enumerate(order)}
    added = []
    for i, (memory, row) in enumerate(zip(export.memories, rows)):
        cid = f"{name}:{memory.memory_id}"
        cand: dict[str, Any] = {
            "candidate_id": cid, "group": cid, "representation": f"{SYSTEM_PREFIX}{name}",
            "text": memory.text, "cost": cost_of(memory.text), "coverage": row,
            "system": name, "memory_id": memory.memory_id, "memory_kind": memory.kind,
            "memory_status": memory.status, "memory_time": memory.time, "recency_rank": rank[i],
        }
        if salience is not None:
            cand["salience"] = round(float(salience[i]), 6)
        if memory.source_turns:
            cand["source_turns"] = list(memory.source_turns)
        if memory.extra:
            cand["memory_extra"] = memory.extra
        added.append(cand)
    data["candidates"].extend(added)

    judge = arbiter.judge
    covered = {u for c in added for u in c["coverage"]}
    systems[name] = {
        "importer": export.system,
        "source": export.source,
        "memories": len(added),
        "by_status": export.by_status(),
        "store_cost": float(sum(c["cost"] for c in added)),
        "cost_model": cost_name,
        "units_covered": len(covered),
        "arbiter": {
            **{k: v for k, v in judge.config().items() if k != "units"},
            **({"calibration": judge.thresholds.to_json()} if hasattr(judge, "thresholds") else {}),
            "cache_hits": arbiter.hits, "cache_misses": arbiter.misses,
        },
        "salience": ("max cosine to the package's questions" if judge.config().get("judge") == "embedding"
                     else "rated by the LLM judge") if salience is not None else None,
        "recency": "memory time, then export position; memories without a time count as oldest",
        "details": export.details,
    }
    if "union" not in meta:
        meta["union"] = {"base_package_id": base.package_id, "base_candidates": len(base.candidates)}
        data["package_id"] = f"{base.package_id}+systems"
    return Package.from_dict(data, source=None)


def check_name_free(data: dict[str, Any], name: str, replace: bool) -> None:
    """A system name the union already holds is taken again only with ``replace``."""
    meta = data.get("meta")
    systems = meta.get("systems") if isinstance(meta, dict) else None
    if isinstance(systems, dict) and name in systems and not replace:
        raise UsageError(f"the union already holds a system named {name!r}; pass replace (--replace) or another name")


def check_new_ids(data: dict[str, Any], export: SystemExport, name: str,
                  replacing: str | None = None) -> None:
    """Each memory's candidate id ``<name>:<memory_id>``, also its one-member group, is new to
    the package (``replacing``: a system whose candidates the import takes away first):
    PackageError naming the memory otherwise."""
    kept = [c for c in data.get("candidates") or []
            if not (replacing is not None and is_system_candidate(c) and c["system"] == replacing)]
    taken = {c.get("candidate_id") for c in kept}
    groups = {str(c["group"]) if "group" in c else str(c["experience_id"])
              for c in kept if "group" in c or c.get("experience_id") is not None}
    for memory in export.memories:
        cid = f"{name}:{memory.memory_id}"
        if cid in taken:
            raise PackageError(
                f"candidate id {cid!r} already exists in the package; import under another name",
                record=f"memory {memory.memory_id!r}", field="memory_id", source=export.source,
            )
        if cid in groups:
            raise PackageError(
                f"group {cid!r} already exists in the package (a memory must be a one-member group); "
                "import under another name",
                record=f"memory {memory.memory_id!r}", field="memory_id", source=export.source,
            )
        taken.add(cid)
        groups.add(cid)


def check_conversation(package: Any, export: SystemExport, *, replacing: str | None = None) -> None:
    """A store written for one LoCoMo conversation (its manifest's ``sample_id``) is refused in
    the union of another: the package's ``meta.sample_id``, else a system already imported
    (other than ``replacing``, the system the import replaces). :func:`build_union` checks it;
    ``memaudit import`` checks it first too, before the arbiter is set up. Here (not in
    :func:`build_union`, which takes any export read through the API) a Membox or ENGRAM
    export read without its manifest is refused when the package names a conversation."""
    from ..model.compiled import as_package

    base = as_package(package)
    meta = base.data.get("meta")
    if isinstance(meta, dict):
        systems = meta.get("systems")
        systems = {n: b for n, b in systems.items() if n != replacing} if isinstance(systems, dict) else {}
        _check_manifest_present(meta, systems, export, base.source)
        _check_conversation(meta, systems, export, base.source)


def _check_conversation(meta: dict[str, Any], systems: dict[str, Any], export: SystemExport,
                        package_source: str | None) -> None:
    store_id = export.details.get("sample_id")
    if store_id is None:
        return
    where = export.details.get("manifest") or export.source
    named = [("the package", meta.get("sample_id"))]
    named += [(f"system {n!r} of this union", (b.get("details") or {}).get("sample_id"))
              for n, b in systems.items() if isinstance(b, dict) and isinstance(b.get("details"), dict)]
    for owner, other in named:
        if other is not None and other != store_id:
            package = f" ({package_source})" if package_source and owner == "the package" else ""
            raise PackageError(
                f"this store was written for LoCoMo conversation {store_id!r}, but {owner}{package} is "
                f"conversation {other!r}; import the store written for {other!r} (memaudit write ... "
                f"--sample-id {other}), or import this one into the package of {store_id!r}",
                field="sample_id", source=str(where),
            )


def _check_manifest_present(meta: dict[str, Any], systems: dict[str, Any], export: SystemExport,
                            package_source: str | None) -> None:
    """A writer's export read without its store manifest says no conversation; into a package
    (or union) that names one it is refused: scored against another conversation's package,
    the store would look like poor extraction, and nothing could tell."""
    if export.system not in ("membox", "engram") or "manifest" in export.details:
        return
    named = [("the package", meta.get("sample_id"))]
    named += [(f"system {n!r} of this union", (b.get("details") or {}).get("sample_id"))
              for n, b in systems.items() if isinstance(b, dict) and isinstance(b.get("details"), dict)]
    for owner, other in named:
        if other is not None:
            package = f" ({package_source})" if package_source and owner == "the package" else ""
            raise PackageError(
                f"no store manifest (manifest.json) beside this file, so nothing says which LoCoMo conversation "
                f"it holds, while {owner}{package} is conversation {other!r}: import the store directory "
                "'memaudit write' wrote, or keep this file beside its manifest",
                source=export.source,
            )


def union_systems(data: dict[str, Any], names: Sequence[str] | None) -> list[str]:
    """The requested systems of a union (all by default), checked to exist."""
    known = system_names(data)
    if not known:
        raise UsageError("this package holds no imported system; run 'memaudit import' first")
    if not names:
        return known
    missing = [n for n in names if n not in known]
    if missing:
        raise UsageError(f"no system {missing[0]!r} in this union; it holds {', '.join(known)}")
    return list(names)
