"""Per-query natural packages from LoCoMo (the paper's Natural-87 protocol).

The conversation package of :func:`memaudit_fast.suites.locomo.locomo_package` is cut into
**one package per question with evidence**:

- **Experiences**: every turn of the sessions that hold the question's evidence, in
  conversation order, plus ``context`` neighbouring turns on each side of every block of
  consecutive kept turns (turns of the adjacent sessions, as distractors).
- **Evidence units**: the question's evidence turns only (``ev:<dia_id>``), weight 1 each
  (the query-demand rule for a single question).
- **Candidates**: those of the conversation package that belong to a kept turn: its raw
  span, the observations placed at it (an observation citing several turns sits at the
  latest) and the session / event summaries attached to it (a session's last turn). Their
  coverage keeps only this question's units; groups, costs and texts are unchanged.
- **Queries**: the question itself. **Budgets**: 30, 60 and 100 words by default
  (:data:`DEFAULT_QUERY_BUDGETS`), in the cost model's units.
- ``package_id`` = ``locomo-<sample_id>-q<index in qa>``.

Only the public reader of :mod:`memaudit_fast.suites.locomo` is used, so the per-query
packages follow that reader's rules for evidence repair, observations and summary coverage.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .locomo import locomo_package, read_locomo

DEFAULT_QUERY_BUDGETS: tuple[float, ...] = (30.0, 60.0, 100.0)


def _kept_turns(experiences: list[dict[str, Any]], evidence: set[str], context: int) -> list[int]:
    """Indices of the turns of the evidence sessions, widened by ``context`` on each side."""
    sessions = {e["session_id"] for e in experiences if e["experience_id"] in evidence}
    core = [i for i, e in enumerate(experiences) if e["session_id"] in sessions]
    in_core = set(core)
    kept = set(core)
    for i in core:
        if i - 1 not in in_core:  # a block starts here
            kept.update(range(max(0, i - context), i))
        if i + 1 not in in_core:  # a block ends here
            kept.update(range(i + 1, min(len(experiences), i + 1 + context)))
    return sorted(kept)


def query_package(
    conversation: dict[str, Any], query: dict[str, Any], *, budgets: Sequence[float], context: int = 0
) -> dict[str, Any]:
    """The package of one question, cut from its conversation's package (see the module)."""
    sample_id = conversation["meta"]["sample_id"]
    units_by_id = {u["unit_id"]: u for u in conversation["units"]}
    required = list(query["required_unit_ids"])
    evidence = {u.removeprefix("ev:") for u in required}
    experiences = conversation["experiences"]
    kept_index = _kept_turns(experiences, evidence, context)
    kept = [experiences[i] for i in kept_index]
    kept_ids = {e["experience_id"] for e in kept}
    wanted = set(required)
    candidates = []
    for cand in conversation["candidates"]:
        if cand["experience_id"] not in kept_ids:
            continue
        cut = dict(cand)
        cut["coverage"] = {u: a for u, a in cand["coverage"].items() if u in wanted}
        candidates.append(cut)
    units = [{"unit_id": u, "kind": "evidence", "text": units_by_id[u]["text"], "weight": 1.0}
             for u in required]
    sessions = sorted({e["session_id"] for e in experiences if e["experience_id"] in evidence},
                      key=lambda s: int(s.rsplit("_", 1)[-1]) if s.rsplit("_", 1)[-1].isdigit() else 0)
    index = query["query_id"].removeprefix("q")
    meta = conversation["meta"]
    return {
        "format": conversation["format"],
        "package_id": f"locomo-{sample_id}-q{index}",
        "objective": {"saturation": "cap1"},
        "budgets": [float(b) for b in budgets],
        "cost_model": conversation.get("cost_model", "words"),
        "experiences": kept,
        "units": units,
        "candidates": candidates,
        "queries": [dict(query)],
        "meta": {
            "suite": "locomo-per-query",
            "sample_id": sample_id,
            "query_id": query["query_id"],
            "question": query["text"],
            "category": query.get("category"),
            "source": meta.get("source"),
            "speakers": meta.get("speakers"),
            "evidence_sessions": sessions,
            "context": context,
            "cut_rule": "the turns of the sessions holding the question's evidence, plus "
                        f"{context} neighbouring turns each side of every kept block; candidates "
                        "of kept turns, coverage of this question's evidence units only",
            "weights_rule": "explicit: 1 per evidence turn of the question",
            "budget_rule": "absolute budgets as given",
            "group_rule": meta.get("group_rule"),
            "coverage_rule": meta.get("coverage_rule"),
            "repaired": [r for r in meta.get("repaired", []) if r.get("item") == f"qa[{index}]"],
        },
    }


def locomo_query_packages(
    path: str | Path,
    *,
    cost_model: str = "words",
    budgets: Sequence[float] | None = None,
    context: int = 0,
    categories: Iterable[int | str] | None = None,
) -> Iterator[dict[str, Any]]:
    """One package per question with evidence, conversation by conversation, in file order."""
    if type(context) is not int or context < 0:
        raise UsageError(f"--context must be an integer >= 0, got {context!r}")
    chosen = list(DEFAULT_QUERY_BUDGETS if budgets is None else budgets)
    if not chosen:
        raise UsageError("budgets: give at least one budget")
    for i, record in enumerate(read_locomo(path)):
        conversation = locomo_package(record, cost_model=cost_model, budgets=chosen,
                                      categories=categories, source=f"{path}[{i}]")
        for query in conversation["queries"]:
            yield query_package(conversation, query, budgets=conversation["budgets"], context=context)


def cli_query_packages(args: Any) -> int:
    """``memaudit natural locomo --per-query``: write the per-query packages of a file."""
    from ..model.jsonio import dumps
    from ..model.package import Package
    from .natural_out import check_out, file_names, write_packages

    if args.budget_fracs:
        raise UsageError("--per-query takes absolute --budgets (default 30,60,100 words), "
                         "not --budget-fracs")
    out, source = Path(args.out), Path(args.path)
    if args.out != "-":
        check_out(out, source=source, force=args.force)  # before the work, not after
    packages = [Package.from_dict(p) for p in locomo_query_packages(
        args.path, cost_model=args.cost_model, budgets=args.budgets, context=args.context,
        categories=args.categories)]
    if args.out == "-":  # a JSONL set on stdout, as without --per-query
        for pkg in packages:
            sys.stdout.write(dumps(pkg.data, indent=None) + "\n")
        sys.stdout.flush()
    else:
        names = file_names([p.package_id for p in packages], label="package_id")
        write_packages(packages, out, names, source=source, force=args.force)
    samples = {p.data["meta"]["sample_id"] for p in packages}
    print(f"wrote {len(packages)} per-query packages from {len(samples)} conversations to {out}"
          f" (context {args.context}, budgets {packages[0].budgets if packages else []})",
          file=sys.stderr if args.out == "-" else sys.stdout)
    return 0
