from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Shared data lives beside the checkout; a user's clone has none, so tests skip there.
SHARED = Path(__file__).resolve().parents[1].parent / "shared"

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this checkout")
    return SHARED
