"""memaudit_fast: exact package-oracle scoring of budgeted long-term memory writing."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .errors import CertificationError, MemauditError, PackageError, SolverError, UsageError

if TYPE_CHECKING:
    from .evaluate.ablation import ablate
    from .evaluate.baselines import BASELINE_WRITERS, run_writer, run_writers
    from .evaluate.scoring import score
    from .model.compiled import CompiledPackage, compile_package
    from .model.examples import example_package, example_package_path
    from .model.io import load_package, save_package
    from .model.package import Package
    from .model.sets import iter_packages, write_package_set
    from .progress import Progress
    from .results.frame import read_results, results_to_frame, results_to_table
    from .solve.certify import certify, certify_results
    from .solve.exact import CancelToken, SolveResult, solve

# The public API, each name imported from its module on first use: importing the package (as
# every ``memaudit`` command and ``memaudit_fast.errors`` do) loads neither numpy nor the solver
# until a name that needs them is used (0.2 s at every start, and a Ctrl-C in that time ended
# in a traceback).
_LAZY = {
    "ablate": ".evaluate.ablation",
    "BASELINE_WRITERS": ".evaluate.baselines",
    "run_writer": ".evaluate.baselines",
    "run_writers": ".evaluate.baselines",
    "score": ".evaluate.scoring",
    "CompiledPackage": ".model.compiled",
    "compile_package": ".model.compiled",
    "example_package": ".model.examples",
    "example_package_path": ".model.examples",
    "load_package": ".model.io",
    "save_package": ".model.io",
    "Package": ".model.package",
    "iter_packages": ".model.sets",
    "write_package_set": ".model.sets",
    "Progress": ".progress",
    "read_results": ".results.frame",
    "results_to_frame": ".results.frame",
    "results_to_table": ".results.frame",
    "certify": ".solve.certify",
    "certify_results": ".solve.certify",
    "CancelToken": ".solve.exact",
    "SolveResult": ".solve.exact",
    "solve": ".solve.exact",
}



class _Package(types.ModuleType):
    """``solve`` and ``certify`` name functions of the API and also a subpackage and an old
    module path: loading one of those binds its name in the package to the module (the import
    system does so after loading it), which would hide the function. Those bindings are
    refused; the modules stay reachable by import."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("solve", "certify") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "BASELINE_WRITERS",
    "CancelToken",
    "CertificationError",
    "CompiledPackage",
    "MemauditError",
    "Package",
    "PackageError",
    "Progress",
    "SolveResult",
    "SolverError",
    "UsageError",
    "ablate",
    "certify",
    "certify_results",
    "compile_package",
    "example_package",
    "example_package_path",
    "iter_packages",
    "load_package",
    "read_results",
    "results_to_frame",
    "results_to_table",
    "run_writer",
    "run_writers",
    "save_package",
    "score",
    "solve",
    "write_package_set",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # ``WRITERS`` was renamed: it clashed with the memory writers' registry of the same name.
    if name == "WRITERS":
        import warnings

        warnings.warn("memaudit_fast.WRITERS is deprecated; use memaudit_fast.BASELINE_WRITERS "
                      "(the memory writers are memaudit_fast.writers.STORE_WRITERS)",
                      DeprecationWarning, stacklevel=2)
        return __getattr__("BASELINE_WRITERS")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memaudit_fast' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
