"""The core's package scanner answers only for packages the careful validator accepts, and
builds exactly the package it builds; everything else it leaves to the Python readers.

The cases are classes, not examples: every field of the format gets values of the wrong type,
out of range, at the edges of the double range, spelt with escapes or other number syntax,
repeated, removed or nested too deeply, and the text is re-spaced, cut and corrupted.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import PackageError
from memaudit_fast.model.compiled import compile_package, compile_validated
from memaudit_fast.model.fastpath import scanned_package
from memaudit_fast.model.jsonio import loads_strict
from memaudit_fast.model.limits import Limits, current_limits
from memaudit_fast.model.package import (
    Package,
    _default_locator,
    _Validator,
    package_from_json,
    scan_text,
)
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package
from strategies import packages

ARRAYS = ("cost", "group_of", "weight", "indptr", "indices", "values", "times", "saturation_of")


def careful(raw: bytes, limits: Limits | None = None) -> Package:
    """The careful decoder and validator's package (PackageError when it refuses)."""
    return _Validator(loads_strict(raw, source="x"), "x", _default_locator, limits or current_limits()).run()


def agree(raw: bytes, limits: Limits | None = None) -> bool:
    """False when the scanner doubts; else it must have built the careful validator's package."""
    limits = limits or current_limits()
    fast = scan_text(raw, "x", limits)
    if fast is None:
        return False
    try:
        slow = careful(raw, limits)
    except PackageError as exc:
        raise AssertionError(f"the scanner accepted a package the careful validator refuses: {exc}") from None
    a = compile_validated(fast)  # before anything decodes the dict: from the scan alone
    assert (a.package_id, a.budgets, a.group_capacity) == (slow.package_id, slow.budgets, fast.data.get(
        "objective", {}).get("group_capacity", 1))
    assert fast.meta == slow.data.get("meta")
    assert fast.data == slow.data and fast == slow
    for name in ("weights_rule", "unit_weights", "unit_saturations", "default_saturation",
                 "candidate_groups", "candidate_times"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert [type(w) for w in fast.unit_weights] == [float] * len(fast.unit_weights)
    b = compile_package(slow)
    for name in ARRAYS:
        left, right = getattr(a, name), getattr(b, name)
        assert left.dtype == right.dtype, name
        assert left.tobytes() == right.tobytes(), name  # bit for bit: -0.0 and every last digit
        assert not left.flags.writeable, name
    for name in ("package_id", "candidate_ids", "group_ids", "unit_ids", "representations", "saturations",
                 "budgets", "weights_rule", "saturation_name", "group_capacity"):
        assert getattr(a, name) == getattr(b, name), name
    return True


def compact(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_every_small_suite_package_is_scanned_exactly(distribution):
    for seed in range(4):
        data = generate_package(distribution, seed=seed)
        assert agree(compact(data)), (distribution, seed)
        assert agree(json.dumps(data, indent=2).encode())  # another writer's spacing


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packages(max_candidates=8, max_units=5), st.booleans())
def test_random_packages_are_scanned_exactly_or_left_alone(data, ascii_only):
    raw = json.dumps(data, ensure_ascii=ascii_only).encode()
    try:
        careful(raw)
    except PackageError:
        assert scanned_package(raw, "x", current_limits()) is None
        return
    agree(raw)


# Values that each field may be given: right, wrong, and on every edge the readers care about.
NUMBERS = [0, 1, 2.5, -0.0, -1, -1e-300, 1e-300, 5e-324, 1e-320, 1e308, 1.7976931348623157e308, 2**53, 2**53 + 1,
           -(2**53), -(2**53) - 1, 10**18, 10**19, 2**64, 0.1, 1e16, 123456789.123456789]
WRONG = [True, False, None, "1", "", [], [1], {}, {"a": 1}]
STRINGS = ["", "a", "é", "日本", "\U0001f600", 'q"uote', "back\\slash", "tab\tnew\nline", "\x00", "\x7f",
           "\u2028", "own", "\x00own:c0", "u0", "e0", "c0"]
SATURATION_SPECS = ["cap1", "linear", "log1p", "sqrt", "", {"pwl": [[0, 0], [1, 1]]}, {"pwl": [[0, 0], [2, 1]]}]
COVERAGES = [{"u0": 0.5}, {"u0": 0}, {"u0": -1}, {"u0": "1"}, {"u0": None}, {"u1": 1, "u0": 2.5}, {"nope": 1}]
VALUES = NUMBERS + WRONG + STRINGS + SATURATION_SPECS + COVERAGES

TOP_FIELDS = ["format", "package_id", "units", "candidates", "experiences", "queries", "objective", "budgets",
              "budget", "cost_model", "meta", "x_unknown"]
UNIT_FIELDS = ["unit_id", "weight", "saturation", "text", "kind", "state", "x_unknown"]
CANDIDATE_FIELDS = ["candidate_id", "cost", "coverage", "experience_id", "group", "representation", "text",
                    "timestamp", "estimated_value", "estimated_coverage", "x_unknown"]
EXPERIENCE_FIELDS = ["experience_id", "timestamp", "text", "x_unknown"]
QUERY_FIELDS = ["query_id", "required_unit_ids", "text"]
OBJECTIVE_FIELDS = ["saturation", "group_capacity", "x_unknown"]


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if depth % 2 else {"k": value}
    return value


def mutate(data: dict, rng: random.Random) -> dict:
    """One edit of a field somewhere in the package: a new value, a removal or an addition."""
    data = copy.deepcopy(data)
    where = rng.choice(["top", "unit", "candidate", "experience", "query", "objective", "coverage", "list"])
    if where == "top":
        record, fields = data, TOP_FIELDS
    elif where == "objective":
        record, fields = data.setdefault("objective", {}), OBJECTIVE_FIELDS
        if not isinstance(record, dict):
            return data
    elif where == "list":  # budgets, required ids and the like: an item changed
        # An earlier edit may have made queries (or one query) anything at all.
        queries = data.get("queries")
        queries = [q for q in queries if isinstance(q, dict)] if isinstance(queries, list) else []
        target = rng.choice([data.get("budgets"), *(q.get("required_unit_ids") for q in queries)])
        if isinstance(target, list) and target:
            target[rng.randrange(len(target))] = rng.choice(VALUES)
        return data
    else:
        name = {"unit": "units", "candidate": "candidates", "experience": "experiences", "query": "queries",
                "coverage": "candidates"}[where]
        records = data.get(name) or []
        if not isinstance(records, list) or not records:
            return data
        record = rng.choice(records)
        if not isinstance(record, dict):
            return data
        fields = {"unit": UNIT_FIELDS, "candidate": CANDIDATE_FIELDS, "experience": EXPERIENCE_FIELDS,
                  "query": QUERY_FIELDS, "coverage": None}[where]
        if where == "coverage":
            record = record.setdefault("coverage", {})
            if not isinstance(record, dict):
                return data
            fields = [*record, "u0", "u1", "nope", ""]
    field = rng.choice(fields)
    action = rng.random()
    if action < 0.15:
        record.pop(field, None)
    elif action < 0.25:
        record[field] = nested(rng.choice([3, 63, 64, 65, 70]))
    else:
        value = rng.choice(VALUES)
        if rng.random() < 0.2:  # the field's own value in a container, or a copy of another record's id
            value = rng.choice([[record.get(field)], {"v": record.get(field)}, f"{record.get(field)}"])
        record[field] = value
    return data


def respell(raw: bytes, rng: random.Random) -> bytes:
    """The same JSON (or nearly) in other words: number syntax, spacing, repeated keys, damage."""
    choice = rng.random()
    if choice < 0.2:
        return raw.replace(b":1.0", b":1.0e0").replace(b":0.5", b":5E-1").replace(b":1,", b":1.00,")
    if choice < 0.3:
        return raw.replace(b",", b" ,\n\t").replace(b":", b" : ")
    if choice < 0.45:  # a key repeated in one object, with the same or another value
        at = [i for i in range(len(raw)) if raw[i:i + 1] == b"{" and raw[i + 1:i + 2] == b'"']
        if at:
            i = rng.choice(at)
            end = raw.index(b",", i) if b"," in raw[i:] else -1
            pair = raw[i + 1:end]
            if end > 0 and b"{" not in pair and b"[" not in pair:
                return raw[:i + 1] + pair + b"," + raw[i + 1:]
        return raw
    if choice < 0.55:
        return raw[:rng.randrange(len(raw))]  # cut short
    if choice < 0.65:
        i = rng.randrange(len(raw))
        return raw[:i] + bytes([rng.choice([0x00, 0x0A, 0x22, 0x5C, 0x80, 0xC0, 0xED, 0xF5, 0xFF])]) + raw[i + 1:]
    if choice < 0.7:
        return b"\xef\xbb\xbf" + raw  # a byte-order mark
    if choice < 0.75:
        return raw + rng.choice([b" ", b"\n", b"x", b"{}", b"\x0c", b"\x00"])
    if choice < 0.85:  # escapes where the value is needed: ids, keys, representations
        return raw.replace(b'"u0"', b'"\\u0075\\u0030"').replace(b'"c1"', b'"c\\u0031"')
    return raw


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packages(max_candidates=6, max_units=4), st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_edited_packages_are_scanned_exactly_or_left_alone(data, seed, edits):
    rng = random.Random(seed)
    for _ in range(edits):
        data = mutate(data, rng)
    raw = respell(compact(data), rng) if rng.random() < 0.5 else compact(data)
    try:
        careful(raw)
    except (PackageError, RecursionError):
        assert scanned_package(raw, "x", current_limits()) is None
        return
    agree(raw)


def test_each_edge_of_the_numbers_gives_one_answer():
    base = {"format": "memaudit.package/1", "package_id": "n", "budgets": [1],
            "units": [{"unit_id": "u0", "weight": 1.0}],
            "candidates": [{"candidate_id": "c0", "cost": 1, "coverage": {"u0": 1.0}}]}
    spellings = ["0", "-0", "0.0", "-0.0", "0e0", "1", "1.5", "1E2", "1e+2", "1e-2", "2.5e-1", "9007199254740992",
                 "9007199254740993", "-1", "1e308", "1.7976931348623157e308", "1.8e308", "1e-320", "4.9e-324",
                 "1e-400", "0e-400", "0.000000000000000000000000000000000000000000000000001", "123456789012345678",
                 "1234567890123456789", "01", "1.", ".5", "+1", "1e", "-", "NaN", "Infinity", "0x10", "1_0"]
    accepted = 0
    for field in ("cost", "coverage", "weight", "timestamp", "budgets"):
        for text in spellings:
            raw = compact(base).decode()
            if field == "cost":
                raw = raw.replace('"cost":1', f'"cost":{text}')
            elif field == "coverage":
                raw = raw.replace('{"u0":1.0}', f'{{"u0":{text}}}')
            elif field == "weight":
                raw = raw.replace('"weight":1.0', f'"weight":{text}')
            elif field == "timestamp":
                raw = raw.replace('"cost":1', f'"cost":1,"timestamp":{text}')
            else:
                raw = raw.replace('"budgets":[1]', f'"budgets":[{text}]')
            data = raw.encode()
            try:
                careful(data)
            except PackageError:
                assert scanned_package(data, "x", current_limits()) is None, (field, text)
                continue
            accepted += agree(data)
    assert accepted >= 40  # the plain spellings are the scanner's own


def test_limits_are_the_readers_limits():
    data = generate_package("base", seed=0)
    raw = compact(data)
    n, m = len(data["candidates"]), len(data["units"])
    nonzeros = sum(len(c["coverage"]) for c in data["candidates"])
    assert agree(raw, Limits(max_candidates=n, max_units=m, max_nonzeros=nonzeros, max_budgets=4, max_depth=64))
    for tight in (Limits(max_candidates=n - 1), Limits(max_units=m - 1), Limits(max_nonzeros=nonzeros - 1),
                  Limits(max_budgets=3), Limits(max_depth=3)):
        assert scanned_package(raw, "x", tight) is None
        with pytest.raises(PackageError):
            package_from_json(raw, source="x", limits=tight)


def test_a_package_that_only_the_python_readers_take_is_still_read():
    data = {"format": "memaudit.package/1", "package_id": "p", "budgets": [1],
            "units": [{"unit_id": "Ünit", "weight": 1.0}],  # an escape in an id (ensure_ascii): the scanner doubts
            "candidates": [{"candidate_id": "c0", "cost": 1, "coverage": {"Ünit": 1.0}}]}
    raw = json.dumps(data).encode()
    assert scanned_package(raw, "x", current_limits()) is None
    package = package_from_json(raw, source="x")
    assert package.data == data and package.arrays is not None  # the msgspec fast path answered


def test_a_scanned_package_behaves_as_any_package():
    data = generate_package("base", seed=5)
    raw = compact(data)
    scanned = package_from_json(raw, source="x")
    assert type(scanned) is not Package  # the scanner's, with its dict still undecoded
    assert scanned.package_id == data["package_id"] and scanned.budgets == [float(b) for b in data["budgets"]]
    assert scanned.meta == data["meta"]
    assert scanned == Package.from_dict(data, source="x") and Package.from_dict(data, source="x") == scanned
    for copy_of in (pickle.loads(pickle.dumps(scanned)), copy.deepcopy(scanned), dataclasses.replace(scanned)):
        assert copy_of == scanned and copy_of.data == data
    assert package_from_json(raw, source="x") != Package.from_dict(dict(data, package_id="other"))


def test_threads_asking_for_the_dict_get_the_same_one():
    scanned = package_from_json(compact(generate_package("base", seed=6)), source="x")
    with ThreadPoolExecutor(4) as pool:
        seen = {id(d) for d in pool.map(lambda _: scanned.data, range(16))}
    assert len(seen) == 1 and scanned.data is scanned.data
    scanned.data["package_id"] = "edited"  # the dict is the package's own, as for any package
    assert scanned.package_id == "edited"
