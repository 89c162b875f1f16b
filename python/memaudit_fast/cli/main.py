"""The ``memaudit`` command: one module per subcommand, each with ``add_parser`` and ``run``.

``main(argv)`` returns the exit code (0 ok, 2 bad input, 1 internal error) so it can be
tested without a subprocess; ``entry`` is the console script.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..errors import MemauditError

# Subcommand modules under memaudit_fast.cli, in --help order.
SUBCOMMANDS = [
    "demo",
    "validate",
    "info",
    "convert",
    "solve",
    "sweep",
    "score",
    "certify",
    "generate",
    "natural",
    "batch",
    "export",
    "report",
    "reproduce",
    "write",
    "retrieve",
    "eval_retrieval",
    "import_store",
    "score_store",
    "train_estimator",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memaudit",
        description=(
            "Exact package-oracle scoring of budgeted long-term memory writing (MEMAUDIT). "
            "Run 'memaudit demo' to solve the built-in example end to end."
        ),
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"memaudit_fast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"{__package__}.{name}")
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except MemauditError as exc:
        print(f"memaudit {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"memaudit {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def entry() -> None:
    sys.exit(main())
