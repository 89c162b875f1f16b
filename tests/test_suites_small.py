"""MEMAUDIT-Small: cost models, validity, determinism, scaling and each stress signature."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import iter_packages
from memaudit_fast.suites.costs import (
    budgets_from_fractions,
    byte_cost,
    cost_of,
    token_cost,
    word_cost,
)
from memaudit_fast.suites.small import (
    DISTRIBUTIONS,
    KNOBS,
    REPRESENTATIONS,
    UNIT_KINDS,
    generate_package,
    generate_set,
)

SEEDS = range(6)


def units_by_id(p: dict) -> dict[str, dict]:
    return {u["unit_id"]: u for u in p["units"]}


def slots(p: dict) -> list[dict]:
    return p["meta"]["event_graph"]["slots"]


def covering(p: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for c in p["candidates"]:
        for u in c["coverage"]:
            out[u].append(c)
    return out


def mean_over_seeds(distribution: str, stat) -> float:
    return statistics.mean(stat(generate_package(distribution, s)) for s in range(10))


# --- cost models ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 1), ("   ", 1), ("Ana", 1), ("Ana lives in  Lisbon\tnow.", 5), ("¬Ana.city:Porto", 1)],
)
def test_word_cost(text, expected):
    assert word_cost(text) == expected
    assert cost_of(text, "words") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 8), ("a", 9), ("a" * 24, 9), ("a" * 25, 10), ("é" * 12, 9), ("é" * 13, 10)],
)
def test_byte_cost_is_overhead_plus_utf8_bytes_over_24(text, expected):
    assert byte_cost(text) == expected
    assert cost_of(text, "bytes") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 1),
        ("Ana.city: Lisbon", 5),  # Ana . city : Lisbon
        ("20230508", 3),  # 202 305 08
        ("internationalization", 2),  # letter runs are cut every 10 letters
        ("¬Ana.city:Porto", 6),
        ("it's 7 pm", 5),  # it ' s 7 pm
    ],
)
def test_token_cost(text, expected):
    assert token_cost(text) == expected
    assert cost_of(text, "tokens") == expected


def test_unknown_cost_model_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown cost model"):
        cost_of("x", "characters")


def test_budget_fractions_floor_and_reject_bad_values():
    assert budgets_from_fractions([0.3, 0.5, 0.05], 10) == [3, 5, 0]
    with pytest.raises(UsageError):
        budgets_from_fractions([-0.1], 10)


# --- every package is valid and follows the documented construction -------------------------


def test_distributions_are_the_eight_stress_families():
    assert set(DISTRIBUTIONS) == {
        "base", "update_chain", "temporal_interval", "density_trap", "scope_shift",
        "summary_tradeoff", "redundancy_heavy", "abstention_hard",
    }
    assert set(KNOBS) == set(DISTRIBUTIONS)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_every_distribution_yields_valid_packages(distribution):
    for seed in SEEDS:
        p = generate_package(distribution, seed)
        pkg = Package.from_dict(p)
        assert pkg.weights_rule == "explicit"
        assert p["budgets"] == [2, 4, 8, 16]
        units = units_by_id(p)
        assert {u["kind"] for u in p["units"]} <= set(UNIT_KINDS)
        assert all(u["weight"] > 0 for u in p["units"])
        covered = covering(p)
        assert set(covered) == set(units), "every unit is covered by some candidate, and only units"
        for c in p["candidates"]:
            assert c["representation"] in REPRESENTATIONS
            assert c["group"] == c["experience_id"]
            assert c["candidate_id"] == f"{c['experience_id']}:{c['representation']}"
            assert c["cost"] == word_cost(c["text"])
            assert set(c["coverage"].values()) <= {0.25, 0.5, 0.75, 1.0}
        for q in p["queries"]:
            assert all(u in units for u in q["required_unit_ids"])


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_only_updates_and_tombstones_cover_invalidations(distribution):
    for seed in SEEDS:
        p = generate_package(distribution, seed)
        units = units_by_id(p)
        invalidations = {u for u, unit in units.items() if unit["kind"] == "invalidation"}
        covered = covering(p)
        for u in invalidations:
            assert {c["representation"] for c in covered[u]} <= {"update", "tombstone"}
            assert any(c["representation"] == "tombstone" and c["coverage"][u] == 1.0
                       for c in covered[u])
        # One invalidation unit per change of value in the hidden graph.
        changes = sum(len(s["values"]) - 1 for s in slots(p))
        assert len(invalidations) == changes


def test_base_has_every_unit_kind_and_query_category():
    kinds, categories = set(), set()
    for seed in range(10):
        p = generate_package("base", seed)
        kinds |= {u["kind"] for u in p["units"]}
        categories |= {q["category"] for q in p["queries"]}
    assert kinds == set(UNIT_KINDS)
    assert categories == {"current_value", "history", "interval", "abstention"}


def test_costs_sit_in_the_paper_ranges_under_words():
    by_rep = defaultdict(list)
    for seed in range(10):
        for c in generate_package("base", seed)["candidates"]:
            by_rep[c["representation"]].append(c["cost"])
    assert set(by_rep["tombstone"]) == {1}
    assert set(by_rep["update"]) == {3}
    assert 1 <= min(by_rep["fact"]) and max(by_rep["fact"]) <= 3
    assert 3 <= min(by_rep["raw_span"]) and max(by_rep["raw_span"]) <= 8


# --- determinism --------------------------------------------------------------------------


def digest(p: dict) -> str:
    return hashlib.sha256(json.dumps(p, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_same_arguments_same_package_different_seeds_differ(distribution):
    a = generate_package(distribution, 11)
    assert generate_package(distribution, 11) == a
    others = [generate_package(distribution, s) for s in (12, 13)]
    assert all(o["candidates"] != a["candidates"] for o in others)
    assert len({o["package_id"] for o in others} | {a["package_id"]}) == 3


def test_package_does_not_depend_on_python_hash_seed():
    code = (
        "import hashlib, json; from memaudit_fast.suites.small import generate_package; "
        "print(hashlib.sha256(json.dumps(generate_package('scope_shift', 3, scale=2), "
        "sort_keys=True).encode()).hexdigest())"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == digest(generate_package("scope_shift", 3, scale=2))


def test_cost_model_changes_costs_not_structure():
    words = generate_package("base", 4)
    for model in ("bytes", "tokens"):
        other = generate_package("base", 4, cost_model=model)
        assert other["cost_model"] == model
        assert other["package_id"] != words["package_id"]
        assert other["units"] == words["units"]
        strip = [{k: v for k, v in c.items() if k != "cost"} for c in other["candidates"]]
        assert strip == [{k: v for k, v in c.items() if k != "cost"} for c in words["candidates"]]
        assert all(c["cost"] == cost_of(c["text"], model) for c in other["candidates"])
        cheapest = min(c["cost"] for c in other["candidates"])
        assert other["budgets"][0] >= cheapest
        assert other["budgets"] == sorted(other["budgets"])


# --- budgets ----------------------------------------------------------------------------------


def test_budget_options():
    p = generate_package("base", 2, budgets=[3, 7.5])
    assert p["budgets"] == [3, 7.5]
    p = generate_package("base", 2, budget_fracs=[0.1, 0.25])
    total = sum(c["cost"] for c in p["candidates"])
    assert p["budgets"] == [int(0.1 * total), int(0.25 * total)]
    with pytest.raises(UsageError, match="not both"):
        generate_package("base", 2, budgets=[2], budget_fracs=[0.1])
    with pytest.raises(UsageError):
        generate_package("base", 2, budgets=[-1])


@pytest.mark.parametrize(
    ("args", "match"),
    [(("nope", 0), "unknown distribution"), (("base", -1), "seed"), (("base", 1.5), "seed")],
)
def test_bad_arguments_are_usage_errors(args, match):
    with pytest.raises(UsageError, match=match):
        generate_package(*args)
    with pytest.raises(UsageError, match="scale"):
        generate_package("base", 0, scale=0)


# --- scale --------------------------------------------------------------------------------


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_scale_grows_packages(distribution):
    sizes = [generate_package(distribution, 5, scale=k) for k in (1, 4, 16)]
    for key in ("experiences", "units", "candidates"):
        counts = [len(p[key]) for p in sizes]
        assert counts[0] < counts[1] < counts[2], key
    small = statistics.mean(len(generate_package(distribution, s)["candidates"]) for s in range(10))
    assert 20 <= small <= 65


def test_scale_100_gives_a_few_thousand_candidates():
    p = generate_package("base", 0, scale=100)
    Package.from_dict(p)
    assert 1000 <= len(p["candidates"]) <= 10000
    assert p["package_id"] == "small/base/s0000/x100"


# --- stress signatures --------------------------------------------------------------------


def chain_lengths(p: dict) -> list[int]:
    return [len(s["values"]) - 1 for s in slots(p)]


def test_update_chain_has_long_chains():
    for seed in SEEDS:
        p = generate_package("update_chain", seed)
        assert min(chain_lengths(p)) >= 3
        tombstones = [c for c in p["candidates"] if c["representation"] == "tombstone"]
        assert len(tombstones) == sum(chain_lengths(p))
    assert (mean_over_seeds("update_chain", lambda p: statistics.mean(chain_lengths(p)))
            > 2 * mean_over_seeds("base", lambda p: statistics.mean(chain_lengths(p))))


def test_temporal_interval_needs_both_endpoints_of_an_interval():
    p = generate_package("temporal_interval", 1)
    units = units_by_id(p)
    stale = [u for u in units.values() if u["kind"] == "stale_or_superseded"]
    assert stale and min(u["weight"] for u in stale) >= 1.0
    base_stale = [u["weight"] for s in SEEDS for u in generate_package("base", s)["units"]
                  if u["kind"] == "stale_or_superseded"]
    assert max(base_stale) < 0.5
    covered = covering(p)
    for unit in stale:
        by_rep = defaultdict(float)
        for c in covered[unit["unit_id"]]:
            by_rep[c["representation"]] = max(by_rep[c["representation"]],
                                              c["coverage"][unit["unit_id"]])
        assert by_rep["fact"] == 0.5 and by_rep["tombstone"] == 0.5
        assert all(v <= 0.5 for v in by_rep.values())
    assert any(q["category"] == "interval" for q in p["queries"])
    facts = [c["text"] for c in p["candidates"] if c["representation"] == "fact"]
    assert all("@t" in text for text in facts if "?" not in text)


def density_order(p: dict) -> list[list[dict]]:
    times = {e["experience_id"]: e["timestamp"] for e in p["experiences"]}
    groups = defaultdict(list)
    for c in p["candidates"]:
        groups[c["group"]].append(c)
    return [groups[g] for g in sorted(groups, key=lambda g: (times[g], g))]


def best_density(p: dict, group: list[dict]) -> dict:
    weight = {u["unit_id"]: u["weight"] for u in p["units"]}

    def value(c: dict) -> float:
        return sum(weight[u] * min(1.0, a) for u, a in c["coverage"].items())

    return max(group, key=lambda c: value(c) / c["cost"]), value


def test_density_trap_opens_with_cheap_low_value_candidates():
    for seed in SEEDS:
        p = generate_package("density_trap", seed)
        lures = KNOBS["density_trap"]["lures"]
        heavy = min(u["weight"] for u in p["units"]
                    if u["kind"] in ("current_truth", "invalidation"))
        for group in density_order(p)[:lures]:
            best, value = best_density(p, group)
            # The densest candidate of each early experience costs 1 and is worth little.
            assert best["cost"] == 1 and best["representation"] == "fact"
            assert value(best) <= heavy / 2
    # base does not open that way.
    p = generate_package("base", 0)
    best, _ = best_density(p, density_order(p)[0])
    assert best["cost"] > 1


def test_scope_shift_scopes_values_and_blurs_them():
    p = generate_package("scope_shift", 2)
    scoped = [s for s in slots(p) if s["scope"]]
    assert scoped == slots(p)
    per_pair = defaultdict(set)
    for s in scoped:
        per_pair[(s["entity"], s["attribute"])].add(s["scope"])
    assert all(len(scopes) == KNOBS["scope_shift"]["scopes"] for scopes in per_pair.values())
    blind = sum(1 for seed in SEEDS for c in generate_package("scope_shift", seed)["candidates"]
                if c["representation"] == "fact" and "@" not in c["text"].split(":")[0])
    assert blind > 0
    misreads = [c for seed in SEEDS for c in generate_package("scope_shift", seed)["candidates"]
                if "misreads" in c]
    assert misreads and all(c["coverage"] == {} for c in misreads
                            if c["representation"] == "tombstone")


def summary_breadth(p: dict) -> float:
    return statistics.mean(len(c["coverage"]) for c in p["candidates"]
                           if c["representation"] == "summary")


def test_summary_tradeoff_summaries_recap_more():
    base = mean_over_seeds("base", summary_breadth)
    assert mean_over_seeds("summary_tradeoff", summary_breadth) > 1.5 * base
    # Earlier experiences are recapped at 0.75 too (base: 0.5).
    p = generate_package("summary_tradeoff", 0)
    assert any(sum(v == 0.75 for v in c["coverage"].values()) >= 3
               for c in p["candidates"] if c["representation"] == "summary")
    assert all(sum(v == 0.75 for v in c["coverage"].values()) <= 1
               for c in generate_package("base", 0)["candidates"]
               if c["representation"] == "summary")


def redundancy(p: dict) -> float:
    covered = covering(p)
    fact_units = [u["unit_id"] for u in p["units"]
                  if u["kind"] in ("current_truth", "stale_or_superseded")]
    return statistics.mean(len(covered[u]) for u in fact_units)


def test_redundancy_heavy_repeats_the_same_units():
    base = mean_over_seeds("base", redundancy)
    assert mean_over_seeds("redundancy_heavy", redundancy) > 1.5 * base


def abstention_share(p: dict) -> float:
    total = sum(u["weight"] for u in p["units"])
    return sum(u["weight"] for u in p["units"] if u["kind"] == "abstention") / total


def test_abstention_hard_puts_weight_on_abstention():
    hard = mean_over_seeds("abstention_hard", abstention_share)
    assert hard >= 0.2
    assert hard > 2 * mean_over_seeds("base", abstention_share)
    p = generate_package("abstention_hard", 0)
    units = units_by_id(p)
    for c in p["candidates"]:
        for u, v in c["coverage"].items():
            if units[u]["kind"] == "abstention" and c["representation"] == "fact":
                assert v <= 0.25  # tentative facts keep little of "never settled"
    never_said = [q for q in p["queries"]
                  if q["category"] == "abstention" and not q["required_unit_ids"]]
    assert len(never_said) == KNOBS["abstention_hard"]["never_said"]


# --- sets and the CLI ---------------------------------------------------------------------


def test_generate_set_all_is_distribution_major():
    packages = list(generate_set("all", [3, 4]))
    expected = [d for d in DISTRIBUTIONS for _ in (3, 4)]
    assert [p["meta"]["distribution"] for p in packages] == expected
    assert len({p["package_id"] for p in packages}) == len(packages)
    assert packages[1] == generate_package(DISTRIBUTIONS[0], 4)
    with pytest.raises(UsageError):
        list(generate_set("nope", [0]))


def test_cli_generate_writes_sets_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "set.jsonl"
    argv = ["generate", "--distribution", "update_chain", "--seed", "7", "--count", "3",
            "--out", str(out)]
    assert main(argv) == 0
    got = [p.data for p in iter_packages([out])]
    assert got == [generate_package("update_chain", s) for s in (7, 8, 9)]
    before = out.read_bytes()
    assert main(argv[:-4] + ["--seed", "1", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert main(argv + ["--force", "--budgets", "3,5"]) == 0
    assert [p.data["budgets"] for p in iter_packages([out])] == [[3, 5]] * 3


def test_cli_generate_single_file_and_usage_errors(tmp_path):
    one = tmp_path / "one.json"
    assert main(["generate", "--distribution", "base", "--seed", "2", "--scale", "2",
                 "--cost-model", "bytes", "--out", str(one)]) == 0
    assert json.loads(one.read_text()) == generate_package("base", 2, scale=2, cost_model="bytes")
    assert main(["generate", "--distribution", "all", "--seed", "0", "--out",
                 str(tmp_path / "all.json")]) == 2
    assert main(["generate", "--distribution", "base", "--seed", "0", "--count", "2", "--out",
                 str(tmp_path / "two.json")]) == 2
    assert main(["generate", "--distribution", "base", "--seed", "0", "--budgets", "2",
                 "--budget-fracs", "0.1", "--out", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "all.json").exists() and not (tmp_path / "two.json").exists()
