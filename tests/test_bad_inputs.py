"""A corpus of malformed packages: each is rejected with one precise message."""

from __future__ import annotations

import copy
import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.io import load_package
from memaudit_fast.model.package import Package


def base() -> dict:
    return {
        "format": "memaudit.package/1",
        "package_id": "bad/base",
        "budgets": [4],
        "experiences": [{"experience_id": "e0", "timestamp": 0}, {"experience_id": "e1", "timestamp": 1}],
        "units": [{"unit_id": "u0", "weight": 1.0}, {"unit_id": "u1", "weight": 2.0}],
        "candidates": [
            {"candidate_id": "c0", "experience_id": "e0", "cost": 1, "coverage": {"u0": 1.0}},
            {"candidate_id": "c1", "experience_id": "e1", "cost": 2, "coverage": {"u1": 0.5}},
        ],
        "queries": [{"query_id": "q0", "required_unit_ids": ["u0"]}],
    }


def mutate(path: str, value, delete: bool = False):
    def apply(d: dict) -> dict:
        d = copy.deepcopy(d)
        keys = path.split(".")
        target = d
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        last = keys[-1]
        if delete:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
        return d
    return apply


def edit(fn):
    def apply(d: dict) -> dict:
        d = copy.deepcopy(d)
        fn(d)
        return d
    return apply


CASES = [
    # (id, mutation, substrings the message must contain)
    ("unknown-format", mutate("format", "memaudit.package/9"), ["field 'format'", "memaudit.package/9", "memaudit.package/1"]),
    ("missing-format", mutate("format", None, delete=True), ["field 'format'", "missing"]),
    ("missing-package-id", mutate("package_id", None, delete=True), ["package_id", "missing"]),
    ("empty-package-id", mutate("package_id", ""), ["package_id", "non-empty string"]),
    ("missing-units", mutate("units", None, delete=True), ["field 'units'", "missing"]),
    ("empty-candidates", mutate("candidates", []), ["field 'candidates'", "empty list"]),
    ("units-not-list", mutate("units", {"u0": 1}), ["field 'units'", "expected a list"]),
    ("candidate-not-object", mutate("candidates.1", "c1"), ["candidates[1]", "expected an object"]),
    ("duplicate-candidate-id", mutate("candidates.1.candidate_id", "c0"), ["candidates[1]", "duplicate id 'c0'"]),
    ("duplicate-unit-id", mutate("units.1.unit_id", "u0"), ["units[1]", "duplicate id 'u0'"]),
    ("dangling-coverage-unit", mutate("candidates.0.coverage", {"nope": 1.0}), ["candidates[0]", "coverage", "'nope'", "not in units"]),
    ("dangling-experience", mutate("candidates.1.experience_id", "e9"), ["candidates[1]", "experience_id", "'e9'"]),
    ("dangling-query-unit", mutate("queries.0.required_unit_ids", ["u7"]), ["queries[0]", "required_unit_ids", "'u7'"]),
    ("negative-cost", mutate("candidates.0.cost", -1), ["candidates[0]", "field 'cost'", "found -1", ">= 0"]),
    ("string-cost", mutate("candidates.0.cost", "3"), ["candidates[0]", "field 'cost'", "string '3'", "JSON number"]),
    ("huge-int-cost", mutate("candidates.0.cost", 10**400), ["candidates[0]", "field 'cost'", "finite number"]),
    ("bool-cost", mutate("candidates.0.cost", True), ["candidates[0]", "field 'cost'", "boolean true"]),
    ("missing-cost", mutate("candidates.1.cost", None, delete=True), ["candidates[1]", "field 'cost'", "missing"]),
    ("missing-coverage", mutate("candidates.1.coverage", None, delete=True), ["candidates[1]", "coverage", "missing"]),
    ("negative-coverage", mutate("candidates.1.coverage", {"u1": -0.5}), ["candidates[1]", "coverage.u1", "-0.5"]),
    ("negative-weight", mutate("units.1.weight", -2), ["units[1]", "field 'weight'", ">= 0"]),
    ("mixed-weights", mutate("units.1.weight", None, delete=True), ["units[1]", "weight", "every unit"]),
    ("no-weights-no-queries", edit(lambda d: ([u.pop("weight") for u in d["units"]], d.pop("queries"))), ["every unit would weigh 0"]),
    ("pwl-not-concave", mutate("objective", {"saturation": {"pwl": [[0, 0], [1, 1], [2, 3]]}}), ["objective.saturation.pwl[2]", "concave"]),
    ("pwl-bad-origin", mutate("objective", {"saturation": {"pwl": [[0, 1], [1, 2]]}}), ["pwl[0]", "[0, 0]"]),
    ("pwl-decreasing", mutate("objective", {"saturation": {"pwl": [[0, 0], [1, 1], [2, 0.5]]}}), ["pwl[2]", "must not decrease"]),
    ("unknown-saturation", mutate("objective", {"saturation": "sqrt"}), ["objective.saturation", "'sqrt'", "cap1"]),
    ("budget-and-budgets", mutate("budget", 3), ["both 'budget' and 'budgets'"]),
    ("negative-budget", mutate("budgets", [4, -1]), ["budgets[1]", ">= 0"]),
    ("empty-budgets", mutate("budgets", []), ["field 'budgets'", "non-empty list"]),
    ("missing-unit-id", mutate("units.0.unit_id", None, delete=True), ["units[0]", "unit_id", "missing"]),
    ("query-without-units", mutate("queries.0.required_unit_ids", None, delete=True), ["queries[0]", "required_unit_ids"]),
    ("top-level-list", lambda d: [d], ["expected a JSON object"]),
    ("overflowing-objective", edit(lambda d: (d.__setitem__("objective", {"saturation": "linear"}),
                                             d["units"][0].__setitem__("weight", 1e308),
                                             d["candidates"][0]["coverage"].__setitem__("u0", 10.0))),
     ["objective would overflow"]),
    ("overflowing-costs", edit(lambda d: [c.__setitem__("cost", 1e308) for c in d["candidates"]]),
     ["costs add up", "scale costs down"]),
]


@pytest.mark.parametrize(("mutation", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_package_rejected_precisely(mutation, needles):
    data = mutation(base())
    with pytest.raises(PackageError) as info:
        Package.from_dict(data, source="case.json")
    message = str(info.value)
    assert message.count("\n") == 0
    assert message.startswith("case.json")
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


def test_base_is_valid():
    Package.from_dict(base())


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('{"format": "memaudit.package/1", "package_id": "t", "units": [', ["not valid JSON", "truncated"]),
        ('{"format": "memaudit.package/1", "package_id": "t", "package_id": "u"}', ["'package_id' appears twice"]),
        ('{"format": "memaudit.package/1", "package_id": "t", "units": [{"unit_id": "u", "weight": NaN}]}', ["NaN is not a JSON number"]),
        ('{"format": "memaudit.package/1", "package_id": "t", "units": [{"unit_id": "u", "weight": Infinity}]}', ["Infinity"]),
        ('', ["not valid JSON"]),
    ],
    ids=["truncated", "duplicate-key", "nan", "infinity", "empty-file"],
)
def test_malformed_json_text(tmp_path, text, needles):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(PackageError) as info:
        load_package(path)
    for needle in needles:
        assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_artifact_line_numbers_in_messages(tmp_path):
    from oracles.packages import write_artifact_by_hand

    write_artifact_by_hand(tmp_path / "pkg")
    path = tmp_path / "pkg" / "candidate_memories.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[2])
    row["cost"] = -3
    lines[2] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PackageError) as info:
        load_package(tmp_path / "pkg")
    assert "candidate_memories.jsonl line 3" in str(info.value)
    assert "field 'cost'" in str(info.value)


def test_cli_reports_bad_input_with_exit_2_and_no_traceback(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(mutate("candidates.0.cost", -1)(base())))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "field 'cost'" in err
    assert main(["info", str(path)]) == 2
    assert "field 'cost'" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "words"), [
    ("MEMAUDIT_MAX_CANDIDATES", "holds 2 candidates, above the limit of 1"),
    ("MEMAUDIT_MAX_NONZEROS", "holds 2 coverage entries, above the limit of 1"),
    ("MEMAUDIT_MAX_UNITS", "holds 2 units, above the limit of 1"),
    ("MEMAUDIT_MAX_BUDGETS", "holds 2 budgets, above the limit of 1"),
])
@pytest.mark.parametrize("escaped_text", [False, True])
def test_text_above_a_limit_is_refused_before_it_is_decoded(monkeypatch, env, words, escaped_text):
    """A package above a limit is refused from counts of its text (a 2,000,001-candidate line
    took 53 s and 2.2 GB to refuse when it was decoded whole first), in the careful validator's
    own words; a text the counter cannot read still gets them from the careful path."""
    from memaudit_fast.model import package as package_module
    from memaudit_fast.model.limits import Limits
    from memaudit_fast.model.spec import _default_locator
    from memaudit_fast.model.validate import _Validator

    data = base()
    data["budgets"] = [1, 2]  # two of each counted thing
    text = json.dumps(data)
    if escaped_text:  # an escaped key: the scanner and the counter leave it to Python
        text = text.replace('"meta"', '"m\u0065ta"') if '"meta"' in text else text[:-1] + ', "n\u006fte": 1}'
    monkeypatch.setenv(env, "1")
    limits = Limits.from_env()
    with pytest.raises(PackageError) as careful:
        _Validator(json.loads(text), "p.json", _default_locator, limits).run()
    assert words in str(careful.value)

    def decoded_whole(*args, **kwargs):
        raise AssertionError("decoded whole")
    if not escaped_text:
        monkeypatch.setattr(package_module, "loads_fast", decoded_whole)
        monkeypatch.setattr(package_module, "parse_careful", decoded_whole)
    with pytest.raises(PackageError) as read:
        package_module.package_from_json(text, source="p.json", limits=limits)
    assert str(read.value) == str(careful.value)


def test_size_limits_give_clear_errors(tmp_path, monkeypatch):
    import gzip as _gzip

    data = base()
    monkeypatch.setenv("MEMAUDIT_MAX_CANDIDATES", "1")
    with pytest.raises(PackageError, match="holds 2 candidates, above the limit of 1; raise it with MEMAUDIT_MAX_CANDIDATES"):
        Package.from_dict(data)
    monkeypatch.delenv("MEMAUDIT_MAX_CANDIDATES")
    monkeypatch.setenv("MEMAUDIT_MAX_NONZEROS", "1")
    with pytest.raises(PackageError, match="2 coverage entries"):
        Package.from_dict(data)
    monkeypatch.delenv("MEMAUDIT_MAX_NONZEROS")
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "100")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError, match="larger than the limit of 100 bytes"):
        load_package(path)
    bomb = tmp_path / "p.json.gz"
    with _gzip.open(bomb, "wt") as handle:
        handle.write(" " * 100_000)
    with pytest.raises(PackageError, match="larger than the limit"):
        load_package(bomb)
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "lots")
    with pytest.raises(Exception, match="not an integer"):
        load_package(path)


def test_info_shows_a_cost_written_minus_zero_as_zero(tmp_path, capsys):
    from memaudit_fast.cli.main import main

    path = tmp_path / "p.json"
    path.write_text('{"format": "memaudit.package/1", "package_id": "p", "budgets": [5], '
                    '"units": [{"unit_id": "u0", "weight": 1.0}], '
                    '"candidates": [{"candidate_id": "c0", "cost": -0.0, "coverage": {"u0": 1.0}}]}')
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "-0.0" not in out and "min_cost" in out
