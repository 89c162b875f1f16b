"""Readers: validate reports every error (up to a cap); the fast and the careful validator agree."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.limits import current_limits
from memaudit_fast.model.package import (
    MAX_ERRORS,
    Package,
    _default_locator,
    _Validator,
    package_from_json,
)
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package
from strategies import packages


def base(n: int = 3) -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "v/1", "budgets": [4],
        "units": [{"unit_id": "u0", "weight": 1.0}],
        "candidates": [{"candidate_id": f"c{i}", "cost": 1, "coverage": {"u0": 1.0}} for i in range(n)],
    }


def test_every_error_is_reported_with_its_record(tmp_path, capsys):
    data = base(5)
    data["candidates"][0]["cost"] = -1
    data["candidates"][1]["cost"] = "2"
    data["candidates"][2]["coverage"] = {"nope": 1}
    data["candidates"][3]["text"] = 7
    data["units"][0]["weight"] = True
    data["budgets"] = [1, -3]
    with pytest.raises(PackageError) as info:
        Package.from_dict(data, source="m.json")
    messages = [str(e) for e in info.value.errors]
    assert len(messages) == 6, messages
    for needle in ("candidates[0]: field 'cost'", "candidates[1]: field 'cost'", "candidates[2]: field 'coverage'",
                   "candidates[3]: field 'text'", "units[0]: field 'weight'", "field 'budgets[1]'"):
        assert any(needle in m for m in messages), (needle, messages)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("invalid: ") == 6 and "Traceback" not in err


def test_errors_are_capped(tmp_path, capsys):
    data = base(MAX_ERRORS + 30)
    for c in data["candidates"]:
        c["cost"] = -1
    with pytest.raises(PackageError) as info:
        Package.from_dict(data)
    assert len(info.value.errors) == MAX_ERRORS and info.value.truncated
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("invalid: ") == MAX_ERRORS + 1 and "the first 50 errors" in err


def test_decoder_defects_and_field_errors_together():
    text = json.dumps(base(3)).replace('"cost": 1', '"cost": NaN', 1).replace('"cost": 1', '"cost": -4', 1)
    with pytest.raises(PackageError) as info:
        package_from_json(text, source="x.json")
    messages = [str(e) for e in info.value.errors]
    assert len(messages) == 2
    assert "candidates[0]: field 'cost': NaN" in messages[0] and "candidates[1]: field 'cost'" in messages[1]


def careful(data: dict) -> Package:
    return _Validator(copy.deepcopy(data), "x", _default_locator, current_limits()).run()


def same(a: Package, b: Package) -> None:
    assert a.data == b.data
    for name in ("weights_rule", "unit_weights", "unit_saturations", "default_saturation",
                 "candidate_groups", "candidate_times"):
        assert getattr(a, name) == getattr(b, name), name
    ca, cb = compile_package(a), compile_package(b)
    for name in ("cost", "group_of", "weight", "indptr", "indices", "values", "times", "saturation_of"):
        assert getattr(ca, name).tolist() == getattr(cb, name).tolist(), name
    assert ca.group_ids == cb.group_ids and ca.saturations == cb.saturations


@settings(max_examples=80)
@given(packages(max_candidates=8, max_units=5))
def test_fast_and_careful_validators_build_the_same_package(data):
    try:
        slow = careful(data)
    except PackageError:
        with pytest.raises(PackageError):
            package_from_json(json.dumps(data))
        return
    fast = package_from_json(json.dumps(data), source="x")
    same(fast, slow)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_small_suite_takes_the_fast_path_and_agrees(distribution):
    data = generate_package(distribution, seed=3)
    fast = package_from_json(json.dumps(data))
    assert fast.arrays is not None  # the fast path answered
    same(fast, careful(data))


@settings(max_examples=60)
@given(st.data())
def test_mutations_are_judged_alike_by_both_paths(draw):
    data = copy.deepcopy(draw.draw(packages(max_candidates=5, max_units=3)))
    victim = draw.draw(st.sampled_from(["candidates", "units"]))
    record = draw.draw(st.sampled_from(data[victim]))
    key = draw.draw(st.sampled_from(sorted(record)))
    record[key] = draw.draw(st.sampled_from([None, -1, "x", [], {}, True, 2**60, 0.5, "", {"u": -1}]))
    text = json.dumps(data)
    try:
        slow = careful(data)
    except PackageError as exc:
        with pytest.raises(PackageError) as info:
            package_from_json(text, source="x")
        assert str(info.value).split(": ", 1)[1] == str(exc).split(": ", 1)[1]
        return
    same(package_from_json(text, source="x"), slow)


def test_pwl_origin_may_be_omitted():
    data = base(2)
    data["objective"] = {"saturation": {"pwl": [[0.5, 0.7], [1, 1]]}}
    package = package_from_json(json.dumps(data))
    assert package.default_saturation.points == ((0.0, 0.0), (0.5, 0.7), (1.0, 1.0))
    listed = copy.deepcopy(data)
    listed["objective"]["saturation"]["pwl"].insert(0, [0, 0])
    assert compile_package(Package.from_dict(listed)).objective([0]) == compile_package(package).objective([0])
    one_point = copy.deepcopy(data)
    one_point["objective"]["saturation"]["pwl"] = [[2, 1]]
    assert Package.from_dict(one_point).default_saturation.points == ((0.0, 0.0), (2.0, 1.0))


@pytest.mark.parametrize(
    ("points", "needles"),
    [
        ([[0, 0.5], [1, 1]], ["pwl[0]", "[0, 0]"]),
        ([[0, 0]], ["at least one point"]),
        ([[0.5, 0.2], [1, 1]], ["pwl[1]", "concave"]),  # slope from the origin 0.4, then 1.6
        ([[1, 1], [0.5, 1.2]], ["pwl[1]", "increase"]),
        ([], ["non-empty list"]),
    ],
    ids=["origin-h-not-0", "only-origin", "convex-from-origin", "z-decreasing", "empty"],
)
def test_pwl_rules_with_the_origin(points, needles):
    data = base(1)
    data["units"][0]["saturation"] = {"pwl": points}
    with pytest.raises(PackageError) as info:
        Package.from_dict(data)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_pwl_pieces_of_equal_slope_are_concave_whatever_their_rounding():
    # Slopes of 1e-13 on h near 0.9: equal in exact arithmetic, their quotients differ by far
    # more than 1e-12 of themselves (0.0311% here). The readers and the core took them as convex.
    import memaudit_fast as ma

    points = [[1.0, 0.5], [2.0, 0.9], [3.0, 0.9 + 1e-13], [4.0, 0.9 + 2e-13], [5.0, 0.9 + 3e-13],
              [6.0, 0.9 + 4e-13]]
    data = base(1)
    data["units"][0]["saturation"] = {"pwl": points}
    package = Package.from_dict(data)
    assert ma.solve(package, budget=1, finish=None).status == "optimal"  # the core takes it too
    data["units"][0]["saturation"] = {"pwl": [*points[:-1], [6.0, 0.9 + 3e-13 + 1e-10]]}  # 1,000x the slope
    with pytest.raises(PackageError, match="concave"):
        Package.from_dict(data)


@pytest.mark.parametrize(
    ("edit", "ok"),
    [
        (lambda d: d["candidates"][0].update(estimated_value=0.5), True),
        (lambda d: d["candidates"][0].update(estimated_value=None, estimated_coverage={}), True),
        (lambda d: d["candidates"][0].update(estimated_coverage={"u0": 0.3}), True),
        (lambda d: d["candidates"][0].update(estimated_value=-1), False),
        (lambda d: d["candidates"][0].update(estimated_value=True), False),
        (lambda d: d["candidates"][0].update(estimated_coverage={"nope": 1}), False),
        (lambda d: d["candidates"][0].update(estimated_coverage=[1]), False),
        (lambda d: d.update(objective={"group_capacity": 2}), True),
        (lambda d: d.update(objective={"group_capacity": 0}), False),
        (lambda d: d.update(objective={"group_capacity": True}), False),
        (lambda d: d.update(objective={"group_capacity": 2.0}), False),
    ],
)
def test_optional_protocol_fields_are_judged_alike(edit, ok):
    data = base(2)
    edit(data)
    if ok:
        fast = package_from_json(json.dumps(data))
        assert fast.arrays is not None
        same(fast, careful(data))
    else:
        with pytest.raises(PackageError):
            careful(data)
        with pytest.raises(PackageError):
            package_from_json(json.dumps(data))


def test_a_byte_order_mark_is_named_with_its_fix(tmp_path, capsys):
    package = json.dumps(generate_package(DISTRIBUTIONS[0], seed=1))
    bom = b"\xef\xbb\xbf"
    single, jsonl = tmp_path / "p.json", tmp_path / "s.jsonl"
    single.write_bytes(bom + package.encode())
    jsonl.write_bytes(bom + package.encode() + b"\n" + package.encode() + b"\n")
    assert main(["validate", str(single)]) == 2
    assert "byte-order mark" in capsys.readouterr().err
    assert main(["validate", str(jsonl)]) == 2
    out, err = capsys.readouterr()
    assert "line 1" in err and "byte-order mark" in err and "1 valid, 1 invalid" in out


def _tiny_package() -> dict:
    return {"format": "memaudit.package/1", "package_id": "p", "budgets": [5],
            "units": [{"unit_id": "u0", "weight": 2.0}, {"unit_id": "u1", "weight": 1.0}],
            "candidates": [{"candidate_id": "c0", "cost": 3, "coverage": {"u0": 1.0}},
                           {"candidate_id": "c1", "cost": 4, "coverage": {"u1": 1.0}}]}


@pytest.mark.parametrize("field,number,problem", [
    ("weight", "1e-400", "below the smallest double"),
    ("cost", "-1e-400", "below the smallest double"),
    ("cost", "0." + "0" * 400 + "1", "below the smallest double"),
    ("cost", "9007199254740993.0", "beyond 2^53"),
    ("cost", "9.007199254740993e15", "beyond 2^53"),
])
@pytest.mark.parametrize("indent", [None, 1])  # compact (the core's scanner) and pretty (the decoders)
def test_a_number_a_double_cannot_keep_is_an_error_not_a_rounding(tmp_path, capsys, field, number, problem, indent):
    data = _tiny_package()
    target = data["units"][0] if field == "weight" else data["candidates"][0]
    target[field] = "@@"
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data, indent=indent).replace('"@@"', number))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and problem in err
    with pytest.raises(PackageError, match=problem.replace("^", r"\^")):
        package_from_json(path.read_bytes())


@pytest.mark.parametrize("number", ["1e16", "9007199254740992.0", "1e-300", "0.0", "-0.0", "4.9e-324"])
def test_numbers_a_double_keeps_are_read(tmp_path, number):
    data = _tiny_package()
    data["candidates"][1]["coverage"]["u1"] = "@@"
    raw = json.dumps(data).replace('"@@"', number).encode()
    assert package_from_json(raw).data["candidates"][1]["coverage"]["u1"] == float(number)


@pytest.mark.parametrize("budget", ["1e-400", "9007199254740993.0", "1_0"])
def test_command_line_budgets_follow_the_same_rule(tmp_path, capsys, budget):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_tiny_package()))
    for command in (["score", str(path), "--ids", "c0", "--budget", budget], ["solve", str(path), "--budget", budget]):
        assert main(command) == 2
        assert budget in capsys.readouterr().err


@pytest.mark.parametrize("units", [[{"unit_id": "u0", "weight": 2.0}, {"unit_id": "u1", "weight": 1.0}, None], 7])
def test_unreadable_units_are_reported_once_without_false_references(units):
    data = _tiny_package() | {"units": units}
    with pytest.raises(PackageError) as info:
        package_from_json(json.dumps(data).encode())
    errors = [str(e) for e in info.value.errors]
    assert len(errors) == 1 and "units" in errors[0], errors
