"""memaudit eval-retrieval: evidence-turn recall of the writers on LoCoMo at equal word budgets."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.outputs import OutputPath
from ..progress import Progress
from .common import add_quiet, add_subparser, name_list
from .write import add_model_options, make_llm


def _int_list(text: str) -> list[int]:
    try:
        values = [int(p) for p in name_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected integers like 100,200,400") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "eval-retrieval",
        "Build each writer's store for every LoCoMo conversation and report, per QA category, "
        "the fraction of evidence turns found in the context each store retrieves within the "
        "same word budget (first fit in rank order). 'membox' reports two systems: with trace "
        "expansion and boxes only ('membox-boxes'). 'flat' ranks raw turns with FAISS.",
        "memaudit eval-retrieval --locomo locomo10.json --writers membox,engram,flat "
        "--budgets 100,200,400,800",
    )
    p.add_argument("--locomo", required=True, metavar="PATH", help="LoCoMo JSON file")
    p.add_argument("--writers", type=name_list, default=["membox", "engram", "flat"],
                   metavar="W[,W...]", help="from membox, engram, flat (default: all three)")
    p.add_argument("--budgets", type=_int_list, default=[100, 200, 400, 800],
                   metavar="WORDS[,...]", help="context budgets in words (default: 100,200,400,800)")
    p.add_argument("--sample-id", type=name_list, metavar="ID[,ID...]",
                   help="only these conversations (default: all)")
    p.add_argument("--categories", type=_int_list, metavar="N[,N...]",
                   help="LoCoMo categories to keep: 1 multi-hop, 2 temporal, 3 open-domain, "
                   "4 single-hop, 5 adversarial (default: all)")
    p.add_argument("--index-turns", action="store_true",
                   help="membox: rank boxes by their raw turns too, not only topic, events "
                   "and keywords")
    p.add_argument("--json", action="store_true",
                   help="print the full results as one JSON document instead of the table")
    p.add_argument("--out", metavar="PATH", help="also write the full results as JSON to PATH (- for stdout)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file (never the --locomo input, never through a symbolic link)")
    add_quiet(p)
    add_model_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..writers.builders import STORE_WRITERS
    from ..writers.embed import get_embedder
    from ..writers.locomo_turns import load_locomo
    from ..writers.membox import MemboxParams
    from ..writers.retrieval_eval import evaluate_retrieval

    if any(b <= 0 for b in args.budgets):
        raise UsageError("--budgets must be positive word counts")
    if not args.writers:
        raise UsageError(f"--writers is empty; give one or more of {', '.join(STORE_WRITERS)}")
    unknown = [w for w in args.writers if w not in STORE_WRITERS]
    if unknown:
        raise UsageError(f"--writers: unknown {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(STORE_WRITERS)}")
    if args.sample_id == []:  # "--sample-id ''": not "every conversation"
        raise UsageError("--sample-id is empty; give one or more sample ids, or leave it out for all")
    if args.out == "-" and args.json:
        raise UsageError("--json prints to stdout already; give --out a file name")
    out = None
    if args.out and args.out != "-":  # before the long run, not after
        out = OutputPath(args.out, inputs=(Path(args.locomo),), force=args.force).check()
    start = time.perf_counter()
    conversations = load_locomo(args.locomo, args.sample_id)
    _note_unresolved(args.locomo, conversations)
    embedder = get_embedder(args.embedder)
    with Progress("eval-retrieval", len(conversations) * len(dict.fromkeys(args.writers)), unit="store",
                  quiet=args.quiet) as bar:
        result = evaluate_retrieval(
            conversations, embedder, writers=args.writers, budgets=args.budgets,
            llm_factory=lambda emb: make_llm(args, emb), categories=args.categories,
            progress=lambda msg: bar.update(),
            writer_params={"membox": MemboxParams(index_turns=True)} if args.index_turns else None,
        )
    seconds = time.perf_counter() - start
    body = result.to_dict()
    body["seconds"] = round(seconds, 2)
    document = json.dumps(body, indent=1) + "\n"
    builds = ", ".join(f"{w} {s:.1f} s" for w, s in result.build_seconds.items())
    summary = (f"{len(result.conversations)} conversation(s), embedder {result.embedder}, "
               f"LLM {result.llm}; build time {builds}; total {seconds:.1f} s; "
               f"{result.skipped_questions} question(s) without evidence skipped")
    if args.json:
        sys.stdout.write(document)
    elif args.out != "-":
        print(result.table())
        print(f"\n{summary}")
    if out is not None:
        out.write_text(document)
    elif args.out == "-":
        sys.stdout.write(document)
        sys.stdout.flush()
    return 0


def _note_unresolved(source: str, conversations: list[Any]) -> None:
    """Evidence ids that name no turn are left out of recall (the public LoCoMo file has a few);
    said on stderr, with where they are, rather than dropped without a word."""
    places = [f"{conv.sample_id} qa[{i}]" for conv in conversations for i, qa in enumerate(conv.qa)
              if qa.unresolved_evidence]
    if places:
        total = sum(qa.unresolved_evidence for conv in conversations for qa in conv.qa)
        shown = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
        print(f"note: {source}: {total} evidence id(s) name no turn of their conversation and are left out "
              f"of recall ({shown})", file=sys.stderr)
