"""Hand-made packages and claims shared by several test modules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memaudit_fast.model.package import Package


def claim(pkg: Package, budget: float, value: float, ids, **extra) -> dict:
    return {"format": "memaudit.result/1", "package_id": pkg.package_id, "budget": budget,
            "opt": value, "upper_bound": value, "status": "optimal", "selected": list(ids), **extra}


def small_package(saturation="cap1") -> Package:
    return Package.from_dict({
        "format": "memaudit.package/1", "package_id": "cert/small", "budgets": [3],
        "objective": {"saturation": saturation},
        "units": [{"unit_id": "u", "weight": 2.0}, {"unit_id": "v", "weight": 1.0}, {"unit_id": "z", "weight": 0.0}],
        "candidates": [
            {"candidate_id": "a", "group": "g1", "cost": 2, "coverage": {"u": 1.0, "z": 1.0}},
            {"candidate_id": "b", "group": "g1", "cost": 1, "coverage": {"u": 0.5}},
            {"candidate_id": "c", "group": "g2", "cost": 1, "coverage": {"v": 1.0}},
            {"candidate_id": "d", "group": "g3", "cost": 5, "coverage": {"v": 1.0}},
            {"candidate_id": "e", "group": "g4", "cost": 1, "coverage": {"z": 1.0}},
        ],
    })


def hard_package(n: int = 70, seed: int = 3) -> Package:
    import random

    rng = random.Random(seed)
    units = [{"unit_id": f"u{r}", "weight": float(rng.randint(1, 9))} for r in range(40)]
    cands = [{"candidate_id": f"c{i}", "group": f"g{i // 2}", "cost": rng.randint(3, 17),
              "coverage": {f"u{r}": rng.choice([0.3, 0.5, 0.7, 1.0]) for r in rng.sample(range(40), 4)}}
             for i in range(n)]
    return Package.from_dict({"format": "memaudit.package/1", "package_id": "hard", "units": units, "candidates": cands})


def update_package() -> dict:
    # The old preference, then an update turn whose tombstone / compound update cover the
    # invalidation unit that nothing else covers.
    return {
        "format": "memaudit.package/1", "package_id": "upd", "budgets": [2, 4],
        "experiences": [{"experience_id": "old", "timestamp": 0}, {"experience_id": "new", "timestamp": 1}],
        "units": [{"unit_id": "cur", "weight": 2.0}, {"unit_id": "inv", "weight": 2.0}, {"unit_id": "stale", "weight": 0.1}],
        "candidates": [
            {"candidate_id": "old_fact", "experience_id": "old", "representation": "atomic_fact", "cost": 2, "coverage": {"stale": 1}},
            {"candidate_id": "new_fact", "experience_id": "new", "representation": "atomic_fact", "cost": 2, "coverage": {"cur": 1}},
            {"candidate_id": "new_tomb", "experience_id": "new", "representation": "tombstone", "cost": 1, "coverage": {"inv": 1}},
            {"candidate_id": "new_upd", "experience_id": "new", "representation": "compound_update", "cost": 3, "coverage": {"cur": 1, "inv": 1}},
        ],
    }


def density_trap(m: float) -> dict:
    """Four cheap, nearly worthless turns arrive before one valuable one (every c_u <= B/2).

    Density-only stores each cheap turn as it arrives and has no room left for the valuable
    one: its ratio is 4 / (m + 2), which goes to 0 as m grows. GVT's threshold 1/2 skips
    the cheap turns, so its ratio stays m / (m + 2) >= 1/4.
    """
    cands = [
        {"candidate_id": f"small{i}", "experience_id": f"e{i}", "cost": 1, "coverage": {f"s{i}": 1.0}}
        for i in range(4)
    ] + [{"candidate_id": "big", "experience_id": "e4", "cost": 2, "coverage": {"b": 1.0}}]
    return {
        "format": "memaudit.package/1", "package_id": f"trap/{m}", "budgets": [4],
        "experiences": [{"experience_id": f"e{i}", "timestamp": i} for i in range(5)],
        "units": [{"unit_id": f"s{i}", "weight": 1.0 / m} for i in range(4)] + [{"unit_id": "b", "weight": 1.0}],
        "candidates": cands,
    }


def write_artifact_by_hand(directory: Path) -> None:
    """A package written with the artifact's own field names (as its exporter writes them)."""
    directory.mkdir()
    rows = {
        "experiences.jsonl": [
            {"experience_id": "x:e0", "session_id": "x:synthetic", "timestamp": 0, "text": "Bo moved to Oslo",
             "source_span_ids": ["x:e0:synthetic_span"], "split": "synthetic", "visible_unit_ids": ["current:bo"]},
            {"experience_id": "x:e1", "session_id": "x:synthetic", "timestamp": 1, "text": "Bo left Rome",
             "source_span_ids": ["x:e1:synthetic_span"], "split": "synthetic", "visible_unit_ids": ["invalid:bo"]},
        ],
        "evidence_units.jsonl": [
            {"unit_id": "current:bo", "kind": "current_truth", "canonical_text": "current:bo", "source_spans": [],
             "timestamp": 0, "state": "current", "proposition_id": "current", "annotator_ids": ["synthetic_generator"],
             "adjudication_status": "resolved", "unit_weight": 2.0},
            {"unit_id": "invalid:bo", "kind": "invalidation", "canonical_text": "invalid:bo", "source_spans": [],
             "timestamp": 1, "state": "invalidates_prior", "proposition_id": "invalid", "annotator_ids": ["synthetic_generator"],
             "adjudication_status": "resolved", "unit_weight": 1.0},
        ],
        "queries.jsonl": [
            {"query_id": "x:objective_unit:0000", "question": "Synthetic objective probe for current:bo.",
             "answer": "current:bo", "category": "current_truth", "required_unit_ids": ["current:bo"],
             "answer_session_ids": ["x:e0"], "split": "synthetic", "unit_weight": 2.0},
        ],
        "candidate_memories.jsonl": [
            {"candidate_id": "x:c0", "experience_id": "x:e0", "candidate_group": "x:e0", "representation_type": "fact",
             "text": "Bo lives in Oslo", "serialized": "Bo lives in Oslo", "cost_tokens": 4, "cost": 4,
             "generator_id": "g", "generation_config_hash": "h", "time_index": 0, "confidence": 0.9,
             "estimated_value": None, "estimated_coverage": {}, "estimator_model": None},
            {"candidate_id": "x:c1", "experience_id": "x:e1", "candidate_group": "x:e1", "representation_type": "tombstone",
             "text": "Rome obsolete", "serialized": "Rome obsolete", "cost_tokens": 2,
             "generator_id": "g", "generation_config_hash": "h", "time_index": 1, "confidence": 0.8,
             "estimated_value": 0.5, "estimated_coverage": {"invalid:bo": 1.0}, "estimator_model": "m"},
            {"candidate_id": "x:c2", "experience_id": "x:e1", "candidate_group": "x:e1", "representation_type": "raw_span",
             "text": "Bo left Rome", "serialized": "Bo left Rome", "cost_tokens": 3, "cost": 3,
             "generator_id": "g", "generation_config_hash": "h", "time_index": 1, "confidence": 1.0,
             "estimated_value": None, "estimated_coverage": {}, "estimator_model": None},
        ],
        "coverage_matrix.jsonl": [
            {"candidate_id": "x:c0", "experience_id": "x:e0", "candidate_group": "x:e0", "unit_id": "current:bo",
             "coverage": 1.0, "coverage_label": "full", "rationale": "r", "source_span_ids": ["s"],
             "annotator_ids": ["a"], "adjudication_status": "resolved"},
            {"candidate_id": "x:c1", "experience_id": "x:e1", "candidate_group": "x:e1", "unit_id": "invalid:bo",
             "coverage": 1.0, "coverage_label": "full", "rationale": "r", "source_span_ids": ["s"],
             "annotator_ids": ["a"], "adjudication_status": "resolved"},
            {"candidate_id": "x:c2", "experience_id": "x:e1", "candidate_group": "x:e1", "unit_id": "invalid:bo",
             "coverage": 0.5, "coverage_label": "partial_weak", "rationale": "r", "source_span_ids": ["s"],
             "annotator_ids": ["a"], "adjudication_status": "resolved"},
        ],
        "annotation_decisions.jsonl": [
            {"record_id": "x:synthetic_coverage:000000", "record_type": "coverage_cell", "decision": "accepted",
             "candidate_id": "x:c0", "unit_id": "current:bo"},
        ],
    }
    for name, items in rows.items():
        (directory / name).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in items))
    (directory / "candidate_generation_manifest.json").write_text(
        json.dumps({"instance_id": "x", "schema_version": 1, "counts": {"candidate_memories": 3}}, indent=2))
    (directory / "instance.json").write_text(json.dumps({"instance_id": "x", "unit_weights": {}}))


def strongly_correlated_knapsack(n: int = 300, seed: int = 0) -> dict:
    """Profits = weights + constant: a classic hard case for LP-bounded branch-and-bound."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1000, 10000, size=n)
    return {
        "format": "memaudit.package/1", "package_id": f"hard/{n}/{seed}",
        "units": [{"unit_id": f"u{i}", "weight": float(w[i] + 1000)} for i in range(n)],
        "candidates": [{"candidate_id": f"c{i}", "cost": int(w[i]), "coverage": {f"u{i}": 1.0}} for i in range(n)],
        "budgets": [int(w.sum() // 2)],
    }


def handmade() -> dict:
    return {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Bo",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound named Pixel."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! Where did you find Pixel?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "A rescue shelter in Porto.",
                 "blip_caption": "a photo of a dog"},
            ],
            "session_2_date_time": "9:00 am on 3 May, 2023",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "I started pottery classes."},
            ],
            "session_3_date_time": "10:00 am on 9 May, 2023",
        },
        "qa": [
            {"question": "What dog did Ana adopt?", "answer": "a greyhound", "evidence": ["D1:1"],
             "category": 4},
            {"question": "Where is the shelter?", "answer": "Porto",
             "evidence": ["D1:2; D1:3", "D9:9", "D"], "category": 1},
            {"question": "What class did Bo start?", "answer": "pottery", "evidence": ["D:2:1"],
             "category": 4},
            {"question": "Is Ana happy?", "answer": "yes", "evidence": [], "category": 3},
            {"question": "Did Bo adopt a cat?", "adversarial_answer": "no", "evidence": ["D7:1"],
             "category": 5},
            {"question": "When?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        ],
        "observation": {
            "session_1_observation": {
                "Ana": [["Ana adopted a greyhound named Pixel.", "D1:1"],
                        ["Ana found Pixel at a Porto shelter.", ["D1:3", "D1:2"]],
                        ["Ana likes tea.", "D5:5"], "not a pair"],
            },
        },
        "session_summary": {"session_1_summary": "Ana adopted a greyhound named Pixel from a "
                                                 "rescue shelter in Porto.",
                            "session_3_summary": "No turns."},
        "event_summary": {"events_session_2": {"Ana": [], "Bo": ["Bo starts pottery classes."],
                                               "date": "3 May, 2023"}},
    }


def read_rows(directory: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (directory / name).read_text().splitlines() if line.strip()]


#: Packages a batch solves at once, ahead of the hard ones of :func:`easy_then_hard`.
EASY = 4


def subset_sum(seed: int, n: int = 60) -> dict:
    """A subset-sum knapsack (even costs, odd budget, value = log(2) * cost): the bound never
    meets the incumbent, so its search runs until its limit unless stopped. log1p, so that
    HiGHS never joins it (its MILP is an approximation there): with min(1, z) the race of a
    batch or of solve() proves it within seconds."""
    rng = np.random.default_rng(seed)
    costs = [int(c) for c in 2 * rng.integers(10**6, 10**7, size=n)]
    return {
        "format": "memaudit.package/1", "package_id": f"subset-sum/{seed}",
        "units": [{"unit_id": f"u{i}", "weight": float(c)} for i, c in enumerate(costs)],
        "candidates": [{"candidate_id": f"c{i}", "cost": c, "coverage": {f"u{i}": 1.0}} for i, c in enumerate(costs)],
        "budgets": [sum(costs) // 2 + 1], "objective": {"saturation": "log1p"},
    }


def easy_then_hard(path: Path, hard: int = 2) -> Path:
    """A set of EASY packages at budget 2 and 4, then ``hard`` subset-sum packages at their own
    budget, written to ``path``."""
    from memaudit_fast.model.sets import write_package_set
    from memaudit_fast.suites.small import generate_package

    easy = [dict(generate_package("base", seed=k), budgets=[2, 4]) for k in range(EASY)]
    write_package_set(easy + [subset_sum(k) for k in range(hard)], path)
    return path


def add_experience(candidates: list[dict], group: int, reps: list[tuple[float, dict[int, float]]], limit: int) -> None:
    """Append one experience's representations (cost, coverage by unit number) to ``candidates``
    as candidate dicts of group ``e<group>``, stopping at ``limit`` candidates in all."""
    for cost, coverage in reps[: limit - len(candidates)]:
        candidates.append({
            "candidate_id": f"c{len(candidates)}", "experience_id": f"e{group}", "representation": "fact",
            "cost": cost, "coverage": {f"r{r}": a for r, a in coverage.items()},
        })


def cap1_package(package_id: str, weights: list[float], candidates: list[dict]) -> dict:
    """A min(1, z) package of units ``r<k>`` weighing ``weights[k]`` (its budget a placeholder)."""
    return {
        "format": "memaudit.package/1", "package_id": package_id, "budgets": [1.0], "objective": {"saturation": "cap1"},
        "units": [{"unit_id": f"r{r}", "weight": w} for r, w in enumerate(weights)], "candidates": candidates,
    }


def compiled_at_fraction(data: dict, fraction: float):
    """A package dict compiled, with the budget ``fraction`` of its total candidate cost
    (rounded to a whole number, as the large-budget bench does)."""
    from memaudit_fast.model.compiled import compile_package

    compiled = compile_package(Package.from_dict(data))
    return compiled, float(round(fraction * float(compiled.cost.sum())))


def float_weighted(seed: int) -> dict:
    """A package with weights and coverage drawn as floats of every scale (no lattice of worths),
    groups of one to three and capacity 1 or 2; its budgets are 3%, 10% and 25% of the total cost.
    Seed 42 at 3% (budget 70.167) is where HiGHS at its default tolerance "proved" a store
    1.2e-9 (relative) under OPT."""
    import random

    rng = random.Random(seed)
    n, m = rng.randint(60, 250), rng.randint(20, 80)
    saturation = rng.choice(["cap1", "linear", {"pwl": [[0.3, 0.5], [1, 1], [2, 1.2]]}, "cap1"])
    units = [{"unit_id": f"u{r}", "weight": rng.choice([rng.uniform(0, 1), rng.uniform(0, 1000), rng.randint(1, 5),
                                                         1e-4 * rng.random()])} for r in range(m)]
    candidates = []
    for j in range(n):
        coverage = {f"u{r}": rng.choice([0.25, 0.5, 1.0, rng.random()]) for r in rng.sample(range(m), rng.randint(1, 3))}
        candidates.append({"candidate_id": f"c{j}", "group": f"g{j // rng.choice([1, 2, 3])}",
                           "cost": rng.choice([rng.randint(1, 20), round(rng.uniform(0.1, 20), 3)]), "coverage": coverage})
    capacity = rng.choice([1, 1, 2])
    total = sum(c["cost"] for c in candidates)
    return {"format": "memaudit.package/1", "package_id": f"float/{seed}",
            "objective": {"saturation": saturation, "group_capacity": capacity}, "units": units,
            "candidates": candidates, "budgets": [round(total * f, 3) for f in (0.03, 0.1, 0.25)]}
