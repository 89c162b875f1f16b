"""Batch scoring of package sets: streamed, parallel, resumable.

One ``memaudit.result/1`` record per (package, budget) is appended to a JSONL file. Each
record carries ``source`` (where the package came from: ``set.jsonl line 7`` or a path),
which together with ``budget`` is the key a resumed run uses to skip finished work.

Guarantees
----------
* Records of one package are written with one ``write`` and flushed before the next
  package is written, so a run killed at any moment (even SIGKILL) leaves complete lines
  plus at most one incomplete last line.
* ``resume=True`` drops that incomplete tail, keeps every complete record, and solves only
  the (package, budget) pairs that have no record yet: after any number of kills and
  resumes there is exactly one record per pair.
* A malformed or failing package yields an ``error`` record naming the cause; the batch
  goes on, and :func:`run_batch` reports how many failed.
* Output order follows input order (a bounded window of in-flight work keeps memory flat),
  so two runs with the same inputs and options write the same records in the same order.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MemauditError, PackageError, UsageError
from ..model.estimates import with_group_capacity
from ..model.sets import RawMember, iter_raw_members, parse_member

RESULT_FORMAT = "memaudit.result/1"


@dataclass(frozen=True)
class BatchOptions:
    """What to compute for every package of a batch."""

    budgets: tuple[float, ...] | None = None
    budget_fracs: tuple[float, ...] | None = None
    writers: tuple[str, ...] = ()
    certify: str = "none"
    time_limit: float | None = None
    node_limit: int | None = None
    estimator: str | None = None  # model path or "embed", for the estimated writers
    group_capacity: int | None = None  # overrides objective.group_capacity

    def __post_init__(self) -> None:
        if self.budgets is not None and self.budget_fracs is not None:
            raise UsageError("give budgets or budget fractions, not both")
        for b in self.budgets or ():
            if not (b >= 0):
                raise UsageError(f"budget {b} must be a number >= 0")
        for f in self.budget_fracs or ():
            if not (f >= 0):
                raise UsageError(f"budget fraction {f} must be a number >= 0")
        if self.group_capacity is not None and (type(self.group_capacity) is not int or self.group_capacity < 1):
            raise UsageError(f"--group-capacity must be an integer >= 1, got {self.group_capacity!r}")


@dataclass
class BatchSummary:
    packages: int = 0
    skipped: int = 0
    records: int = 0
    failed: int = 0
    seconds: float = 0.0
    truncated_tail: bool = False
    failures: list[str] = field(default_factory=list)


# Tasks ---------------------------------------------------------------------------------------
# A task is a raw set member (see package_set.iter_raw_members): workers parse it.
Task = RawMember
iter_tasks = iter_raw_members


# The work of one package (runs in a worker) -------------------------------------------------
def error_record(source: str, message: str, package_id: str | None = None, budget: float | None = None) -> dict[str, Any]:
    return {
        "format": RESULT_FORMAT, "package_id": package_id, "source": source, "budget": budget,
        "status": "error", "proven_optimal": False, "error": message,
    }


def resolve_budgets(package: Any, options: BatchOptions) -> list[float]:
    if options.budgets is not None:
        return [float(b) for b in options.budgets]
    if options.budget_fracs is not None:
        total = package.total_cost()
        return [float(f) * total for f in options.budget_fracs]
    if not package.budgets:
        raise UsageError("the package has no budgets; pass --budgets or --budget-fracs")
    return package.budgets


def score_task(task: Task, options: BatchOptions, skip_budgets: frozenset[float] = frozenset()) -> list[dict[str, Any]]:
    """All records of one package. Never raises for a bad package: it returns an error record."""
    from ..model.compiled import compile_package

    source = task[0]
    package_id: str | None = None
    try:
        package = with_group_capacity(parse_member(task), options.group_capacity)
        package_id = package.package_id
        all_budgets = resolve_budgets(package, options)
        budgets = [b for b in all_budgets if b not in skip_budgets]
        if not budgets:
            return []
        compiled = compile_package(package)
        extra: dict[str, Any] = {
            "source": source,
            "size": {"candidates": compiled.num_candidates, "groups": len(compiled.group_ids),
                     "units": len(compiled.unit_ids), "nonzeros": int(compiled.indices.size)},
        }
        meta = package.data.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("distribution"), str):
            extra["distribution"] = meta["distribution"]
        fracs = dict(zip(all_budgets, options.budget_fracs or ()))  # reports plot per fraction
        return [dict(r, **extra, **({"budget_frac": float(fracs[r["budget"]])} if r["budget"] in fracs else {}))
                for r in score_compiled(compiled, budgets, options)]
    except MemauditError as exc:
        return [error_record(source, str(exc), package_id)]
    except Exception as exc:  # noqa: BLE001 - an internal failure must not end the batch
        return [error_record(source, f"internal error: {type(exc).__name__}: {exc}", package_id)]


def score_compiled(compiled: Any, budgets: list[float], options: BatchOptions) -> list[dict[str, Any]]:
    """Solve every budget, then add writer scores and certificates when asked for."""
    from ..solve.exact import solve

    results = solve(compiled, budgets=budgets, time_limit=options.time_limit, node_limit=options.node_limit)
    records = []
    for result in results:
        record = result.to_record()
        if options.writers:
            from ..evaluate.baselines import writer_scores

            record["writers"] = writer_scores(compiled, result.budget, options.writers, opt=result.value,
                                              estimator=_estimator(options.estimator))
        if options.certify != "none":
            from ..solve.certify import certify

            record["certificate"] = certify(compiled, result, solver=options.certify).to_dict()
        records.append(record)
    return records


def _estimator(spec: str | None) -> Any:
    """The estimator of a batch, loaded once per process."""
    if spec is None:
        return None
    from ..evaluate.estimators import load_estimator

    if spec not in _ESTIMATORS:
        _ESTIMATORS[spec] = load_estimator(spec)
    return _ESTIMATORS[spec]


_ESTIMATORS: dict[str, Any] = {}


def _score_chunk(chunk: list[tuple[Task, frozenset[float]]], options: BatchOptions) -> list[list[dict[str, Any]]]:
    return [score_task(task, options, skip) for task, skip in chunk]


# Resume --------------------------------------------------------------------------------------
def read_done(out: Path) -> tuple[dict[str, set[float]], set[str], bool]:
    """Finished work in an existing results file; drops an incomplete last line.

    Returns (budgets done per source, sources that ended in a package-level error, whether
    a tail was truncated).
    """
    done: dict[str, set[float]] = {}
    errored: set[str] = set()
    if not out.exists():
        return done, errored, False
    data = out.read_bytes()
    cut = data.rfind(b"\n") + 1
    truncated = cut < len(data)
    if truncated:
        with out.open("r+b") as handle:
            handle.truncate(cut)
    for number, line in enumerate(data[:cut].decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            source = record["source"]
            budget = record.get("budget")
            if not isinstance(source, str) or not (
                budget is None or (isinstance(budget, (int, float)) and not isinstance(budget, bool))
            ):
                raise TypeError
        except (ValueError, KeyError, TypeError, AttributeError):
            raise PackageError(
                "not a memaudit.result/1 record with a 'source'; resume only continues a file "
                "that a batch run wrote",
                source=str(out), record=f"line {number}",
            ) from None
        if budget is None:
            errored.add(source)
        else:
            done.setdefault(source, set()).add(float(budget))
    return done, errored, truncated


# The driver ----------------------------------------------------------------------------------
def _make_executor(backend: str, workers: int) -> Executor | None:
    if workers <= 1 or backend == "serial":
        return None
    if backend == "threads":
        return ThreadPoolExecutor(max_workers=workers)
    return ProcessPoolExecutor(max_workers=workers)


def run_batch(
    paths: Iterable[str | Path],
    out: str | Path,
    options: BatchOptions = BatchOptions(),
    *,
    workers: int | None = None,
    backend: str = "local",
    resume: bool = False,
    overwrite: bool = False,
    chunk_size: int = 16,
    ray_address: str | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> BatchSummary:
    """Score every package of the given sets; append records to ``out``.

    ``backend`` is ``local`` (processes; ``threads`` and ``serial`` are also accepted) or
    ``ray``. ``workers`` defaults to the number of cores.
    """
    out = Path(out)
    input_paths = [Path(p) for p in paths]
    for p in input_paths:
        if p.resolve() == out.resolve():
            raise UsageError(f"{out}: refusing to write results over an input")
    if out.exists() and not resume and not overwrite:
        raise UsageError(f"{out} already exists; pass --resume to continue it or --force to replace it")
    summary = BatchSummary()
    done: dict[str, set[float]] = {}
    errored: set[str] = set()
    if resume:
        done, errored, summary.truncated_tail = read_done(out)
    elif out.exists():
        out.unlink()
    workers = workers or os.cpu_count() or 1
    start = time.perf_counter()

    def pending() -> Iterator[tuple[Task, frozenset[float]]]:
        for task in iter_tasks(input_paths):
            source = task[0]
            if source in errored:
                summary.skipped += 1
                continue
            skip = frozenset(done.get(source, ()))
            if skip and options.budgets is not None and skip >= set(options.budgets):
                summary.skipped += 1
                continue
            yield task, skip

    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as handle:

        def write(records: list[dict[str, Any]]) -> None:
            summary.packages += 1
            if not records:
                summary.skipped += 1
                summary.packages -= 1
                return
            text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)
            handle.write(text)
            handle.flush()
            summary.records += len(records)
            if any(r.get("status") == "error" for r in records):
                summary.failed += 1
                summary.failures.extend(f"{r['source']}: {r.get('error')}" for r in records if r.get("status") == "error")
            if progress:
                progress(summary.packages, summary.records, time.perf_counter() - start)

        if backend == "ray":
            _run_ray(pending(), options, write, workers, chunk_size, ray_address)
        else:
            _run_local(pending(), options, write, backend, workers, chunk_size)
        handle.flush()
        os.fsync(handle.fileno())
    summary.seconds = time.perf_counter() - start
    return summary


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _run_local(items: Iterator[tuple[Task, frozenset[float]]], options: BatchOptions,
               write: Callable[[list[dict[str, Any]]], None], backend: str, workers: int, chunk_size: int) -> None:
    executor = _make_executor(backend, workers)
    if executor is None:
        for task, skip in items:
            write(score_task(task, options, skip))
        return
    window: deque[Future[list[list[dict[str, Any]]]]] = deque()
    with executor:
        for chunk in _chunks(items, chunk_size):
            window.append(executor.submit(_score_chunk, chunk, options))
            # A bounded window keeps memory flat and output in input order.
            while len(window) >= 2 * workers:
                for records in window.popleft().result():
                    write(records)
        while window:
            for records in window.popleft().result():
                write(records)


def _run_ray(items: Iterator[tuple[Task, frozenset[float]]], options: BatchOptions,
             write: Callable[[list[dict[str, Any]]], None], workers: int, chunk_size: int,
             address: str | None) -> None:
    try:
        import ray
    except ImportError:
        raise UsageError("the ray backend needs Ray: pip install 'memaudit_fast[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(_score_chunk)
        window: deque[Any] = deque()
        for chunk in _chunks(items, chunk_size):
            window.append(remote.remote(chunk, options))
            while len(window) >= 4 * workers:
                for records in ray.get(window.popleft()):
                    write(records)
        while window:
            for records in ray.get(window.popleft()):
                write(records)
    finally:
        if started_here:
            ray.shutdown()


def stderr_progress(total: int | None) -> Callable[[int, int, float], None] | None:
    """A one-line progress display with rate and ETA on a terminal (silent otherwise)."""
    if not sys.stderr.isatty():
        return None

    def show(packages: int, records: int, seconds: float) -> None:
        rate = packages / seconds if seconds > 0 else 0.0
        eta = f", ETA {max(0.0, (total - packages) / rate):.0f}s" if total and rate else ""
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{packages}{of} packages, {records} records, {rate:.0f}/s{eta}   ")
        sys.stderr.flush()

    return show
