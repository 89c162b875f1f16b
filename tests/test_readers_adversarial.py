"""Adversarial inputs through the CLI: every command exits 0, 2 or 3, never with a traceback,
and writes nothing outside the output it was given."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from strategies import packages

ODD_TEXT = st.sampled_from([
    "\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u0000", "\\u003a", '\\"', "\\\\", "..", "/", "\\n",
])
ODD_NUMBER = st.sampled_from([
    "1e400", "-1e400", "1e-400", "9007199254740993", "9" * 400, "NaN", "Infinity", "-0", "0.1e1", "1E+2",
])


@st.composite
def adversarial_text(draw) -> bytes:
    text = json.dumps(draw(packages(max_candidates=4, max_units=3)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["string", "number", "nest", "dup", "bytes", "cut"]))
        if kind == "string":
            at = text.find('"', draw(st.integers(0, max(0, len(text) - 1))))  # a cut may leave ''
            if at >= 0:
                text = text[: at + 1] + draw(ODD_TEXT) + text[at + 1:]
        elif kind == "number":
            text = text.replace('"cost": ', f'"cost": {draw(ODD_NUMBER)}, "x": ', 1)
        elif kind == "nest":
            depth = draw(st.sampled_from([10, 499, 501, 1200, 20_000]))
            text = text[:-1] + ', "meta": {"n": ' + "[" * depth + "]" * depth + "}}"
        elif kind == "dup":
            text = text.replace('"candidate_id": ', '"candidate_id": "d", "candidate_id": ', 1)
        elif kind == "cut":
            text = text[: draw(st.integers(0, len(text)))]
    raw = text.encode()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])) + raw[at:]
    return raw


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=adversarial_text(), as_set=st.booleans())
def test_adversarial_inputs_exit_cleanly(tmp_path_factory, capsys, raw, as_set):
    root = tmp_path_factory.mktemp("adv")
    src = root / ("in.jsonl" if as_set else "in.json")
    src.write_bytes(raw + b"\n" + raw if as_set else raw)
    out = root / "out"
    commands = [["validate", str(src)], ["solve", str(src), "--json", "--budget", "2"]]
    if not as_set:
        commands += [["info", str(src)], ["convert", str(src), str(out / "p.json")],
                     ["convert", str(src), str(out / "art")]]
    for command in commands:
        code = main(command)
        _, err = capsys.readouterr()
        assert code in (0, 2, 3), (command, err)
        assert "Traceback" not in err and "internal error" not in err, err
    written = {str(p.relative_to(root)) for p in root.rglob("*")}
    assert written <= {src.name, "out", "out/p.json", "out/art"} | {f"out/art/{n}" for n in os.listdir(out / "art")} \
        if (out / "art").is_dir() else written <= {src.name, "out", "out/p.json"}
    assert not any(Path(p).name.endswith(".tmp") for p in written)
