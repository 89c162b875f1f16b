"""The flat layout's import paths still work for one release, and say where things moved."""

from __future__ import annotations

import importlib

import pytest

# old module, a name users imported from it, the module that holds it now
MOVED = [
    ("memaudit_fast.package", "Package", "memaudit_fast.model.package"),
    ("memaudit_fast.package", "load_package", "memaudit_fast.model.io"),
    ("memaudit_fast.artifact", "read_artifact_dir", "memaudit_fast.model.artifact"),
    ("memaudit_fast.package_set", "iter_packages", "memaudit_fast.model.sets"),
    ("memaudit_fast.compiled", "compile_package", "memaudit_fast.model.compiled"),
    ("memaudit_fast.jsonio", "loads_strict", "memaudit_fast.model.jsonio"),
    ("memaudit_fast.limits", "current_limits", "memaudit_fast.model.limits"),
    ("memaudit_fast.examples", "example_package_path", "memaudit_fast.model.examples"),
    ("memaudit_fast.solver", "solve", "memaudit_fast.solve.exact"),
    ("memaudit_fast.milp", "build_milp", "memaudit_fast.solve.milp"),
    ("memaudit_fast.milp", "solve_highs", "memaudit_fast.solve.backends"),
    ("memaudit_fast.milp", "budget_limit", "memaudit_fast.model.compiled"),
    ("memaudit_fast.certify", "certify", "memaudit_fast.solve.certify"),
    ("memaudit_fast.certify", "store_problems", "memaudit_fast.model.compiled"),
    ("memaudit_fast.baselines", "run_writer", "memaudit_fast.evaluate.baselines"),
    ("memaudit_fast.baselines", "ratio_of", "memaudit_fast.evaluate.scoring"),
    ("memaudit_fast.baselines", "exact_opt", "memaudit_fast.solve.exact"),
    ("memaudit_fast.scoring", "score", "memaudit_fast.evaluate.scoring"),
    ("memaudit_fast.ablation", "ablate", "memaudit_fast.evaluate.ablation"),
    ("memaudit_fast.export", "read_records", "memaudit_fast.results.export"),
    ("memaudit_fast.report", "make_report", "memaudit_fast.results.report"),
    ("memaudit_fast.batch", "run_batch", "memaudit_fast.experiments.batch"),
    ("memaudit_fast.reproduce", "ReproduceConfig", "memaudit_fast.experiments.reproduce.config"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED, ids=[f"{o}.{n}" for o, n, _ in MOVED])
def test_old_path_warns_and_gives_the_same_object(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"import {name} from {new}"):
        obj = getattr(module, name)
    assert obj is getattr(importlib.import_module(new), name)


def test_unknown_name_on_an_old_path_is_an_attribute_error() -> None:
    module = importlib.import_module("memaudit_fast.package")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_the_public_face_does_not_warn() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import memaudit_fast as ma

        assert callable(ma.solve) and callable(ma.load_package)
