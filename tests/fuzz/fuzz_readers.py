"""Coverage-guided fuzzing of the package readers and the compiled core (atheris).

Run for a fixed time (CI runs 20 seconds):

    python tests/fuzz/fuzz_readers.py -max_total_time=60 -rss_limit_mb=2048

Every input is fed, as raw bytes (so invalid UTF-8 and lone surrogate escapes reach them), to
every reader: the single-file reader (the core's scanner, the fast and the careful paths), a JSONL set and a gzip set, the
artifact-directory reader (the bytes are split into its seven files), the results reader used
by ``--resume``, the writer-export reader, and, when it parses, to the compiled objective and
back through the writers. A well-formed failure is a MemauditError; anything else is a bug,
and the input that found it belongs in tests/test_readers_*.py.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import json  # noqa: F401 - instrumented for coverage of the strict hooks

    from memaudit_fast.errors import MemauditError
    from memaudit_fast.experiments.batch import read_done
    from memaudit_fast.model.artifact import REQUIRED_FILES, read_artifact_dir
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.model.io import save_package
    from memaudit_fast.model.jsonio import loads_strict
    from memaudit_fast.model.package import Package, package_from_json
    from memaudit_fast.model.sets import iter_set_entries
    from memaudit_fast.writers.export import read_export

WORK = Path(tempfile.mkdtemp(prefix="memaudit-fuzz-"))


def check_package_bytes(raw: bytes) -> None:
    from memaudit_fast import _core

    compact = _core.compact_json(raw)  # what batch keys content by: idempotent, never longer
    assert len(compact) <= len(raw) and _core.compact_json(compact) == compact
    try:
        package = package_from_json(raw, source="fuzz")
    except MemauditError:
        return
    # The careful path must agree that this package is valid, and build the same arrays
    # (the package may have come from the core's scanner or from the msgspec fast path).
    careful = Package.from_dict(loads_strict(raw, source="fuzz"), source="fuzz", max_errors=1)
    compiled = compile_package(package)
    again = compile_package(careful)
    for name in ("cost", "group_of", "weight", "indptr", "indices", "values", "times", "saturation_of"):
        assert getattr(compiled, name).tobytes() == getattr(again, name).tobytes(), name
    assert (compiled.candidate_ids, compiled.group_ids, compiled.unit_ids, compiled.budgets) == \
        (again.candidate_ids, again.group_ids, again.unit_ids, again.budgets)
    assert package.data == careful.data
    n = compiled.num_candidates
    selected = list(range(0, n, 2))
    value = compiled.objective(selected)
    assert not math.isnan(value) and value >= -1e-9, value  # finite-or-inf, never NaN or negative
    try:
        save_package(package, WORK / "out.json", overwrite=True)
        save_package(package, WORK / "out_art", overwrite=True)
    except MemauditError:
        return


def check_sets(raw: bytes) -> None:
    import gzip

    for name, data in (("set.jsonl", raw), ("set.jsonl.gz", gzip.compress(raw, mtime=0))):
        path = WORK / name
        path.write_bytes(data)
        for entry in iter_set_entries([path]):
            assert (entry.package is None) != (entry.error is None)
            str(entry.error or entry.label).encode("utf-8")  # messages are printable


def check_export(raw: bytes) -> None:
    path = WORK / "memories.jsonl"
    path.write_bytes(raw)
    try:
        for _ in read_export(path):
            pass
    except MemauditError:
        pass


def check_artifact(parts: list[bytes]) -> None:
    directory = WORK / "artifact"
    directory.mkdir(exist_ok=True)
    for name, data in zip(REQUIRED_FILES, parts + [b""] * len(REQUIRED_FILES)):
        (directory / name).write_bytes(data)
    try:
        read_artifact_dir(directory)
    except MemauditError:
        pass


def check_results(raw: bytes) -> None:
    path = WORK / "results.jsonl"
    path.write_bytes(raw)  # raw bytes: the --resume reader must refuse bad UTF-8 cleanly too
    try:
        read_done(path)
    except MemauditError:
        pass


def one_input(data: bytes) -> None:
    check_package_bytes(data)
    check_sets(data)
    check_artifact(data.split(b"\x1e"))
    check_results(data)
    check_export(data)


def main() -> None:
    # The seeds are copied to a scratch corpus: libFuzzer writes new inputs into the first
    # corpus directory, and the checked-in seeds stay as they are.
    if not any(Path(a).is_dir() for a in sys.argv[1:]):
        import shutil

        corpus = WORK / "corpus"
        shutil.copytree(Path(__file__).with_name("corpus"), corpus)
        sys.argv.append(str(corpus))
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
