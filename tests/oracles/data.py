"""Where the shared data sets are: LoCoMo (``locomo/locomo7.json``) and Pisinger's knapsack
instances (``knapsack/``).

``MEMAUDIT_DATA_DIR`` names the folder that holds them; by default it is ``../shared/data``
beside the checkout. A user's clone usually has neither, so the tests that need them skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA_DIR_ENV = "MEMAUDIT_DATA_DIR"
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data"
LOCOMO = ("locomo", "locomo7.json")
KNAPSACK = ("knapsack",)


def data_dir() -> Path:
    """``$MEMAUDIT_DATA_DIR`` when set, else ``../shared/data`` beside the checkout."""
    configured = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(configured).expanduser() if configured else DEFAULT_DATA_DIR


def require_data(*parts: str) -> Path:
    """The path of a shared data file or folder; skips the calling test when it is absent."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{'/'.join(parts)} is not in {data_dir()} (set {DATA_DIR_ENV} to the folder "
                    "that holds locomo/ and knapsack/)")
    return path
