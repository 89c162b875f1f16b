"""memaudit_fast: exact package-oracle scoring of budgeted long-term memory writing."""

from __future__ import annotations

from .errors import CertificationError, MemauditError, PackageError, SolverError, UsageError
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


def __getattr__(name: str) -> object:
    # ``WRITERS`` was renamed: it clashed with the memory writers' registry of the same name.
    if name == "WRITERS":
        import warnings

        warnings.warn("memaudit_fast.WRITERS is deprecated; use memaudit_fast.BASELINE_WRITERS "
                      "(the memory writers are memaudit_fast.writers.STORE_WRITERS)",
                      DeprecationWarning, stacklevel=2)
        return BASELINE_WRITERS
    raise AttributeError(f"module 'memaudit_fast' has no attribute {name!r}")
