"""MEMAUDIT-Small packages are fixed by (distribution, seed, scale, cost model): a digest per
distribution, recorded from generator version 1, guards them against refactoring.

A deliberate change of the generated packages bumps ``GENERATOR_VERSION`` and records new
digests here; any other change of these digests is a bug.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from memaudit_fast.suites.small import DISTRIBUTIONS, GENERATOR_VERSION, generate_package

# (seed, scale, cost model) of the packages folded into each distribution's digest.
CASES = ((0, 1, "words"), (1, 1, "words"), (7, 2, "words"), (3, 3, "bytes"), (5, 1, "tokens"))

DIGESTS = {
    "base": "4fd4d47d12a579e996350b528db3c5290732af0183a2d88261624494e662ba0f",
    "update_chain": "4e0a836dfdb6ccafeb34b94f6c8b4fb4bc75d7789c0bb5a39593be067a393361",
    "temporal_interval": "33a1707a4701f5f3320c3b35a100bd2db70e77c0540e9deff6838391bfe61977",
    "density_trap": "97f1cd854d6d3d85c482dec9deb0e29309f3143e9b027d8b71a7c0d9325550e5",
    "scope_shift": "144a3f1b4bf927520e43fb99d9a4348414e7546f502b09e454a4332a9b5527cf",
    "summary_tradeoff": "9ac7f44c1b4ac04b79afa4f1b742806df7d4fb78fee79fc8f2512060013bd9aa",
    "redundancy_heavy": "2fdb79269cf0eb5a97aa84c76f526a418b3e5d9f7898fcadb8c5dd0c796b8226",
    "abstention_hard": "e3ff09dd57e54247fa6922debb326721d5bed6704bbcb22fb47760d8036582dd",
}


def test_every_distribution_has_a_recorded_digest():
    assert GENERATOR_VERSION == 1
    assert set(DIGESTS) == set(DISTRIBUTIONS)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_generated_packages_match_the_recorded_digest(distribution):
    h = hashlib.sha256()
    for seed, scale, cost_model in CASES:
        package = generate_package(distribution, seed, scale=scale, cost_model=cost_model)
        h.update(json.dumps(package, sort_keys=True).encode())
    assert h.hexdigest() == DIGESTS[distribution]
