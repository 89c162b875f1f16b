"""Public functions given one thing where they take several: one path, one package, one
writer name. Each is read as one (or refused with a message saying what to pass), never
iterated as its characters or keys."""

from __future__ import annotations

import json

import pytest

import memaudit_fast as m
from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.baselines import check_writers


def test_one_writer_name_is_one_writer() -> None:
    package = m.load_package(m.example_package_path())
    budget = float(package.budgets[0])
    assert list(m.run_writers(package, budget, writers="gvt")) == ["gvt"]
    assert list(m.run_writers(package, budget, writers="gvt, greedy")) == ["gvt", "greedy"]
    assert check_writers(("gvt",)) == ["gvt"]
    with pytest.raises(UsageError, match="unknown writer 'gtv'"):
        check_writers("gtv")


def test_batch_options_take_one_writer_name_as_one_writer() -> None:
    from memaudit_fast.experiments.batch import BatchOptions

    assert BatchOptions(writers="gvt").writers == ("gvt",)  # type: ignore[arg-type]
    assert BatchOptions(writers="gvt,greedy").writers == ("gvt", "greedy")  # type: ignore[arg-type]
    assert BatchOptions(writers="gvt").digest == BatchOptions(writers=("gvt",)).digest  # type: ignore[arg-type]


def test_one_package_is_not_written_as_a_set_of_its_keys(tmp_path) -> None:
    package = m.load_package(m.example_package_path())
    out = tmp_path / "set.jsonl"
    for given in (package, json.loads(m.example_package_path().read_text())):
        with pytest.raises(UsageError, match=r"got one package; pass a list"):
            m.write_package_set(given, out)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"got a str; read the packages first"):
        m.write_package_set(str(m.example_package_path()), out)  # type: ignore[arg-type]
    assert not out.exists()
    with pytest.raises(UsageError, match=r"packages\[1\]: expected a package"):
        m.write_package_set([package, "not a package"], out)  # type: ignore[list-item]
    assert not out.exists() and not list(tmp_path.iterdir())  # no temporary file left either
    assert m.write_package_set([package], out) == 1
    assert [p.package_id for p in m.iter_packages(out)] == [package.package_id]
