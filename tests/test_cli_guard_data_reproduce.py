"""memaudit reproduce: never over the --locomo input; options named as the user types them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memaudit_fast.errors import UsageError
from memaudit_fast.experiments.reproduce import (
    OUTPUT_NAMES,
    ReproduceConfig,
    Reproduction,
    check_outputs,
    write_outputs,
)
from memaudit_fast.writers.sample import mini_locomo
from oracles.cli_runs import run, snapshot

QUICK = ["reproduce", "--quick", "--no-print", "--quiet", "--seeds", "1", "--distributions", "base"]


# --- the input is never an output ---------------------------------------------------------------


@pytest.mark.parametrize("name", OUTPUT_NAMES)
def test_an_output_that_is_the_locomo_input_is_refused(tmp_path: Path, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rq"
    out.mkdir()
    src = out / name
    src.write_text(json.dumps([mini_locomo()]))
    before = snapshot(tmp_path)
    code, err = run([*QUICK, "--out", str(out), "--locomo", str(src), "--force"], capsys)
    assert code == 2
    assert f"refusing to write over the input {src}" in err
    assert snapshot(tmp_path) == before


def test_a_hard_link_to_the_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "locomo.json"
    src.write_text(json.dumps([mini_locomo()]))
    out = tmp_path / "rq"
    out.mkdir()
    os.link(src, out / "records.jsonl")
    before = snapshot(tmp_path)
    code, err = run([*QUICK, "--out", str(out), "--locomo", str(src), "--force"], capsys)
    assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


def test_write_outputs_refuses_the_runs_own_input(tmp_path: Path) -> None:
    """The Python API follows the same rule: the run's --locomo file is never an output."""
    src = tmp_path / "reproduce.md"
    src.write_text("[]")
    cfg = ReproduceConfig.quick_config(locomo=str(src))
    with pytest.raises(UsageError, match="refusing to write over the input"):
        check_outputs(cfg, tmp_path, overwrite=True)
    with pytest.raises(UsageError, match="refusing to write over the input"):
        write_outputs(Reproduction(cfg, [], [], 0.0), tmp_path, overwrite=True)
    assert src.read_text() == "[]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reproduce.md"]


# --- option messages ----------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "said"), [
    (["--distributions", ""], "--distributions is empty; give one or more of base, update_chain"),
    (["--distributions", "base,nope"], "--distributions: unknown 'nope'; expected some of base"),
    (["--seeds", "0"], "--seeds: expected a number >= 1, got 0"),
    (["--workers", "0"], "--workers: expected a number >= 1, got 0"),
    (["--locomo-limit", "0"], "--locomo-limit: expected a number >= 1, got 0"),
    (["--noise", "2"], "--noise: noise level 2.0: expected a probability in [0, 1]"),
    (["--noise-seed", "-1"], "--noise-seed: expected a number >= 0, got -1"),
    (["--time-limit", "-1"], "--time-limit: expected a number of seconds >= 0"),
    (["--time-limit", "nan"], "--time-limit: expected a number of seconds >= 0"),
    (["--locomo-time-limit", "-2"], "--locomo-time-limit: expected a number of seconds >= 0"),
])
def test_a_bad_option_is_named_with_its_dashes(tmp_path: Path, options: list[str], said: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rq"
    code, err = run(["reproduce", "--quick", "--no-print", "--quiet", "--out", str(out), *options], capsys)
    assert code == 2
    assert said in err
    assert "unknown []" not in err
    assert not out.exists()


@pytest.mark.parametrize(("overrides", "said"), [
    ({"seeds": 0}, "seeds: expected"),
    ({"distributions": ()}, "distributions is empty"),
    ({"noise_levels": (2.0,)}, "noise_levels: noise level 2.0"),
])
def test_the_python_api_names_the_fields(overrides: dict, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        ReproduceConfig.quick_config(**overrides).check()
    assert str(caught.value).startswith(said)
