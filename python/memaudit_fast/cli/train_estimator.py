"""memaudit train-estimator: fit the visible-feature value estimator of the estimated writers."""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..evaluate.estimators import fit_ridge
from ..model.outputs import OutputPath
from ..model.sets import iter_packages
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "train-estimator",
        "Fit a ridge regression from features a writer sees at write time (representation, cost, "
        "position in the stream, text length, cue words, confidence when given) to each candidate's "
        "true singleton value F({u}), on the packages of SET. A seeded --test-frac of the packages is "
        "held out and the fit on it reported; the model lists every training package (id and "
        "content digest) and refuses to score any of them. Use it with --estimator MODEL.json on "
        "sweep, batch and score (writers estimated_greedy, estimated_gvt). Exit code: 0 ok, 2 bad input.",
        "memaudit train-estimator train.jsonl.gz --out model.json --test-frac 0.2",
    )
    p.add_argument("sets", nargs="+", metavar="SET", help="training packages or package sets")
    p.add_argument("--out", required=True, metavar="MODEL.json", help="where to write the model")
    p.add_argument("--alpha", type=float, default=1.0,
                   help="ridge penalty on standardised features, finite and >= 0 (default 1; 0 = ordinary "
                   "least squares, the minimum-norm fit when features are collinear)")
    p.add_argument("--test-frac", type=float, default=0.2,
                   help="fraction of the packages held out to report the fit (default 0.2; 0 = none)")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split (>= 0; default 0)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file (never an input, never through a symbolic link)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.test_frac < 1:
        raise UsageError(f"--test-frac must be in [0, 1), got {args.test_frac}")
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: expected a number >= 0")
    if not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise UsageError(f"--alpha must be finite and >= 0, got {args.alpha}")
    # Checked before the sets are read: a refusal costs nothing, and the model never replaces
    # a training set or a package a set directory holds.
    out = OutputPath(args.out, inputs=input_files(args.sets), force=args.force).check()
    packages = list(iter_packages(args.sets))
    ids = [p.package_id for p in packages]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UsageError(f"package ids repeat in the training sets ({', '.join(repeated[:5])}); ids must be unique")
    order = sorted(range(len(packages)), key=ids.__getitem__)
    random.Random(args.seed).shuffle(order)
    n_test = round(args.test_frac * len(packages)) if len(packages) > 1 else 0
    test = [packages[i] for i in order[:n_test]]
    train = [packages[i] for i in order[n_test:]]
    if packages and not train:
        raise UsageError(f"--test-frac {args.test_frac:g} holds out all {len(packages)} packages, leaving none "
                         "to train on; give a smaller --test-frac or more packages")
    model = fit_ridge(train, alpha=args.alpha, test=test, sets=[str(s) for s in args.sets])
    model.split = {"seed": args.seed, "test_frac": args.test_frac, "train": len(train), "test": len(test)}
    data = model.to_json()
    out.write_text(json.dumps(data, indent=1) + "\n")
    r2 = model.test.get("r2")
    print(f"trained on {len(train)} packages ({model.train['candidates']} candidates), "
          f"train R^2 {_fmt(model.train.get('r2'))}, held-out {len(test)} packages R^2 {_fmt(r2)} -> {out.path}",
          file=sys.stderr)
    return 0


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def input_files(sets: list[str]) -> tuple[Path, ...]:
    """The paths the sets are read from: each set, and the entries of a set directory (one
    level, and the files of an artifact directory in it), so no output lands on one of them."""
    paths: list[Path] = []
    for name in sets:
        path = Path(name)
        paths.append(path)
        if path.is_dir() and not path.is_symlink():
            for entry in _entries(path):
                paths.append(entry)
                if entry.is_dir() and not entry.is_symlink():
                    paths.extend(_entries(entry))
    return tuple(paths)


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except OSError:  # unreadable: the reader says so, with the set's name
        return []
