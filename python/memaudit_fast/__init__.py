"""memaudit_fast: exact package-oracle scoring of budgeted long-term memory writing."""

from __future__ import annotations

from .ablation import ablate
from .baselines import WRITERS, run_writer, run_writers
from .certify import certify, certify_results
from .compiled import CompiledPackage, compile_package
from .errors import CertificationError, MemauditError, PackageError, SolverError, UsageError
from .package import Package, load_package, save_package
from .package_set import iter_packages, write_package_set
from .scoring import score
from .solver import SolveResult, solve

__all__ = [
    "WRITERS",
    "CertificationError",
    "CompiledPackage",
    "MemauditError",
    "Package",
    "PackageError",
    "SolveResult",
    "SolverError",
    "UsageError",
    "ablate",
    "certify",
    "certify_results",
    "compile_package",
    "iter_packages",
    "load_package",
    "run_writer",
    "run_writers",
    "save_package",
    "score",
    "solve",
    "write_package_set",
]
__version__ = "0.1.0"
