"""Readers: strings, nesting, numbers and duplicate keys, as text that is valid JSON or nearly.

Each case goes through the reader every command uses (single files, JSONL set lines, the
Python dict API) and must give one PackageError naming where the defect is, never another
exception; the CLI must exit 2 with no traceback.
"""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.io import load_package
from memaudit_fast.model.jsonio import loads_strict
from memaudit_fast.model.package import Package, package_from_json
from memaudit_fast.model.sets import iter_set_entries, parse_member


def base() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "t/1", "budgets": [4],
        "experiences": [{"experience_id": "e0", "timestamp": 0, "text": "hello"}],
        "units": [{"unit_id": "u0", "weight": 1.0, "text": "fact"}],
        "candidates": [{"candidate_id": "c0", "experience_id": "e0", "text": "x", "cost": 1,
                        "coverage": {"u0": 1.0}}],
        "queries": [{"query_id": "q0", "required_unit_ids": ["u0"]}],
    }


def text_with(old: str, new: str) -> str:
    text = json.dumps(base())
    assert old in text
    return text.replace(old, new, 1)


SURROGATES = [
    ("package-id", '"package_id": "t/1"', '"package_id": "t\\ud800"', [None, "field 'package_id'", "surrogate"]),
    ("text", '"text": "x"', '"text": "x\\udfff"', ["candidates[0]", "field 'text'", "surrogate"]),
    ("unit-text", '"text": "fact"', '"text": "\\udc00fact"', ["units[0]", "field 'text'", "\\udc00"]),
    ("key", '"text": "hello"', '"\\ud83d": "hello"', ["experiences[0]", "surrogate"]),
    ("meta", '"budgets": [4]', '"budgets": [4], "meta": {"note": ["ok", "\\ud800"]}', ["meta.note[1]"]),
    ("high-low-reversed", '"text": "x"', '"text": "\\ude00\\ud83d"', ["candidates[0]", "surrogate"]),
]


@pytest.mark.parametrize(("old", "new", "needles"), [c[1:] for c in SURROGATES], ids=[c[0] for c in SURROGATES])
def test_lone_surrogates_are_bad_input_naming_the_field(tmp_path, capsys, old, new, needles):
    text = text_with(old, new)
    for raw in (text, text.encode()):
        with pytest.raises(PackageError) as info:
            package_from_json(raw, source="p.json")
        message = str(info.value)
        for needle in needles:
            assert needle is None or needle in message, message
        message.encode("utf-8")  # the message itself is printable text
    path = tmp_path / "p.json"
    path.write_text(text)
    for command in (["validate", str(path)], ["solve", str(path), "--json"], ["info", str(path)],
                    ["convert", str(path), str(tmp_path / "out.json")]):
        code = main(command)
        out, err = capsys.readouterr()
        assert code == 2, (command, out, err)
        assert "Traceback" not in err and "surrogate" in out + err
    assert not (tmp_path / "out.json").exists()


def test_a_valid_surrogate_pair_is_text():
    package = package_from_json(text_with('"text": "x"', '"text": "\\ud83d\\ude00"'))
    assert package.candidates[0]["text"] == "\U0001f600"


def test_surrogates_given_from_python_are_refused_too():
    data = base()
    data["candidates"][0]["text"] = "a\ud800"
    with pytest.raises(PackageError, match="surrogate"):
        Package.from_dict(data, source="api")


@pytest.mark.parametrize("depth", [501, 990, 1000, 5000, 100_000])
def test_deep_nesting_is_bad_input_at_any_depth(tmp_path, capsys, depth):
    text = text_with('"budgets": [4]', '"budgets": [4], "meta": {"x": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(PackageError, match="nest"):
        package_from_json(text, source="deep.json")
    path = tmp_path / "deep.json"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    set_path = tmp_path / "deep.jsonl"
    set_path.write_text(text + "\n" + json.dumps(base()) + "\n")
    entries = list(iter_set_entries([set_path]))
    assert entries[0].error is not None and entries[1].package is not None


def test_unclosed_deep_nesting_and_deep_results_lines(tmp_path):
    with pytest.raises(PackageError):
        loads_strict("[" * 200_000, source="x")
    with pytest.raises(PackageError, match="nest"):
        loads_strict('{"a":' * 3000 + "1" + "}" * 3000, source="results.jsonl", record="line 1")


def test_nesting_within_the_cap_is_kept_and_written_back(tmp_path):
    nested: object = "leaf"
    for _ in range(400):
        nested = [nested]
    data = base()
    data["meta"] = {"deep": nested}
    package = package_from_json(json.dumps(data), source="ok.json")
    assert package.data["meta"] == {"deep": nested}
    from memaudit_fast.model.io import save_package

    save_package(package, tmp_path / "again.json")
    save_package(package, tmp_path / "art")
    assert load_package(tmp_path / "art").data["meta"]["deep"] == nested


NUMBERS = [
    ("1e400", '"cost": 1', '"cost": 1e400', ["field 'cost'", "1e400", "beyond the range"]),
    ("-1e400", '"timestamp": 0', '"timestamp": -1e400', ["experiences[0]", "-1e400"]),
    ("2^53+1", '"cost": 1', '"cost": 9007199254740993', ["field 'cost'", "exactly"]),
    ("400 digits", '"cost": 1', '"cost": ' + "7" * 400, ["field 'cost'", "400 digits"]),
    ("5000 digits", '"cost": 1', '"cost": ' + "7" * 5000, ["5000 digits"]),
    ("NaN", '"weight": 1.0', '"weight": NaN', ["units[0]", "field 'weight'", "NaN"]),
    ("Infinity", '"u0": 1.0', '"u0": Infinity', ["candidates[0]", "coverage", "Infinity"]),
    ("-Infinity", '"budgets": [4]', '"budgets": [-Infinity]', ["budgets", "-Infinity"]),
    ("long decimal", '"cost": 1', '"cost": 1.' + "3" * 500 + "e400", ["field 'cost'", "chars"]),
]


@pytest.mark.parametrize(("old", "new", "needles"), [c[1:] for c in NUMBERS], ids=[c[0] for c in NUMBERS])
def test_numbers_that_no_double_holds_are_bad_input(old, new, needles):
    with pytest.raises(PackageError) as info:
        package_from_json(text_with(old, new), source="n.json")
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert "inf" not in message.replace("Infinity", "").replace("finite", "")  # never "found inf"
    assert len(message) < 400  # long numbers are cut


def test_integers_up_to_2_53_are_exact():
    package = package_from_json(text_with('"cost": 1', '"cost": 9007199254740992'))
    assert package.data["candidates"][0]["cost"] == 2**53


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ('"cost": 1', '"cost": 1, "cost": 2', ["candidates[0]", "field 'cost'", "'cost' appears twice"]),
        ('"weight": 1.0', '"weight": 1.0, "weight": 1.0', ["units[0]", "'weight' appears twice"]),
        ('"u0": 1.0', '"u0": 1.0, "u0": 0.5', ["coverage.u0", "appears twice"]),
        ('"budgets": [4]', '"budgets": [4], "meta": {"a": {"b": 1, "b": 2}}', ["meta.a.b", "appears twice"]),
        ('"text": "x"', '"text": "x", "t\\u0065xt": "y"', ["'text' appears twice"]),
        ('"text": "x"', '"text": "a:b", "t\\u003a": 1, "t\\u003a": 2', ["'t:' appears twice"]),
    ],
    ids=["cost", "weight", "coverage", "meta", "escaped-key", "escaped-colon"],
)
def test_duplicate_keys_name_record_and_field(old, new, needles):
    with pytest.raises(PackageError) as info:
        package_from_json(text_with(old, new), source="d.json")
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_escaped_colons_without_duplicates_are_read():
    package = package_from_json(text_with('"text": "x"', '"text": "a\\u003ab\\u003A:"'))
    assert package.candidates[0]["text"] == "a:b::"


def test_syntax_errors_give_line_and_column(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{\n  "format": "memaudit.package/1",\n  "package_id": "x",\n  "units": [1,,]\n}')
    with pytest.raises(PackageError, match="line 4 column 15"):
        load_package(path)
    member = ("set.jsonl line 7", "text", '{"format": "memaudit.package/1", "package_id": }')
    with pytest.raises(PackageError) as info:
        parse_member(member)
    assert str(info.value).startswith("set.jsonl line 7: column ")


def test_invalid_utf8_byte_is_located(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b'{"format": "memaudit.package/1",\n "package_id": "\xc3("}')
    with pytest.raises(PackageError, match="line 2 column 17.*0xc3"):
        load_package(path)


def test_bad_values_give_record_field_line_and_column(tmp_path):
    text = json.dumps(base(), indent=1)
    text = text.replace('"weight": 1.0', '"weight": Infinity').replace('"cost": 1', '"cost": -1e999')
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(PackageError) as info:
        load_package(path)
    messages = [str(e) for e in info.value.errors]
    lines = text.splitlines()
    weight_line = next(k for k, t in enumerate(lines, 1) if "Infinity" in t)
    cost_line = next(k for k, t in enumerate(lines, 1) if "1e999" in t)
    assert any("units[0]: field 'weight'" in m and f"line {weight_line} column" in m for m in messages), messages
    assert any("candidates[0]: field 'cost'" in m and f"line {cost_line} column" in m for m in messages), messages


def test_duplicate_keys_give_line_and_column_of_the_repeat(tmp_path):
    path = tmp_path / "d.json"
    text = text_with('"cost": 1', '"cost": 1,\n  "cost": 2')
    path.write_text(text)
    with pytest.raises(PackageError) as info:
        load_package(path)
    line = text[: text.index('"cost": 2')].count("\n") + 1
    column = text.index('"cost": 2') - text.rfind("\n", 0, text.index('"cost": 2'))
    assert f"again at line {line} column {column}" in str(info.value)
    assert "field 'cost'" in str(info.value)


def test_duplicate_keys_in_a_set_line_name_the_line_and_column(tmp_path):
    from memaudit_fast.model.jsonio import loads_strict

    with pytest.raises(PackageError, match=r"line 7: field 'a\.b': key 'b' appears twice in one object \(again at line 7 column 16\)"):
        loads_strict('{"a": {"b": 1, "b": 2}}', source="set.jsonl", record="line 7")

