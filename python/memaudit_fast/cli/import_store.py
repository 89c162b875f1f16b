"""memaudit import: add an external system's exported store to a package (the union)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..systems import IMPORTERS
from .common import add_subparser, load_one, name_list, number_list


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_subparser(
        subparsers, "import",
        "Import a memory system's exported store into a package: each memory becomes a "
        "candidate of its own group (named like the candidate, <system>:<id>; a package that "
        "already has that candidate id or group name is refused), costed by the package's cost model, "
        "with coverage of the "
        "package's evidence units decided by an arbiter. Writes the union package that "
        "'memaudit score-store' scores. --package may be a union already: imports accumulate.",
        "memaudit import mem0 get_all.json --history history.db --package pkg.json --out union.json",
    )
    p.description = (p.description or "") + (
        "\n\nExports read (field names as the systems write them):\n"
        "  mem0    EXPORT = Memory.get_all() JSON ({\"results\": [{id, memory, created_at, ...}]});\n"
        "          --history: Mem0's SQLite history file (or its rows as JSON/JSONL), so that\n"
        "          UPDATE/DELETE events are kept as memories and invalidations can be credited.\n"
        "          EXPORT may be the history file alone (the store is then rebuilt from it).\n"
        "  letta   EXPORT = JSON with 'blocks' (label, value, limit) and/or 'passages' (text,\n"
        "          created_at, tags, is_deleted); blocks are split into atoms (lines, then\n"
        "          sentences). --passages adds a separate passages file.\n"
        "  amem    EXPORT = A-Mem notes (JSON list, {id: note} or JSONL); --view full|content.\n"
        "  membox, engram  EXPORT = the store directory ('memaudit write'), or its memories.jsonl\n"
        "          with the manifest beside it (it names the conversation).\n"
        "\nArbiter: --judge embedding (default, offline): cosine of the FAISS-nearest units\n"
        "against thresholds calibrated on the package's own annotated candidates (an\n"
        "approximation of an entailment judgement); --judge llm: an OpenAI-compatible model\n"
        "judges each memory against its nearest units. Decisions are cached in --cache."
    )
    p.add_argument("system", choices=IMPORTERS, help="which system wrote the store")
    p.add_argument("export", metavar="EXPORT", help="the exported store (see above; - for stdin)")
    p.add_argument("--package", required=True, metavar="PKG", help="package or union package (.json; - for stdin)")
    p.add_argument("--out", required=True, metavar="UNION.json", help="where to write the union (- for stdout)")
    p.add_argument("--name", metavar="NAME", help="system name in the union (default: SYSTEM)")
    p.add_argument("--replace", action="store_true", help="replace a system of the same name in the union")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--json", action="store_true",
                   help="the import's summary (memories, statuses, cost, arbiter) as one JSON line")
    p.add_argument("--history", metavar="PATH", help="mem0: history SQLite file or JSON/JSONL rows (- for stdin)")
    p.add_argument("--passages", metavar="PATH", help="letta: separate passages file (JSON list or JSONL; - for stdin)")
    p.add_argument("--labels", type=name_list, metavar="L,...", help="letta: keep only these block labels")
    p.add_argument("--view", choices=("full", "content"), default="full",
                   help="amem: note text = content + context + keywords + tags (full) or content")
    p.add_argument("--cost-model", metavar="NAME", help="words, bytes or tokens (default: the package's)")
    p.add_argument("--judge", choices=("embedding", "llm"), default="embedding", help="arbiter judge")
    p.add_argument("--top-k", type=int, default=None, metavar="K",
                   help="embedding judge: nearest units per sentence (default: calibrated among "
                   "1, 2, 3); llm judge: units shown per memory (default 12)")
    p.add_argument("--thresholds", type=number_list, metavar="FULL,PARTIAL",
                   help="embedding judge: cosine cuts instead of calibrating on the package")
    p.add_argument("--cache", metavar="PATH",
                   help="arbiter cache (SQLite; default: .memaudit-arbiter.sqlite beside --out); an "
                   "earlier cache is reused, a new path is created; a symbolic link or a file that is "
                   "not an arbiter cache is refused and left as it is")
    p.add_argument("--no-cache", action="store_true", help="judge everything afresh, store nothing")
    p.add_argument("--embedder", default="auto", metavar="NAME",
                   help="auto (wordllama if installed, else hashing), best (embedding judge: calibrate "
                   "hashing and wordllama, keep the better), wordllama, hashing[:DIM] or st:MODEL; "
                   "embeds memories and units for both judges (default: auto)")
    p.add_argument("--llm-base-url", metavar="URL",
                   help="--judge llm: endpoint (default: $MEMAUDIT_LLM_BASE_URL or $OPENAI_BASE_URL)")
    p.add_argument("--llm-model", metavar="NAME", help="--judge llm: model (default: $MEMAUDIT_LLM_MODEL)")
    p.add_argument("--llm-timeout", type=float, default=60.0, metavar="S", help="seconds per request")
    p.add_argument("--llm-retries", type=int, default=4, metavar="N", help="retries after a transient failure")
    p.set_defaults(run=run)
    return p


def _arbiter(args: argparse.Namespace, package: Any) -> Any:
    from ..systems.arbiter import Arbiter, ArbiterCache, LLMJudge
    from ..systems.union import embedding_arbiter
    from ..writers.embed import get_embedder

    cache = None
    if not args.no_cache:
        cache = ArbiterCache(_cache_path(args), option="--cache")
    if args.judge == "embedding":
        thresholds = (args.thresholds[0], args.thresholds[1]) if args.thresholds else None
        return embedding_arbiter(package, embedder=args.embedder, top_k=args.top_k,
                                 thresholds=thresholds, cache=cache)
    from ..writers.openai_client import OpenAIChatLLM

    llm = OpenAIChatLLM(args.llm_base_url, args.llm_model, timeout=args.llm_timeout,
                        max_retries=args.llm_retries)
    return Arbiter(LLMJudge(llm, get_embedder(args.embedder), top_k=args.top_k or 12), cache)


def _cache_path(args: argparse.Namespace) -> Path:
    if args.cache:
        return Path(args.cache)
    # Beside --out as the user spelt it: a link at --out is replaced, never followed, so its
    # target's directory is no place of this command's (for stdout, the working directory).
    return Path(args.out).absolute().parent / ".memaudit-arbiter.sqlite"


def _check_cache(args: argparse.Namespace, inputs: dict[str, str | None]) -> None:
    """The cache is written during the run: check it before any work, as the outputs are."""
    from ..model.outputs import same_file
    from ..systems.arbiter.cache import check_cache_path

    cache = _cache_path(args)
    named = {**inputs, "--out": args.out}
    for flag, value in named.items():
        if value in (None, "-"):
            continue
        other = Path(value)
        if other.resolve() == cache.resolve() or same_file(other, cache):
            raise UsageError(f"--cache {cache} is also {flag}; the arbiter cache needs a file of its own")
    check_cache_path(cache, option="--cache")


def _remove_new_cache(path: Path) -> None:
    """A refused import leaves nothing behind: the cache this run created goes with it."""
    for extra in ("", "-journal", "-wal", "-shm"):
        try:
            Path(f"{path}{extra}").unlink()
        except OSError:
            pass


def run(args: argparse.Namespace) -> int:
    from ..model.io import save_package
    from ..model.jsonio import check_output_path, dumps
    from ..systems import read_system

    out = Path(args.out)
    inputs = {"EXPORT": args.export, "--package": args.package, "--history": args.history,
              "--passages": args.passages}
    piped = [name for name, value in inputs.items() if value == "-"]
    if len(piped) > 1:
        # Standard input is one stream: two readers would each get part of it, or nothing.
        raise UsageError(f"{' and '.join(piped)} are each '-', but standard input holds one file; pipe one "
                         "of them and give the others as file paths")
    if not args.no_cache:
        _check_cache(args, inputs)
    if args.out != "-":
        check_output_path(out, inputs=tuple(Path(v) for v in inputs.values() if v not in (None, "-")),
                          overwrite=args.force)
    for flag, owner in (("history", "mem0"), ("passages", "letta"), ("labels", "letta")):
        if getattr(args, flag) and args.system != owner:
            raise UsageError(f"--{flag} applies to {owner} exports only")
    if args.thresholds is not None:
        if args.judge != "embedding":
            raise UsageError("--thresholds applies to --judge embedding only")
        if len(args.thresholds) != 2 or args.thresholds[1] > args.thresholds[0]:
            raise UsageError("--thresholds takes two numbers FULL,PARTIAL with PARTIAL <= FULL")
    if args.top_k is not None and args.top_k < 1:
        raise UsageError("--top-k must be at least 1")
    package = load_one(args.package)
    export = read_system(args.system, args.export, history=args.history, passages=args.passages,
                         labels=args.labels, view=args.view)
    for notice in export.notices:
        print(f"note: {notice}", file=sys.stderr)
    from ..model.compiled import as_package
    from ..systems.union import (
        build_union,
        check_conversation,
        check_name_free,
        check_new_ids,
        check_system_name,
    )

    # Every check an input can fail comes before the arbiter, whose cache is a file.
    name = check_system_name(args.name or args.system)
    replacing = name if args.replace else None
    check_conversation(package, export, replacing=replacing)
    check_name_free(as_package(package).data, name, args.replace)
    check_new_ids(as_package(package).data, export, name, replacing=replacing)
    cache_path = None if args.no_cache else _cache_path(args)
    cache_was_there = cache_path is not None and os.path.lexists(cache_path)
    try:
        arbiter = _arbiter(args, package)
        union = build_union(package, export, arbiter, name=args.name, cost_model=args.cost_model,
                            replace=args.replace)
    except BaseException:
        if cache_path is not None and not cache_was_there:
            _remove_new_cache(cache_path)
        raise
    if args.out == "-":
        sys.stdout.write(dumps(union.data) + "\n")
    else:
        save_package(union, out, layout="json", overwrite=args.force)
    summary = sys.stderr if args.out == "-" else sys.stdout
    info = union.data["meta"]["systems"][args.name or args.system]
    arb = info["arbiter"]
    if args.json:
        print(json.dumps({"package_id": union.package_id, "system": args.name or args.system, **info},
                         default=str), file=summary)
        return 0
    statuses = ", ".join(f"{n} {s}" for s, n in info["by_status"].items()) or "none"
    print(f"{union.package_id}: imported {info['memories']} {args.system} memories ({statuses}) "
          f"as '{args.name or args.system}'; store cost {info['store_cost']:g} {info['cost_model']}; "
          f"{info['units_covered']} of {len(union.units)} units covered", file=summary)
    if arb.get("judge") == "embedding":
        cal = arb["calibration"]
        choice = f" ({cal['stats']['embedder_choice']})" if cal["stats"].get("embedder_choice") else ""
        print(f"  arbiter: {arb['embedder']}{choice} cosine, full >= {cal['full']:.3f}, partial >= "
              f"{cal['partial']:.3f} ({cal['method']}); cache {arb['cache_hits']} hits, "
              f"{arb['cache_misses']} judged", file=sys.stderr)
    else:
        print(f"  arbiter: LLM {arb.get('model')}; cache {arb['cache_hits']} hits, "
              f"{arb['cache_misses']} judged", file=sys.stderr)
    print(f"wrote {'stdout' if args.out == '-' else out}", file=summary)
    return 0
