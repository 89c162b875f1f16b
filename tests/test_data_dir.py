"""MEMAUDIT_DATA_DIR points the tests that need LoCoMo or the knapsack instances at their data."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles.data import DATA_DIR_ENV, DEFAULT_DATA_DIR, LOCOMO, data_dir, require_data


def test_default_is_shared_data_beside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    checkout = Path(__file__).resolve().parents[1]
    assert data_dir() == DEFAULT_DATA_DIR == checkout.parent / "shared" / "data"


def test_the_variable_names_the_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo7.json").write_text("[]")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    assert require_data(*LOCOMO) == tmp_path / "locomo" / "locomo7.json"


def test_absent_data_skips_and_says_how_to_point_at_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(pytest.skip.Exception, match=f"locomo/locomo7.json is not in .*nowhere.*{DATA_DIR_ENV}"):
        require_data(*LOCOMO)
