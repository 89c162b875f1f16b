"""Reader throughput on MEMAUDIT-Small: read, validate and compile one JSONL line per package.

This is the per-package work a batch worker does before its solves. The reader every path
uses tries the core's scanner first (one C++ pass from the text to the arrays), then the
msgspec fast path (typed decoding, cross-references as set operations), then the careful
path (Python's json with hooks and the validator that words every error). The three are
timed in one run; every compiled package is checked against the careful path's, so a fast
wrong answer fails the benchmark.

    python -m pytest bench/bench_readers.py --benchmark-only -s
"""

from __future__ import annotations

import copy
import time

import pytest

from memaudit_fast.model.compiled import compile_package, compile_validated
from memaudit_fast.model.fastpath import _fast_package
from memaudit_fast.model.jsonio import loads_fast, loads_strict
from memaudit_fast.model.limits import current_limits
from memaudit_fast.model.package import Package, _default_locator, _Validator
from memaudit_fast.model.sets import iter_raw_members, parse_member, write_package_set
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package

SEEDS = 50  # x 8 distributions = 400 packages of about 17 KB


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, bytes]]:
    path = tmp_path_factory.mktemp("readers") / "small.jsonl"
    write_package_set([generate_package(d, seed=s) for s in range(SEEDS) for d in DISTRIBUTIONS], path)
    return list(iter_raw_members([path]))


def msgspec_path(member: tuple[str, str, bytes]):
    """The reader without the scanner: the msgspec fast path's package."""
    fields = _fast_package(loads_fast(member[2], current_limits().max_depth), member[0], current_limits())
    assert fields is not None
    return Package(**fields)


def careful(member: tuple[str, str, bytes]):
    data = loads_strict(member[2], source=member[0])
    return _Validator(data, member[0], _default_locator, current_limits()).run()


def test_read_validate_compile(benchmark, members):
    def run() -> list:  # a batch worker's path: the package it has just validated compiles lean
        return [compile_validated(parse_member(m)) for m in members]

    compiled = benchmark.pedantic(run, rounds=5, iterations=1)
    for member, fast in zip(members[::20], compiled[::20]):
        slow = compile_package(careful(member))
        assert fast.cost.tolist() == slow.cost.tolist() and fast.values.tolist() == slow.values.tolist()
        assert fast.indices.tolist() == slow.indices.tolist() and fast.group_of.tolist() == slow.group_of.tolist()
        assert fast.package.data == copy.deepcopy(slow.package.data)
        assert (fast.candidate_ids, fast.group_ids, fast.unit_ids, fast.representations) == \
            (slow.candidate_ids, slow.group_ids, slow.unit_ids, slow.representations)
        assert fast.times.tolist() == slow.times.tolist() and fast.weight.tolist() == slow.weight.tolist()
    # The ratio on CPU time, fast and careful interleaved, best of three: a shared machine's
    # load moves both alike.
    paths = {"scanner": lambda m: compile_validated(parse_member(m)),
             "msgspec": lambda m: compile_validated(msgspec_path(m)),
             "careful": lambda m: compile_package(careful(m))}
    seconds = dict.fromkeys(paths, float("inf"))
    for _ in range(3):
        for name, path in paths.items():
            start = time.process_time()
            for member in members:
                path(member)
            seconds[name] = min(seconds[name], time.process_time() - start)
    per_second = len(members) / seconds["scanner"]
    over_msgspec = seconds["msgspec"] / seconds["scanner"]
    over_careful = seconds["careful"] / seconds["scanner"]
    benchmark.extra_info["packages_per_second_per_core"] = round(per_second)
    benchmark.extra_info["speedup_over_msgspec_path"] = round(over_msgspec, 2)
    benchmark.extra_info["speedup_over_careful_path"] = round(over_careful, 2)
    per_package = ", ".join(f"{name} {1e6 * s / len(members):.0f} us" for name, s in seconds.items())
    print(f"\n{len(members)} packages ({sum(len(m[2]) for m in members) // len(members)} bytes each), "
          f"read+validate+compile per package (CPU time): {per_package}; the scanner's path is "
          f"{over_msgspec:.1f}x the msgspec path and {over_careful:.1f}x the careful path "
          f"({per_second:.0f} packages/s)")
    assert over_careful > 1.0  # the fast path must not be slower than the path it falls back to


def test_fallback_keeps_the_careful_message(members):
    text = members[0][2].replace(b'"cost":', b'"cost":-', 1)
    assert text != members[0][2]
    with pytest.raises(Exception) as info:
        parse_member((members[0][0], "text", text))
    assert "field 'cost'" in str(info.value) and ">= 0" in str(info.value)
