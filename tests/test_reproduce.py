"""memaudit reproduce: files and sections, exact-OPT ratio bounds, ablation, Kendall tau, noise."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.baselines import run_writer
from memaudit_fast.experiments.reproduce import (
    PARTIAL_LEVEL,
    RANKED_WRITERS,
    RATIO_TOLERANCE,
    ReproduceConfig,
    kendall_tau,
    mapped_budgets,
    max_ratio,
    perturb_annotations,
    render_markdown,
    run_reproduction,
    write_outputs,
)
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package

SECTIONS = (
    "## MEMAUDIT-Small",
    "### Writers as a fraction of OPT (base, words)",
    "### Per distribution (words)",
    "### No-tombstone OPT as a fraction of full OPT",
    "### Rank stability: words vs bytes cost model",
    "### Annotation noise p = 0.1",
    "### Findings, as measured",
    "## Where the figures differ from the paper",
)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick run (every distribution, two seeds) and the files it writes."""
    run = run_reproduction(ReproduceConfig.quick_config(), command="memaudit reproduce --quick")
    out = tmp_path_factory.mktemp("repro")
    paths = write_outputs(run, out)
    return run, out, paths


def all_ratios(record: dict) -> list[float]:
    parts = [record["words"]["ratios"], record["bytes"]["ratios"],
             *(level["ratios"] for level in record["noise"].values())]
    return [v for ratios in parts for vals in ratios.values() for v in vals]


# --- Kendall tau ------------------------------------------------------------------------------


def test_tau_identical_and_reversed():
    scores = [0.9, 0.1, 0.5, 0.7, 0.3]
    assert kendall_tau(scores, scores) == 1.0
    assert kendall_tau(scores, [-s for s in scores]) == -1.0
    assert kendall_tau(scores, sorted(scores, reverse=True)) != 1.0


def test_tau_b_with_ties():
    # No ties in x; one tied pair in y; the other five pairs concordant: 5 / sqrt(6 * 5).
    assert kendall_tau([1, 2, 3, 4], [1, 2, 2, 3]) == pytest.approx(5 / math.sqrt(30))
    # One discordant pair of three: (2 - 1) / 3.
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_tau_undefined_and_bad_input():
    assert kendall_tau([1.0, 1.0, 1.0], [1, 2, 3]) is None
    assert kendall_tau([1.0], [2.0]) is None
    with pytest.raises(UsageError):
        kendall_tau([1, 2], [1, 2, 3])


@settings(max_examples=40)
@given(st.lists(st.integers(-5, 5), min_size=2, max_size=9).flatmap(
    lambda x: st.tuples(st.just(x), st.lists(st.integers(-5, 5), min_size=len(x), max_size=len(x)))))
def test_tau_is_symmetric_and_bounded(pair):
    x, y = pair
    t = kendall_tau(x, y)
    assert t == kendall_tau(y, x)
    if t is not None:
        assert -1.0 - 1e-12 <= t <= 1.0 + 1e-12
        assert kendall_tau(x, [-v for v in y]) == pytest.approx(-t)


# --- annotation noise -------------------------------------------------------------------------


def test_noise_zero_is_identity():
    data = generate_package("temporal_interval", 3)
    assert perturb_annotations(data, 0.0) == data


def test_noise_one_flips_every_label_and_keeps_the_rest():
    data = generate_package("summary_tradeoff", 1)
    noisy = perturb_annotations(data, 1.0)
    Package.from_dict(noisy)  # still a valid package
    for before, after in zip(data["candidates"], noisy["candidates"]):
        assert (before["candidate_id"], before["cost"]) == (after["candidate_id"], after["cost"])
        for unit_id, value in before["coverage"].items():
            if value >= 1:
                assert after["coverage"][unit_id] == PARTIAL_LEVEL
            elif value > 0:
                assert after["coverage"][unit_id] == 1.0
    weights = [(u["weight"], v["weight"]) for u, v in zip(data["units"], noisy["units"])]
    assert any(a != b for a, b in weights) and all(b > 0 for _, b in weights)
    assert perturb_annotations(data, 1.0) == noisy  # deterministic
    assert perturb_annotations(data, 1.0, seed=1) != noisy


def test_noise_rejects_a_bad_probability():
    with pytest.raises(UsageError):
        perturb_annotations(generate_package("base", 0), 1.5)


# --- budgets under the bytes model ------------------------------------------------------------


def test_mapped_budgets_pair_up_with_the_words_budgets():
    data = generate_package("base", 0, cost_model="bytes", budgets=[0])
    mapped = mapped_budgets(data["candidates"], [2, 4, 8, 16])
    cheapest = min(c["cost"] for c in data["candidates"])
    assert len(mapped) == 4 and mapped == sorted(mapped)
    assert all(b >= cheapest and float(b).is_integer() for b in mapped)


# --- the quick run ----------------------------------------------------------------------------


def test_quick_run_writes_every_section(quick):
    run, out, _ = quick
    assert sorted(p.name for p in out.iterdir()) == ["records.jsonl", "reproduce.json", "reproduce.md"]
    md = (out / "reproduce.md").read_text()
    for section in SECTIONS:
        assert section in md, section
    assert md == render_markdown(run)
    doc = json.loads((out / "reproduce.json").read_text())
    assert doc["format"] == "memaudit.reproduce/1"
    small = doc["small"]
    assert set(small["writers"]) == {*DISTRIBUTIONS, "overall"}
    assert small["packages"] == 2 * len(DISTRIBUTIONS)
    for key in ("ablation", "cost_tau", "noise", "invalidation"):
        assert small[key], key
    assert {r["finding"] for r in doc["comparison"]} == {"density_only / OPT", "no-tombstone OPT / OPT"}
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == small["packages"]


def test_existing_outputs_need_overwrite(quick):
    run, out, _ = quick
    with pytest.raises(UsageError):
        write_outputs(run, out)


def test_ratios_lie_in_unit_interval_with_exact_opt(quick):
    run, _, _ = quick
    assert run.summary["small"]["unproven"]["solves"] > 0
    assert all(v == 0 for k, v in run.summary["small"]["unproven"].items() if k != "solves")
    for record in run.small:
        for ratio in all_ratios(record):
            assert ratio is not None and 0.0 <= ratio <= 1.0 + RATIO_TOLERANCE
    assert max_ratio(run.small) <= 1.0 + RATIO_TOLERANCE
    # GVT and greedy reach OPT somewhere, density-only falls short somewhere.
    base = run.summary["small"]["writers"]["overall"]
    assert max(base["gvt"]) == pytest.approx(1.0, abs=0.05)
    assert min(base["density_only"]) < 0.9


def test_ablation_fraction_at_most_one_and_bites(quick):
    run, _, _ = quick
    for record in run.small:
        for f in record["ablation"]["fraction"]:
            assert 0.0 <= f <= 1.0 + RATIO_TOLERANCE
        if record["ablation"]["removed"] == 0:
            assert record["ablation"]["fraction"] == [1.0] * len(record["labels"])
        # A writer without tombstones/updates cannot beat the OPT without them.
        for writer in ("no_tombstone_greedy", "no_tombstone_gvt"):
            for ratio, f in zip(record["words"]["ratios"][writer], record["ablation"]["fraction"]):
                assert ratio <= f + RATIO_TOLERANCE
    # Every update_chain slot changes, so tombstones/updates always carry value there.
    assert max(run.summary["small"]["ablation"]["update_chain"]) < 1.0


def test_record_matches_a_direct_solve_and_writer_run(quick):
    run, _, _ = quick
    record = run.small[0]
    data = generate_package(record["group"], record["seed"], budgets=record["labels"])
    compiled = compile_package(Package.from_dict(data))
    for k, budget in enumerate(record["labels"]):
        opt = solve(compiled, budget)
        assert record["words"]["opt"][k] == pytest.approx(opt.value, abs=1e-12)
        for writer in ("density_only", "gvt"):
            value = run_writer(compiled, budget, writer, opt=opt.value).value
            expected = 1.0 if opt.value <= 1e-12 else value / opt.value
            assert record["words"]["ratios"][writer][k] == pytest.approx(expected, abs=1e-12)


def test_noise_zero_reproduces_the_noiseless_table():
    cfg = ReproduceConfig.quick_config(distributions=("base", "update_chain", "density_trap"),
                                       noise_levels=(0.0, 0.2))
    s = run_reproduction(cfg).summary["small"]
    zero = s["noise"]["0.0"]
    assert zero["writers"] == s["writers"]
    for group, mads in zero["mad"].items():
        assert mads == [0.0] * len(s["labels"]), group
        assert all(t in (1.0, None) for t in zero["tau"][group]), group
    assert any(m > 0 for mads in s["noise"]["0.2"]["mad"].values() for m in mads)


def test_config_rejects_bad_values():
    bad_values: list[dict] = [{"seeds": 0}, {"distributions": ("nope",)}, {"noise_levels": (2.0,)},
                              {"budgets": ()}, {"workers": 0}]
    for bad in bad_values:
        with pytest.raises(UsageError):
            ReproduceConfig(**bad).check()


def test_workers_do_not_change_the_tables():
    cfg = ReproduceConfig.quick_config(distributions=("base", "scope_shift"), seeds=2)
    one = run_reproduction(cfg)
    two = run_reproduction(ReproduceConfig(**{**cfg.__dict__, "workers": 2}))
    assert one.small == two.small


# --- command line -----------------------------------------------------------------------------


def test_cli_quick_run(tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["reproduce", "--out", str(out), "--quick", "--distributions", "base,update_chain",
            "--budgets", "2,6"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "No-tombstone OPT as a fraction of full OPT" in printed
    assert "update_chain 0.513" in printed  # the paper's B = 6 stress figure is shown
    doc = json.loads((out / "reproduce.json").read_text())
    assert doc["small"]["labels"] == [2.0, 6.0]
    assert doc["config"]["seeds"] == 2 and doc["command"].startswith("memaudit reproduce --out")
    assert main(argv) == 2  # existing files are kept without --force
    assert main([*argv, "--force", "--no-print"]) == 0
    assert capsys.readouterr().out == ""


def test_cli_rejects_unknown_distribution(tmp_path):
    assert main(["reproduce", "--out", str(tmp_path), "--quick", "--distributions", "nope"]) == 2


# --- LoCoMo -----------------------------------------------------------------------------------


def test_locomo_section(tmp_path, locomo_path):
    cfg = ReproduceConfig.quick_config(distributions=("base",), seeds=1, locomo=str(locomo_path))
    run = run_reproduction(cfg)
    assert len(run.locomo) == 1
    record = run.locomo[0]
    assert record["ablation"]["removed"] == 0  # no tombstones in natural packages
    for ratio in all_ratios(record):
        assert ratio is not None and 0.0 <= ratio <= 1.0 + RATIO_TOLERANCE
    loc = run.summary["locomo"]
    assert set(loc["writers"]["locomo"]) == set(RANKED_WRITERS)
    md = render_markdown(run)
    assert "## LoCoMo natural packages" in md and "of raw" in md
