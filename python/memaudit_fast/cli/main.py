"""The ``memaudit`` command: one module per subcommand, each with ``add_parser`` and ``run``.

``main(argv)`` returns the exit code so it can be tested without a subprocess; ``entry`` is
the console script. The exit codes are :mod:`.common`'s, the same for every command: 0 ok,
2 bad input or usage, 3 finished with failures, 1 internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import MemauditError, UsageError
from .common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK

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


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: an argument it does not know is reported by it, with its own
    usage line (argparse would hand it up to ``memaudit``'s, which names no option of the
    subcommand)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)} (see '{self.prog} --help')")
        return namespace, extras


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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"{__package__}.{name}")
        module.add_parser(sub)
    return parser


class _ClosedStdin(io.TextIOBase):
    """Standard input closed where the command was started (``<&-``): reading it is bad usage,
    said plainly, in text and in bytes (``buffer``)."""

    def _refuse(self, *args: Any) -> Any:
        raise UsageError("standard input is closed (the command was started with <&-): give the "
                         "input's file name instead of -, or pipe it in")

    read = readline = peek = read1 = readlines = _refuse

    @property
    def buffer(self) -> Any:
        return self

    def fileno(self) -> int:
        raise io.UnsupportedOperation("standard input is closed")

    def isatty(self) -> bool:
        return False


def _closed_streams() -> None:
    """Streams closed where the command was started (``>&-``, ``<&-``): Python then has None in
    their place, and the commands' direct writes failed as internal errors. Output to a closed
    stream is dropped, as ``print`` drops it; reading a closed stdin is refused."""
    if sys.stdin is None:
        sys.stdin = _ClosedStdin()
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - for the process


def _printable_streams() -> None:
    """Never crash on printing: text a terminal cannot show comes out escaped."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
# One line per subcommand for bare ``memaudit`` (each --help says the rest).
SHORT_HELP = {
    "demo": "the built-in example end to end",
    "validate": "check packages, artifact directories and sets",
    "info": "counts, budgets, costs, weights rule and saturation of a package",
    "convert": "single-file JSON <-> artifact directory, without loss",
    "solve": "exact OPT(B) of packages, optionally certified by a MILP",
    "sweep": "OPT and every baseline writer's ratio over budgets; ablations",
    "score": "F(X) / OPT(B) of a store chosen elsewhere",
    "certify": "check earlier results against an independent MILP",
    "generate": "MEMAUDIT-Small synthetic packages",
    "natural": "natural packages from LoCoMo dialogue",
    "batch": "parallel, resumable scoring of package sets",
    "export": "results as a table (Parquet, CSV, TSV, Feather, JSON lines)",
    "report": "figures and an HTML page from results",
    "reproduce": "the paper's findings, next to the paper's figures",
    "write": "build Membox, ENGRAM or flat stores from LoCoMo",
    "retrieve": "answer a question from a written store",
    "eval-retrieval": "evidence recall of the writers on LoCoMo",
    "import": "an external memory system's store into a union package",
    "score-store": "extraction vs selection ratios over OPT(union)",
    "train-estimator": "fit the write-time value estimator of the coverage-blind writers",
}


def print_short_usage(parser: argparse.ArgumentParser) -> None:
    """Bare ``memaudit``: the subcommands, one line each, on stderr."""
    lines = ["usage: memaudit COMMAND [options]   ('memaudit COMMAND --help' for one, --version)", "",
             "commands:"]
    commands = _commands(parser)
    lines += [f"  {name:<15} {SHORT_HELP.get(name) or _first_clause(sub)}" for name, sub in commands.items()]
    print("\n".join(lines), file=sys.stderr)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _first_clause(sub: argparse.ArgumentParser) -> str:
    """A subcommand without a line in SHORT_HELP: the first clause of its own help."""
    return (sub.description or "").split(". ")[0].split(" (")[0][:70]


def main(argv: Sequence[str] | None = None) -> int:
    _closed_streams()
    _printable_streams()
    try:
        parser = build_parser()  # imports the commands' modules: a second or so
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    except KeyboardInterrupt:  # before anything started: nothing to keep
        print("memaudit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not getattr(args, "run", None):
        print_short_usage(parser)
        return EXIT_BAD_INPUT
    name = f"memaudit {args.command}"
    try:
        return int(args.run(args))
    except MemauditError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except UnicodeError as exc:  # text that a reader did not check: bad input, said plainly
        print(f"{name}: error: not valid UTF-8 text ({exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:
        print(f"{name}: error: the input nests too deeply to process", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the environment, not the input's content: say what and where
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{name}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - a bug: one line, and the traceback on request
        import os
        import traceback

        if os.environ.get("MEMAUDIT_DEBUG"):
            traceback.print_exc()
        print(f"{name}: internal error: {type(exc).__name__}: {exc} (a bug; MEMAUDIT_DEBUG=1 shows "
              "the traceback)", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> None:
    import signal

    from ..errors import raise_interrupt

    # SIGTERM (kill, a job scheduler, GNU timeout) and SIGHUP (the terminal closed) stop a
    # command as Ctrl-C does: exit 130, what finished kept and no temporary file left, not an
    # exit by the signal with no word (a batch met SIGTERM in the moments after its run).
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)  # (no SIGHUP on Windows)
        if number is not None and signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, raise_interrupt)
    code = main()
    ray_runner = sys.modules.get("memaudit_fast.experiments.ray_runner")
    if ray_runner is not None and ray_runner.start_abandoned():
        # A batch stopped while its local Ray was still starting: exit without waiting for
        # ray.init, and without Python's exit handlers, Ray's among them, which would shut
        # down a Ray still being started. Ray's processes die with this one.
        ray_runner.reap_abandoned()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
