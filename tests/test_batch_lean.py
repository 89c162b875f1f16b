"""The batch's lean path gives the records of the careful one, byte for byte (but ``seconds``).

A batch worker compiles the package it has just validated without comparing its arrays with
the data again, and builds records straight from the core's results; ``solve()`` and
``SolveResult.to_record()`` are the reference.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memaudit_fast.experiments.batch import BatchOptions, member_digest, score_member
from memaudit_fast.experiments.batch_scoring import lean_records
from memaudit_fast.model.compiled import compile_package, compile_validated
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import iter_raw_members, write_package_set
from memaudit_fast.results.records import encode_records
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package
from strategies import packages

BUDGETS = [0.0, 1.0, 2.5, 4.0, 8.0, 16.0]


def untimed(data: bytes) -> list[bytes]:
    """The record lines with ``seconds`` taken out (the only field that may differ)."""
    lines = []
    for line in data.split(b"\n"):
        if line:
            record = json.loads(line)
            record.pop("seconds", None)
            lines.append(orjson.dumps(record))
    return lines


def reference(package: Package, budgets: list[float], options: BatchOptions) -> list[dict]:
    compiled = compile_package(Package.from_dict(package.data))
    return [r.to_record() for r in solve(compiled, budgets=budgets, node_limit=options.node_limit)]


def same_arrays(a, b) -> None:
    for name in ("cost", "group_of", "weight", "indptr", "indices", "values", "times", "saturation_of"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
        assert not getattr(a, name).flags.writeable, name
    assert (a.candidate_ids, a.group_ids, a.unit_ids, a.representations, a.saturations, a.budgets) == \
        (b.candidate_ids, b.group_ids, b.unit_ids, b.representations, b.saturations, b.budgets)


def check(data: dict, options: BatchOptions) -> None:
    package = Package.from_dict(data)
    if package.arrays is None:
        return  # the careful validator's package: the lean compile is not taken
    lean = compile_validated(package)
    same_arrays(lean, compile_package(Package.from_dict(data)))
    if lean.group_capacity != 1:
        return
    budgets = list(options.budgets or ())
    got = encode_records(lean_records(lean, budgets, options, None))
    assert untimed(got) == untimed(encode_records(reference(package, budgets, options)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=packages(), node_limit=st.sampled_from([None, 0, 1, 5]))
def test_lean_records_are_the_records_of_solve(data, node_limit):
    check(data, BatchOptions(budgets=tuple(BUDGETS), node_limit=node_limit))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_lean_records_on_memaudit_small(distribution):
    for seed in range(3):
        check(generate_package(distribution, seed=seed), BatchOptions(budgets=tuple(BUDGETS)))


def test_score_member_writes_what_solve_gives(tmp_path):
    """End to end through the worker function: the records' every field but ``seconds``."""
    datas = [generate_package(d, seed=7) for d in DISTRIBUTIONS]
    path = tmp_path / "set.jsonl"
    write_package_set(datas, path)
    options = BatchOptions(budgets=(2.0, 4.0, 8.0, 16.0))
    for member, data in zip(iter_raw_members([path]), datas):
        digest = member_digest(member)
        out, count, errors, interrupted, back = score_member((member, digest, frozenset()), options)
        assert back == digest
        assert count == 4 and not errors and not interrupted
        expected = reference(Package.from_dict(data), [2.0, 4.0, 8.0, 16.0], options)
        compiled = compile_package(Package.from_dict(data))
        for record in expected:
            record.update({
                "source": member[0],
                "size": {"candidates": compiled.num_candidates, "groups": len(compiled.group_ids),
                         "units": len(compiled.unit_ids), "nonzeros": int(compiled.indices.size)},
                "distribution": data["meta"]["distribution"],
                "member_digest": digest, "options_digest": options.digest,
            })
        assert untimed(out) == untimed(encode_records(expected))


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_hash_members_and_the_parent_drops_repeats_in_order(tmp_path, workers):
    """A fresh run leaves hashing to the workers: a repeated line still gets no record of its
    own, the first occurrence's records stay where they were, and a resume adds nothing."""
    from memaudit_fast.experiments.batch import run_batch

    datas = [generate_package(d, seed=3) for d in DISTRIBUTIONS[:4]]
    once, repeated = tmp_path / "once.jsonl", tmp_path / "repeated.jsonl"
    write_package_set(datas, once)
    write_package_set([datas[0], datas[1], datas[0], datas[2], datas[1], datas[3], datas[3]], repeated)
    options = BatchOptions(budgets=(2.0, 4.0))
    run_batch([once], tmp_path / "a.jsonl", options, workers=1, backend="serial")
    summary = run_batch([repeated], tmp_path / "b.jsonl", options, workers=workers, chunk_size=2)
    assert summary.duplicates == 3 and summary.packages == 4 and summary.records == 8

    def strip(path):  # where each was read differs (the line number), nothing else but seconds
        return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "source")}
                for line in path.read_bytes().splitlines()]

    assert strip(tmp_path / "a.jsonl") == strip(tmp_path / "b.jsonl")
    before = (tmp_path / "b.jsonl").read_bytes()
    again = run_batch([repeated], tmp_path / "b.jsonl", options, workers=workers, resume=True)
    assert again.packages == 0 and (tmp_path / "b.jsonl").read_bytes() == before


def test_records_with_shared_fields_encode_as_the_merged_records():
    from memaudit_fast.results.records import encode_records_with

    extra = {"source": "s.jsonl line 3", "size": {"candidates": 3}, "distribution": "base", "member_digest": "ab"}
    records = [{"format": "memaudit.result/1", "budget": 2, "opt": 0.1, "selected": ["é", "a\u2028"]},
               {"format": "memaudit.result/1", "budget": 4.5, "writers": {"gvt": 1.0}}, {}]
    assert encode_records_with(records, extra) == encode_records([{**r, **extra} for r in records])
    assert encode_records_with(records, {}) == encode_records(records)
    with pytest.raises(ValueError):
        encode_records_with([{"source": "mine"}], extra)
