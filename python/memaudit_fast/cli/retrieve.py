"""memaudit retrieve: ask a written store a question and print the retrieved context."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import UsageError
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "retrieve",
        "Answer a question from a store built by 'memaudit write' with the context its writer "
        "retrieves: Membox boxes (plus trace events), ENGRAM records merged from its three "
        "stores, or flat turns. STORE_DIR is a store, or a directory holding exactly one.",
        'memaudit retrieve stores/membox/conv-26 "When did Caroline go to the LGBTQ support group?" -k 3',
    )
    p.add_argument("store", metavar="STORE_DIR")
    p.add_argument("question")
    p.add_argument("-k", type=int, metavar="K",
                   help="membox: boxes (default 3); engram: records kept (default 25); "
                   "flat: turns (default 10)")
    p.add_argument("--budget", type=word_budget, metavar="WORDS",
                   help="instead of -k: fill this many context words in rank order (a whole number >= 1)")
    p.add_argument("--no-trace-expansion", action="store_true",
                   help="membox: boxes only, without the events of linked traces")
    p.add_argument("--speaker", metavar="NAME", help="engram: only this speaker's records")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def word_budget(text: str) -> int:
    """Parse ``--budget WORDS`` (argparse type): a whole number of words, at least 1."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of words; give e.g. --budget 200") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the budget must be at least 1 word; give e.g. --budget 200")
    return value


def run(args: argparse.Namespace) -> int:
    from ..writers.builders import open_store
    from ..writers.store import find_stores, within_budget

    for name, text in (("the question", args.question), ("--speaker", args.speaker)):
        bad = next((i for i, ch in enumerate(text or "") if 0xD800 <= ord(ch) <= 0xDFFF), None)
        if bad is not None:
            # Bytes the locale could not decode: kept, they would be printed as lone surrogates.
            raise UsageError(f"{name} is not UTF-8 text (an undecodable byte at character {bad}); "
                             "give it as UTF-8")
    stores = find_stores(args.store)
    if len(stores) != 1:
        found = ", ".join(s.name for s in stores) or "none"
        raise UsageError(f"{args.store} must be one store; stores found inside: {found}")
    if args.k is not None and args.k <= 0:
        raise UsageError("-k must be positive")
    store: Any = open_store(stores[0])
    options: dict[str, Any] = {}
    if store.writer == "membox" and args.no_trace_expansion:
        options["expand_traces"] = False
    if store.writer == "engram" and args.speaker:
        options["speaker"] = args.speaker
    if args.budget is not None:
        items = within_budget(store.ranked_context(args.question, **options), args.budget)
    else:
        items = store.retrieve(args.question, args.k, **options)
    if args.json:
        print(json.dumps({
            "store": str(stores[0]), "writer": store.writer, "sample_id": store.sample_id,
            "question": args.question,
            "items": [{"memory_id": i.memory_id, "kind": i.kind, "score": round(i.score, 4),
                       "source_turns": list(i.source_turns), "text": i.text} for i in items],
            "words": sum(i.words for i in items),
        }, ensure_ascii=False))
        return 0
    print(f"# {store.writer} store {store.sample_id or stores[0].name}: {len(items)} item(s), "
          f"{sum(i.words for i in items)} words")
    for item in items:
        print(f"\n## {item.memory_id} ({item.kind}, score {item.score:.3f}, "
              f"turns {', '.join(item.source_turns)})")
        print(item.text)
    return 0
