"""Pisinger's 0-1 knapsack instances: an external check with optima computed elsewhere.

A 0-1 knapsack is the package where every item is its own group covering its own unit with
coverage 1: weight = profit, cost = item weight, budget = capacity; OPT must equal z.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from memaudit_fast import _core

FILES = [
    "hardinstances_pisinger_knapPI_11_20_1000.csv",
    "smallcoeff_pisinger_knapPI_1_50_1000.csv",
    "smallcoeff_pisinger_knapPI_9_50_1000.csv",
    "largecoeff_pisinger_knapPI_1_50_100000.csv",
]
PER_FILE = 50  # half of each file: 400 solves (two saturations) in about a second


@dataclass
class Knapsack:
    name: str
    capacity: float
    optimum: float
    profit: np.ndarray
    weight: np.ndarray


def read_instances(path: Path, limit: int) -> list[Knapsack]:
    out: list[Knapsack] = []
    for block in path.read_text().split("-----"):
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        if not lines:
            continue
        header = {line.split()[0]: line.split()[1] for line in lines[1:5]}
        items = [line.split(",") for line in lines[5:5 + int(header["n"])]]
        out.append(Knapsack(
            name=lines[0], capacity=float(header["c"]), optimum=float(header["z"]),
            profit=np.array([float(i[1]) for i in items]), weight=np.array([float(i[2]) for i in items]),
        ))
        if len(out) == limit:
            break
    return out


def as_problem(k: Knapsack, saturation_kind: int) -> _core.Problem:
    n = len(k.profit)
    empty = np.zeros(0)
    return _core.Problem(
        k.weight, np.arange(n, dtype=np.int32), n, k.profit, np.arange(n + 1, dtype=np.int64),
        np.arange(n, dtype=np.int32), np.ones(n), np.zeros(n, dtype=np.int32), [saturation_kind], [empty], [empty],
    )


@pytest.fixture(scope="module")
def instances(knapsack_dir: Path) -> list[Knapsack]:
    return [k for name in FILES for k in read_instances(knapsack_dir / name, PER_FILE)]


@pytest.mark.parametrize("saturation_kind", [1, 0], ids=["linear", "cap1"])
def test_pisinger_optima(instances: list[Knapsack], saturation_kind: int) -> None:
    assert len(instances) == PER_FILE * len(FILES)
    for k in instances:
        (result,) = _core.solve(as_problem(k, saturation_kind), [k.capacity])
        assert result.status == "optimal", k.name
        assert result.value == k.optimum, k.name
        assert result.upper_bound == k.optimum, k.name  # integer profits: the bound rounds down
        chosen = np.asarray(result.selected)
        assert k.weight[chosen].sum() <= k.capacity, k.name
        assert k.profit[chosen].sum() == k.optimum, k.name
