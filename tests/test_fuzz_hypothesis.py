"""Valid and subtly invalid packages: a reader accepts or raises PackageError, nothing else."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.errors import MemauditError, PackageError
from memaudit_fast.experiments.batch import read_done
from memaudit_fast.model.artifact import read_artifact_dir
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.io import save_package
from memaudit_fast.model.package import Package
from strategies import packages

ODD_VALUES = st.sampled_from(
    [None, True, -1, -0.0, 1e308, 1e-308, "", "x", [], {}, [1, 2], {"a": 1}, 2**63, "NaN", 0.5]
)


@st.composite
def mutated(draw):
    data = draw(packages(max_candidates=6, max_units=4))
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        # Walk to a random container and change, add or delete one entry.
        target = data
        path = []
        while True:
            keys = list(target.keys()) if isinstance(target, dict) else list(range(len(target)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = target[key]
            if isinstance(child, (dict, list)) and child and draw(st.booleans()):
                path.append(key)
                target = child
                continue
            action = draw(st.sampled_from(["set", "delete"]))
            if action == "delete":
                del target[key]
            else:
                # A copy: sampled_from hands out the same list and dict each time, and a shared
                # container changed in place could come to hold itself (a cycle no JSON has).
                target[key] = copy.deepcopy(draw(ODD_VALUES))
            break
    return data


@settings(max_examples=150)
@given(mutated())
def test_mutated_package_is_accepted_or_rejected_cleanly(data):
    try:
        package = Package.from_dict(data, source="m.json")
    except PackageError as exc:
        assert "m.json" in str(exc)
        return
    compiled = compile_package(package)
    assert compiled.objective(list(range(compiled.num_candidates))) >= 0


@settings(max_examples=40)
@given(mutated(), st.sampled_from(["evidence_units.jsonl", "candidate_memories.jsonl", "coverage_matrix.jsonl", "queries.jsonl"]),
       st.integers(0, 200))
def test_damaged_artifact_directory_is_rejected_cleanly(tmp_path_factory, data, name, cut):
    try:
        package = Package.from_dict(data)
    except PackageError:
        return
    directory = tmp_path_factory.mktemp("a") / "pkg"
    save_package(package, directory)
    path = directory / name
    text = path.read_text()
    path.write_text(text[: min(cut, len(text))])  # truncate one file anywhere
    try:
        read_artifact_dir(directory)
    except MemauditError:
        pass


@settings(max_examples=60)
@given(st.lists(st.one_of(st.text(max_size=30), st.dictionaries(st.sampled_from(["source", "budget", "x"]),
                                                               st.one_of(st.none(), st.integers(), st.text(max_size=5))).map(json.dumps)),
                max_size=5))
def test_results_file_for_resume_is_read_or_rejected_cleanly(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("r") / "r.jsonl"
    path.write_text("\n".join(lines))
    try:
        done, errored, _ = read_done(path)
    except PackageError:
        return
    assert isinstance(done, dict) and isinstance(errored, set)
