"""Coverage-guided fuzzing of the package readers and the compiled core (atheris).

Run for a fixed time (CI runs 20 seconds):

    python tests/fuzz/fuzz_readers.py -max_total_time=60 -rss_limit_mb=2048

Every input is fed to the single-file reader, the artifact-directory reader (the bytes are
split into its seven files), the results reader used by ``--resume``, and, when it parses, to
the compiled objective. A well-formed failure is a MemauditError; anything else is a bug,
and the input that found it belongs in tests/test_fuzz_regressions.py.
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
    from memaudit_fast.model.jsonio import loads_strict
    from memaudit_fast.model.package import Package

WORK = Path(tempfile.mkdtemp(prefix="memaudit-fuzz-"))


def check_package_text(text: str) -> None:
    try:
        package = Package.from_dict(loads_strict(text, source="fuzz"), source="fuzz")
    except MemauditError:
        return
    compiled = compile_package(package)
    n = compiled.num_candidates
    selected = list(range(0, n, 2))
    value = compiled.objective(selected)
    assert not math.isnan(value) and value >= -1e-9, value  # finite-or-inf, never NaN or negative


def check_artifact(parts: list[str]) -> None:
    directory = WORK / "artifact"
    directory.mkdir(exist_ok=True)
    for name, text in zip(REQUIRED_FILES, parts + [""] * len(REQUIRED_FILES)):
        (directory / name).write_text(text, encoding="utf-8")
    try:
        read_artifact_dir(directory)
    except MemauditError:
        pass


def check_results(text: str) -> None:
    path = WORK / "results.jsonl"
    path.write_text(text, encoding="utf-8")
    try:
        read_done(path)
    except MemauditError:
        pass


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = fdp.ConsumeUnicodeNoSurrogates(len(data))
    check_package_text(text)
    check_artifact(text.split("\x1e"))
    check_results(text)


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
