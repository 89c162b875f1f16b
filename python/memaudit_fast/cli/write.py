"""memaudit write: build Membox, ENGRAM (or flat baseline) stores from LoCoMo conversations."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..progress import Progress
from .common import add_force, add_quiet, add_subparser, name_list

WRITER_CHOICES = ("membox", "engram", "flat")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Embedder and LLM options shared by the writer commands."""
    p.add_argument(
        "--embedder", default="auto", metavar="NAME",
        help="auto (wordllama if installed, else hashing), wordllama, hashing[:DIM] "
        "(non-semantic fallback) or st:MODEL (sentence-transformers); default: auto",
    )
    p.add_argument(
        "--llm", choices=("offline", "openai"), default="offline",
        help="offline: deterministic approximation of the papers' LLM calls (default); "
        "openai: an OpenAI-compatible chat-completions endpoint",
    )
    p.add_argument("--llm-base-url", metavar="URL",
                   help="endpoint base URL (default: $MEMAUDIT_LLM_BASE_URL or $OPENAI_BASE_URL)")
    p.add_argument("--llm-model", metavar="NAME", help="model name (default: $MEMAUDIT_LLM_MODEL)")
    p.add_argument("--llm-timeout", type=float, default=60.0, metavar="S",
                   help="seconds per request (default: 60)")
    p.add_argument("--llm-retries", type=int, default=4, metavar="N",
                   help="retries after a transient failure (default: 4)")


def make_llm(args: argparse.Namespace, embedder: Any) -> Any:
    """The LLM named by the options (key from $MEMAUDIT_LLM_API_KEY or $OPENAI_API_KEY)."""
    if args.llm == "openai":
        from ..writers.openai_client import OpenAIChatLLM

        return OpenAIChatLLM(
            args.llm_base_url, args.llm_model, timeout=args.llm_timeout,
            max_retries=args.llm_retries,
        )
    from ..writers.llm import OfflineLLM

    return OfflineLLM(embedder)


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "write",
        "Build memory stores from LoCoMo conversations with the Membox or ENGRAM writer "
        "(or the flat baseline of raw turns). One store per conversation is written to "
        "OUT/<sample_id>/ (manifest.json, store.sqlite, *.faiss, memories.jsonl; a sample id that "
        "is not a plain file name is made one and given a digest of the id, so nothing is written "
        "outside OUT and two ids never share a directory); --sample-id restricts the conversations. "
        "An existing store is replaced only with --force, and only by a store of the same "
        "conversation; each store appears complete or not at all. Offline by default.",
        "memaudit write membox --locomo locomo10.json --out stores/membox --sample-id conv-26",
    )
    p.add_argument("writer", choices=WRITER_CHOICES, help="which writer builds the stores")
    p.add_argument("--locomo", required=True, metavar="PATH", help="LoCoMo JSON file")
    p.add_argument("--out", required=True, metavar="DIR", help="parent directory of the stores")
    p.add_argument("--sample-id", type=name_list, metavar="ID[,ID...]",
                   help="only these conversations (default: all in the file)")
    p.add_argument("--index-turns", action="store_true",
                   help="membox: rank boxes by their raw turns too, not only topic, events "
                   "and keywords")
    p.add_argument("--json", action="store_true", help="one JSON line per store on stdout")
    add_force(p, "existing stores")
    add_quiet(p)
    add_model_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..model.jsonio import OutputPath
    from ..writers.locomo_turns import load_locomo
    from ..writers.store import DATABASE, EXPORT, MANIFEST, check_store_owner, store_dir_name

    def owns(entry: Path) -> bool:  # a store's own files (writers/store.py): --force replaces only these
        return not entry.is_dir() and (entry.name in (MANIFEST, DATABASE, EXPORT) or entry.name.endswith(".faiss"))

    conversations = load_locomo(args.locomo, args.sample_id)
    out = Path(args.out)
    # Every output is checked before any work; directory names made from data stay inside OUT,
    # and each depends on its own sample id only, so --force meets only that conversation's store.
    outputs = []
    named: dict[str, str] = {}
    for conv in conversations:
        name = store_dir_name(conv.sample_id)
        if name in named:
            raise UsageError(f"sample ids {named[name]!r} and {conv.sample_id!r} would share the store "
                             f"directory {out / name}; give them distinct ids")
        named[name] = conv.sample_id
        check_store_owner(out / name, conv.sample_id)
        outputs.append(OutputPath(out / name, inputs=(Path(args.locomo),), force=args.force, kind="dir",
                                  marker=MANIFEST, owns=owns, what="memaudit write", option="--out").check())
    created = _missing_dirs(out)  # removed again if this run fails before it writes a store there
    try:
        return _write(args, conversations, outputs)
    except BaseException:
        for directory in created:  # deepest first; one that holds anything stays
            try:
                directory.rmdir()
            except OSError:
                break
        raise


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    path = path.absolute()
    while not path.exists() and not path.is_symlink() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _write(args: argparse.Namespace, conversations: list[Any], outputs: list[Any]) -> int:
    from ..writers.builders import build_store
    from ..writers.embed import get_embedder
    from ..writers.export import export_store
    from ..writers.membox import MemboxParams
    from ..writers.store import EXPORT, check_store_owner

    embedder = get_embedder(args.embedder)
    total = time.perf_counter()
    bar = Progress(f"write {args.writer}", len(conversations), unit="conversation", quiet=args.quiet)
    for conv, output in zip(conversations, outputs):
        start = time.perf_counter()
        llm = make_llm(args, embedder) if args.writer != "flat" else None
        params = MemboxParams(index_turns=True) if args.writer == "membox" and args.index_turns else None
        store = build_store(args.writer, conv.turns, embedder, llm, sample_id=conv.sample_id,
                            params=params)
        check_store_owner(output.path, conv.sample_id)  # a name two ids share on a case-blind disk
        with output.directory() as tmp:
            store.save(tmp)
            export_store(store, tmp)
        target = output.path
        exported = target / EXPORT
        seconds = time.perf_counter() - start
        summary = {"sample_id": conv.sample_id, "writer": args.writer, "store": str(target),
                   "export": str(exported), "embedder": embedder.spec, "seconds": round(seconds, 2),
                   **store.stats()}  # type: ignore[attr-defined]
        if args.json:
            print(json.dumps(summary), flush=True)
        else:
            counts = ", ".join(f"{k} {v}" for k, v in store.stats().items())  # type: ignore[attr-defined]
            print(f"{conv.sample_id}: {args.writer} store in {target} ({counts}; {seconds:.1f} s)", flush=True)
        bar.update()
    bar.close()
    if not args.quiet:
        print(f"{len(conversations)} store(s) written with embedder {embedder.spec} in "
              f"{time.perf_counter() - total:.1f} s", file=sys.stderr)
    return 0
