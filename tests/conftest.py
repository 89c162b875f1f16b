from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from oracles.data import KNAPSACK, LOCOMO, require_data

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """The LoCoMo subset (``locomo/locomo7.json`` under ``MEMAUDIT_DATA_DIR``); skips without it."""
    return require_data(*LOCOMO)


@pytest.fixture(scope="session")
def knapsack_dir() -> Path:
    """Pisinger's knapsack instances (``knapsack/`` under ``MEMAUDIT_DATA_DIR``); skips without them."""
    return require_data(*KNAPSACK)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The folder above the data sets (``../shared`` by default); skips when there is none."""
    return require_data().parent
