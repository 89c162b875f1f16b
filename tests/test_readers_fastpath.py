"""The fast decoder answers only for text it proves it read exactly; the rest is the careful
decoder's (same package, same message)."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.errors import PackageError
from memaudit_fast.model.jsonio import dumps, loads_fast, loads_strict
from memaudit_fast.model.package import package_from_json
from memaudit_fast.suites.small import generate_package


def compact(data: dict) -> bytes:
    return (dumps(data, indent=None) + "\n").encode()


@pytest.mark.parametrize("number", ["18446744073709551616", "-9223372036854775809", "9" * 30, "-0",
                                    "1E+2", "0.1e1"])
def test_numbers_keep_their_value_in_free_form_fields(number):
    raw = compact(dict(generate_package("base", seed=1), meta={})).replace(b'"meta":{}', b'"meta":{"n":' + number.encode() + b"}")
    expected = loads_strict(raw, source="x")["meta"]["n"]
    got = loads_fast(raw, 500)
    assert got is not None and got["meta"]["n"] == expected and type(got["meta"]["n"]) is type(expected)
    assert package_from_json(raw, source="x").data["meta"]["n"] == expected


@pytest.mark.parametrize("number", ["1e-400", "9007199254740993.0", "0." + "0" * 400 + "1"])
def test_a_number_a_double_cannot_keep_is_refused_in_free_form_fields_too(number):
    raw = compact(dict(generate_package("base", seed=1), meta={})).replace(b'"meta":{}', b'"meta":{"n":' + number.encode() + b"}")
    assert loads_fast(raw, 500) is None  # the careful reader judges it
    with pytest.raises(PackageError, match="meta.n"):
        package_from_json(raw, source="x")


@pytest.mark.parametrize("number", ["18446744073709551616", "9007199254740993", "1e400"])
def test_a_cost_beyond_a_double_gets_the_careful_message(number):
    data = generate_package("base", seed=1)
    raw = compact(data)
    first = json.dumps(data["candidates"][0]["cost"])
    bad = raw.replace(b'"cost":' + first.encode(), b'"cost":' + number.encode(), 1)
    assert bad != raw
    with pytest.raises(PackageError) as info:
        package_from_json(bad, source="set.jsonl line 1", record="")
    assert "candidates[0]" in str(info.value) and "'cost'" in str(info.value)


@pytest.mark.parametrize("edit", [
    (b'"package_id":', b'"package_id":"again","package_id":'),  # a repeated key
    (b'"meta":{', b'"meta":{"x":1,"x":1,'),  # the same key and value twice
])
def test_repeated_keys_are_refused_on_every_path(edit):
    raw = compact(generate_package("base", seed=2))
    bad = raw.replace(*edit, 1)
    assert bad != raw and loads_fast(bad, 500) is None
    with pytest.raises(PackageError, match="appears twice"):
        package_from_json(bad, source="x")


def test_text_of_another_writer_takes_the_counting_path():
    data = generate_package("base", seed=3)
    spaced = json.dumps(data, indent=2).encode()  # spacing that no compact encoder writes back
    assert loads_fast(spaced, 500) == data
    assert loads_fast(spaced.replace(b'"package_id":', b'"package_id": "x", "package_id":', 1), 500) is None
