"""Batch scoring of package sets: streamed, parallel, resumable, keyed by content.

One ``memaudit.result/1`` record per (package, budget) is appended to a JSONL file. Besides
the result, each batch record carries

* ``source``: where the member was read (``set.jsonl line 7`` or a path);
* ``member_digest``: the SHA-256 (first 32 hex digits) of the member's content, the bytes of
  its line (surrounding white space left out), file or artifact directory;
* ``options_digest``: the digest of the options that shape records (budgets or budget
  fractions, writers, certification, limits; not the number of workers or the backend).

The first record of a file also carries ``options``, the options themselves, so that a refused
resume can say what differs. The **key** of a record is (member digest, options
digest, budget), with ``budget_frac`` in place of the budget when the run uses fractions.

Guarantees
----------
* At most one record per key. Budgets are de-duplicated (``--budgets 2,2,4``, a package's
  ``budgets: [8, 8, 8.0]``), and a member whose content was already met in the run (the same
  set given twice, the same file by a relative and an absolute path) is scored once.
* One writer per output: the run holds an exclusive lock on the file (``flock``) and a second
  run on the same file is refused before it does anything. A symbolic link, a directory or an
  input given as the output is refused; so is an existing file unless ``resume`` or
  ``overwrite`` is given.
* Records of one package are written with one ``write``, so a run killed at any moment (even
  by SIGKILL) leaves complete lines plus at most one incomplete last line.
* ``resume=True`` first checks the whole file without modifying it: every line must be a batch
  record, and its options digest must be this run's (else ``UsageError``: the message says
  which options differ). Only then is an incomplete last line dropped. Members whose content
  already has records are skipped, members whose content changed are solved, and the member
  the previous run wrote last is completed budget by budget. After any number of kills and
  resumes there is exactly one record per key.
* A malformed or failing package yields an ``error`` record naming the cause; the batch goes
  on, and :func:`run_batch` reports how many failed.
* Ctrl-C (and SIGTERM, when :func:`run_batch` runs in the main thread) stops the run within a
  second: the packages that finished are written, workers are stopped (processes killed,
  thread solves cancelled, Ray tasks cancelled), and the summary says ``interrupted``. Worker
  processes die with the process that started them, even when it is killed by SIGKILL.
* Output order follows input order (a bounded window of in-flight work keeps memory flat), so
  two complete runs with the same inputs and options write the same records in the same order.
  On an interruption, finished work is written as it is found.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from ..errors import MemauditError, PackageError, UsageError
from ..model.sets import RawMember, iter_raw_members, is_jsonl, parse_member
from ..progress import Progress
from ..results.records import RESULT_FORMAT, ResultsFile, encode_records, error_record, parse_results
from .parallel import kill_pool, process_pool

__all__ = [
    "BACKENDS",
    "RESULT_FORMAT",
    "BatchOptions",
    "BatchSummary",
    "member_digest",
    "read_done",
    "run_batch",
    "score_member",
]

BACKENDS = ("local", "threads", "serial", "ray")
DIGEST_CHARS = 32
# Packages per task: small enough that Ctrl-C loses little, large enough that a task's
# overhead (pickling, a Ray task's scheduling) is paid rarely.
DEFAULT_CHUNK = {"local": 16, "threads": 4, "serial": 1, "ray": 256}
MAX_LISTED_FAILURES = 100


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return tuple(seen)


@dataclass(frozen=True)
class BatchOptions:
    """What to compute for every package of a batch.

    Budgets, budget fractions and writers are de-duplicated (first occurrence kept), so that
    every (package, budget) has one record.
    """

    budgets: tuple[float, ...] | None = None
    budget_fracs: tuple[float, ...] | None = None
    writers: tuple[str, ...] = ()
    certify: str = "none"
    time_limit: float | None = None
    node_limit: int | None = None

    def __post_init__(self) -> None:
        if self.budgets is not None and self.budget_fracs is not None:
            raise UsageError("give budgets or budget fractions, not both")
        for name in ("budgets", "budget_fracs"):
            values = getattr(self, name)
            if values is None:
                continue
            checked = []
            for value in values:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                    what = "budget" if name == "budgets" else "budget fraction"
                    raise UsageError(f"{what} {value!r} must be a finite number >= 0")
                checked.append(float(value))
            if not checked:
                raise UsageError(f"{name} is empty; give at least one value or None for the packages' own budgets")
            object.__setattr__(self, name, _unique(checked))
        object.__setattr__(self, "writers", _unique(str(w) for w in self.writers))
        if self.writers:
            from ..evaluate import baselines

            known = getattr(baselines, "BASELINE_WRITERS", None) or baselines.WRITERS
            unknown = [w for w in self.writers if w not in known]
            if unknown:
                raise UsageError(f"unknown writer(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
        if self.certify not in ("none", "auto", "highs", "gurobi"):
            raise UsageError(f"certify must be none, auto, highs or gurobi, not {self.certify!r}")
        if self.time_limit is not None and not (self.time_limit >= 0):
            raise UsageError(f"time limit must be >= 0 seconds, got {self.time_limit!r}")
        if self.node_limit is not None and (isinstance(self.node_limit, bool) or int(self.node_limit) != self.node_limit
                                            or self.node_limit < 0):
            raise UsageError(f"node limit must be an integer >= 0, got {self.node_limit!r}")

    def identity(self) -> dict[str, Any]:
        """The options that shape records, in a form that does not depend on their order."""
        return {
            "budgets": None if self.budgets is None else sorted(self.budgets),
            "budget_fracs": None if self.budget_fracs is None else sorted(self.budget_fracs),
            "writers": sorted(self.writers),
            "certify": self.certify,
            "time_limit": self.time_limit,
            "node_limit": self.node_limit,
        }

    @cached_property
    def digest(self) -> str:
        text = orjson.dumps(self.identity(), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(text).hexdigest()[:16]

    def key_of(self, record: dict[str, Any]) -> float | None:
        """The budget part of a record's key (None for a package-level error record)."""
        value = record.get("budget_frac") if self.budget_fracs is not None else record.get("budget")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(value)
        return float(value)


@dataclass
class BatchSummary:
    """What a run did. ``packages`` counts the packages scored and written by this run."""

    packages: int = 0
    skipped: int = 0  # already in the file (resume)
    duplicates: int = 0  # the same content met again in this run
    records: int = 0
    failed: int = 0
    seconds: float = 0.0
    truncated_tail: bool = False
    interrupted: bool = False
    stale: int = 0  # members with records in the file whose content is not in the set any more
    failures: list[str] = field(default_factory=list)


# Content digests ------------------------------------------------------------------------------
def _digest_path(path: Path, h: Any) -> None:
    if path.is_dir():
        for child in sorted(path.iterdir()):
            if child.is_file() and not child.is_symlink():
                h.update(child.name.encode("utf-8", "surrogateescape") + b"\0")
                h.update(child.read_bytes())
                h.update(b"\0")
    else:
        h.update(path.read_bytes())


def member_digest(member: RawMember) -> str:
    """The digest of a set member's content (what resume keys records by)."""
    label, kind, payload = member
    h = hashlib.sha256()
    if kind == "text":
        text = payload if isinstance(payload, (bytes, bytearray)) else payload.encode("utf-8", "surrogatepass")
        h.update(b"text\0")
        h.update(text.strip())
    elif kind == "path":
        h.update(b"path\0")
        try:
            _digest_path(Path(payload), h)
        except OSError as exc:
            h.update(f"unreadable\0{label}\0{exc}".encode("utf-8", "surrogateescape"))
    else:
        # A member that could not be read: keyed by where it is and why, so that an
        # unchanged failure is not retried, and a fixed one is.
        h.update(f"{kind}\0{label}\0{payload}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:DIGEST_CHARS]


# The work of one package (runs in a worker) ---------------------------------------------------
# A task is (raw member, its digest, budget keys already written); its outcome is (encoded
# records, how many, the failure messages, whether the work was interrupted before the end).
Task = tuple[RawMember, str, frozenset[float]]
Outcome = tuple[bytes, int, list[str], bool]


def budget_plan(package: Any, options: BatchOptions) -> list[tuple[float, float, float | None]]:
    """(key, budget, fraction or None) for every budget of ``package``, without duplicates."""
    if options.budgets is not None:
        return [(b, b, None) for b in options.budgets]
    if options.budget_fracs is not None:
        total = package.total_cost()
        return [(f, f * total, f) for f in options.budget_fracs]
    own = _unique(float(b) for b in package.budgets)
    if not own:
        raise UsageError("the package has no budgets; pass --budgets or --budget-fracs")
    return [(b, b, None) for b in own]


def score_compiled(compiled: Any, budgets: list[float], options: BatchOptions, cancel: Any = None) -> list[dict[str, Any]]:
    """Solve every budget, then add writer scores and certificates when asked for.

    Returns no records when a solve was interrupted (``cancel`` or Ctrl-C): the caller must
    not record an unfinished package.
    """
    from ..solve.exact import solve

    results = solve(compiled, budgets=budgets, time_limit=options.time_limit, node_limit=options.node_limit,
                    cancel=cancel)
    if any(r.status == "interrupted" for r in results):
        return []
    records = []
    for result in results:
        record = result.to_record()
        if options.writers:
            from ..evaluate.baselines import writer_scores

            record["writers"] = writer_scores(compiled, result.budget, options.writers, opt=result.value)
        if options.certify != "none":
            from ..solve.certify import certify

            record["certificate"] = certify(compiled, result, solver=options.certify).to_dict()
        records.append(record)
    return records


def score_member(task: Task, options: BatchOptions, cancel: Any = None) -> Outcome:
    """The encoded records of one member. A bad package yields an error record, never raises."""
    from ..model.compiled import compile_package

    member, digest, skip = task
    source = member[0]
    package_id: str | None = None
    tag = {"member_digest": digest, "options_digest": options.digest}
    try:
        package = parse_member(member)
        package_id = package.package_id
        todo = [step for step in budget_plan(package, options) if step[0] not in skip]
        if not todo:
            return b"", 0, [], False
        if cancel is not None and cancel.cancelled:
            return b"", 0, [], True
        compiled = compile_package(package)
        records = score_compiled(compiled, [budget for _, budget, _ in todo], options, cancel)
        if not records:
            return b"", 0, [], True
        extra: dict[str, Any] = {
            "source": source,
            "size": {"candidates": compiled.num_candidates, "groups": len(compiled.group_ids),
                     "units": len(compiled.unit_ids), "nonzeros": int(compiled.indices.size)},
        }
        meta = package.data.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("distribution"), str):
            extra["distribution"] = meta["distribution"]
        extra.update(tag)
        for record, (_, _, frac) in zip(records, todo):
            if frac is not None:
                record["budget_frac"] = frac
            record.update(extra)
        return encode_records(records), len(records), [], False
    except MemauditError as exc:
        message = str(exc)
    except Exception as exc:  # noqa: BLE001 - an internal failure must not end the batch
        message = f"internal error: {type(exc).__name__}: {exc}"
    record = error_record(message, source=source, package_id=package_id)
    record.update(tag)
    return encode_records([record]), 1, [f"{source}: {message}"], False


def _score_chunk(chunk: list[Task], options: BatchOptions, cancel: Any = None) -> list[Outcome]:
    return [score_member(task, options, cancel) for task in chunk]


# Resume ---------------------------------------------------------------------------------------
@dataclass
class _Done:
    """What a results file already holds for this run's options."""

    members: set[str] = field(default_factory=set)
    # The member written last may have been cut short by a kill: it is completed key by key.
    last_member: str | None = None
    last_keys: set[float] = field(default_factory=set)
    last_complete: bool = False
    complete_bytes: int = 0
    torn_tail: bool = False


def _check_resumable(parsed: ResultsFile, options: BatchOptions) -> _Done:
    """What a results file holds for resume; raises, modifying nothing, when it is not one."""
    source = parsed.source
    done = _Done(complete_bytes=parsed.complete_bytes, torn_tail=bool(parsed.torn_tail))
    found_options: dict[str, Any] = {}
    other: dict[str, int] = {}
    keys: dict[str, set[float]] = {}
    errored: set[str] = set()
    for number, record in parsed.records:
        member, digest = record.get("member_digest"), record.get("options_digest")
        if not isinstance(member, str) or not isinstance(digest, str):
            raise PackageError(
                "this record has no member_digest / options_digest, so the file was not written by "
                "memaudit batch (or by an older version of it); resume only continues a file that "
                "this batch wrote: choose a new --out, or pass --force to replace the file",
                source=source, record=f"line {number}",
            )
        if isinstance(record.get("options"), dict):
            found_options.setdefault(digest, record["options"])
        if digest != options.digest:
            other.setdefault(digest, number)
            continue
        try:
            key = options.key_of(record)
        except TypeError:
            raise PackageError("the budget is not a number", source=source, record=f"line {number}",
                               field="budget_frac" if options.budget_fracs is not None else "budget") from None
        done.members.add(member)
        done.last_member = member
        if key is None:
            errored.add(member)
        else:
            keys.setdefault(member, set()).add(key)
    if other:
        raise UsageError(_options_difference(source, options, found_options, other))
    if done.last_member is not None:
        done.last_keys = keys.get(done.last_member, set())
        done.last_complete = done.last_member in errored
    return done


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) or "none"
    return str(value)


def _options_difference(source: str, options: BatchOptions, found: dict[str, Any], other: dict[str, int]) -> str:
    now = options.identity()
    parts = []
    for digest, line in other.items():
        theirs = found.get(digest)
        if not isinstance(theirs, dict):
            parts.append(f"the records from line {line} on were made with other options (digest {digest}, "
                         f"now {options.digest}); no record says which")
            continue
        diffs = [f"{name} {_show(theirs.get(name))} in the file, {_show(now[name])} now"
                 for name in now if theirs.get(name) != now[name]]
        parts.append("; ".join(diffs) or f"options digest {digest} in the file, {options.digest} now")
    return (f"{source}: cannot resume with other options than the file was written with: "
            f"{' | '.join(parts)}. Resume with the file's options, or write to another --out "
            "(the file was not modified)")


def read_done(out: str | Path, options: BatchOptions | None = None) -> tuple[dict[str, set[float]], set[str], bool]:
    """Finished work in a results file, read without modifying it.

    Returns (budget keys done per member digest, member digests that ended in a package-level
    error, whether the file ends in an incomplete line). Raises ``PackageError`` when the file
    is not a batch results file and ``UsageError`` when it was written with other options
    (``options`` defaults to those of the file's first record).
    """
    path = Path(out)
    if not path.exists():
        return {}, set(), False
    parsed = parse_results(path.read_bytes(), str(path))
    if options is None:
        options = _options_of_first_record(parsed)
    _check_resumable(parsed, options)
    per_member: dict[str, set[float]] = {}
    errored: set[str] = set()
    for _, record in parsed.records:
        key = options.key_of(record)
        if key is None:
            errored.add(record["member_digest"])
        else:
            per_member.setdefault(record["member_digest"], set()).add(key)
    return per_member, errored, bool(parsed.torn_tail)


def _options_of_first_record(parsed: ResultsFile) -> BatchOptions:
    source = parsed.source
    for number, record in parsed.records:
        found = record.get("options")
        if isinstance(found, dict):
            try:
                return BatchOptions(
                    budgets=None if found.get("budgets") is None else tuple(found["budgets"]),
                    budget_fracs=None if found.get("budget_fracs") is None else tuple(found["budget_fracs"]),
                    writers=tuple(found.get("writers") or ()), certify=found.get("certify", "none"),
                    time_limit=found.get("time_limit"), node_limit=found.get("node_limit"),
                )
            except (MemauditError, TypeError, ValueError):
                raise PackageError("the recorded options are malformed", source=source, record=f"line {number}",
                                   field="options") from None
        break
    return BatchOptions()


# The output file ------------------------------------------------------------------------------
@dataclass
class _Output:
    path: Path
    fd: int
    done: _Done


def _lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open_output(out: Path, inputs: list[Path], options: BatchOptions, *, resume: bool, overwrite: bool) -> _Output:
    """Check, open and lock the output; nothing is modified until every check has passed."""
    if resume and overwrite:
        raise UsageError("--resume continues the results file and --force replaces it; give one of them")
    resolved = out.resolve()
    for p in inputs:
        if p.resolve() == resolved:
            raise UsageError(f"{out}: refusing to write results over an input")
    if out.is_symlink():
        raise UsageError(f"{out} is a symbolic link; give the path of the results file itself")
    existed = out.exists()
    if existed and not out.is_file():
        raise UsageError(f"{out} exists and is not a regular file; choose another --out")
    if existed and not resume and not overwrite and out.stat().st_size > 0:
        raise UsageError(f"{out} already exists; pass --resume to continue it or --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(out, flags, 0o666)
    except OSError as exc:
        raise UsageError(f"{out}: cannot open for writing: {exc.strerror or exc}") from None
    try:
        if not _lock(fd):
            raise UsageError(f"{out} is being written by another batch run (it holds the file's lock); "
                             "wait for it to finish, or choose another --out")
        done = _Done()
        if resume:
            size = os.fstat(fd).st_size
            data = os.pread(fd, size, 0) if size else b""
            done = _check_resumable(parse_results(data, str(out)), options)
            if done.torn_tail:
                os.ftruncate(fd, done.complete_bytes)
        elif overwrite:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return _Output(out, fd, done)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _with_options(data: bytes, options: BatchOptions) -> bytes:
    """The first record of a file also carries the options."""
    cut = data.index(b"\n") + 1
    first = orjson.loads(data[:cut])
    first["options"] = options.identity()
    return encode_records([first]) + data[cut:]


# Runners: where chunks are scored ---------------------------------------------------------------
class _Serial:
    depth = 1

    def __init__(self, options: BatchOptions) -> None:
        self.options = options

    def submit(self, chunk: list[Task]) -> list[Outcome]:
        return _score_chunk(chunk, self.options)

    def result(self, handle: list[Outcome]) -> list[Outcome]:
        return handle

    def ready(self, handle: Any) -> bool:
        return True

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Threads:
    def __init__(self, options: BatchOptions, workers: int) -> None:
        from ..solve.exact import CancelToken

        self.options = options
        self.depth = 2 * workers
        self.cancel = CancelToken()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memaudit-batch")

    def submit(self, chunk: list[Task]) -> Future[list[Outcome]]:
        return self.pool.submit(_score_chunk, chunk, self.options, self.cancel)

    def result(self, handle: Future[list[Outcome]]) -> list[Outcome]:
        return handle.result()

    def ready(self, handle: Future[list[Outcome]]) -> bool:
        return handle.done() and not handle.cancelled()

    def stop(self) -> None:
        # Every solve watches the token: the threads return within the solver's poll interval.
        self.cancel.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class _Processes(_Threads):
    def __init__(self, options: BatchOptions, workers: int) -> None:
        self.options = options
        self.depth = 2 * workers
        self.pool = process_pool(workers)  # type: ignore[assignment]

    def submit(self, chunk: list[Task]) -> Future[list[Outcome]]:
        return self.pool.submit(_score_chunk, chunk, self.options)

    def ready(self, handle: Future[list[Outcome]]) -> bool:
        return handle.done() and not handle.cancelled() and handle.exception() is None

    def stop(self) -> None:
        kill_pool(self.pool)  # type: ignore[arg-type]


class _Ray:
    def __init__(self, options: BatchOptions, workers: int, address: str | None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("the ray backend needs Ray: pip install 'memaudit_fast[ray]'") from None
        import logging

        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                if address:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
                else:
                    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                             logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UsageError(f"cannot start or reach Ray ({address or 'local'}): {exc}") from None
        cpus = int(ray.cluster_resources().get("CPU", workers)) if address else workers
        self.depth = 2 * max(1, cpus)
        self.remote = ray.remote(num_cpus=1)(_score_chunk)
        self.options_ref = ray.put(options)
        self.outstanding: set[Any] = set()

    def submit(self, chunk: list[Task]) -> Any:
        handle = self.remote.remote(chunk, self.options_ref)
        self.outstanding.add(handle)
        return handle

    def result(self, handle: Any) -> list[Outcome]:
        outcomes = self.ray.get(handle)
        self.outstanding.discard(handle)
        return outcomes  # type: ignore[no-any-return]

    def ready(self, handle: Any) -> bool:
        finished, _ = self.ray.wait([handle], timeout=0)
        return bool(finished)

    def stop(self) -> None:
        for handle in self.outstanding:
            self.ray.cancel(handle, force=True)
        self.outstanding.clear()

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def _runner(backend: str, options: BatchOptions, workers: int, address: str | None) -> Any:
    if backend == "ray":
        return _Ray(options, workers, address)
    if backend == "serial" or workers <= 1:
        return _Serial(options)
    if backend == "threads":
        return _Threads(options, workers)
    return _Processes(options, workers)


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# Counting members for the progress display, without holding up the work ---------------------------
def _count_members(paths: list[Path]) -> int:
    count = 0
    for path in paths:
        if is_jsonl(path) and path.is_file():
            import gzip

            opener: Callable[..., Any] = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rb") as handle:
                count += sum(1 for line in handle if line.strip())
        elif path.is_dir():
            count += sum(1 for _ in iter_raw_members([path]))
        else:
            count += 1
    return count


class _Counter(threading.Thread):
    """Counts the members of the sets in the background; the total shows once known."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__(name="memaudit-batch-count", daemon=True)
        self.paths = paths
        self.total: int | None = None

    def run(self) -> None:
        try:
            self.total = _count_members(self.paths)
        except Exception:  # noqa: BLE001 - a display aid; the batch reports its own errors
            self.total = None


class _Stop(BaseException):
    """A worker's solve was interrupted: stop the run like Ctrl-C."""


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# The driver -----------------------------------------------------------------------------------
def run_batch(
    paths: Iterable[str | Path],
    out: str | Path,
    options: BatchOptions = BatchOptions(),
    *,
    workers: int | None = None,
    backend: str = "local",
    resume: bool = False,
    overwrite: bool = False,
    chunk_size: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> BatchSummary:
    """Score every package of the given sets; append records to ``out``.

    ``backend`` is ``local`` (worker processes; ``threads`` and ``serial`` are also accepted)
    or ``ray`` (tasks of ``chunk_size`` packages on a local Ray, or on the cluster at
    ``ray_address``). ``workers`` defaults to the number of cores. ``progress`` is updated once
    per member. An interrupted run returns with ``summary.interrupted`` set; what finished is
    in ``out`` and a run with ``resume=True`` continues it.
    """
    if backend not in BACKENDS:
        raise UsageError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise UsageError(f"workers must be >= 1, got {workers!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size < 1):
        raise UsageError(f"chunk size must be >= 1, got {chunk_size!r}")
    workers = workers or os.cpu_count() or 1
    size = 1 if backend == "serial" or (backend != "ray" and workers <= 1) else (chunk_size or DEFAULT_CHUNK[backend])
    input_paths = [Path(p) for p in paths]
    output = _open_output(Path(out), input_paths, options, resume=resume, overwrite=overwrite)
    summary = BatchSummary(truncated_tail=output.done.torn_tail)
    start = time.perf_counter()
    counter = _Counter(input_paths) if progress is not None else None
    main_thread = threading.current_thread() is threading.main_thread()
    # SIGTERM stops the run like Ctrl-C, unless the program has a handler of its own.
    own_term = main_thread and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt) if own_term else None
    try:
        if counter is not None:
            counter.start()
        _drive(input_paths, output, options, summary, progress, counter,
               lambda: _runner(backend, options, workers, ray_address), size)
        os.fsync(output.fd)
    finally:
        os.close(output.fd)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    summary.seconds = time.perf_counter() - start
    return summary


def _drive(input_paths: list[Path], output: _Output, options: BatchOptions, summary: BatchSummary,
           progress: Progress | None, counter: _Counter | None, make_runner: Callable[[], Any], size: int) -> None:
    done = output.done
    seen: set[str] = set()
    # The file's first record states the options (a resumed file has them already).
    first_write = [done.last_member is None]

    def tick(failed: int = 0) -> None:
        if progress is None:
            return
        if counter is not None and counter.total is not None and progress.total is None:
            progress.set_total(counter.total)
        progress.update(1, failed=failed)

    def pending() -> Iterator[Task]:
        for member in iter_raw_members(input_paths):
            digest = member_digest(member)
            if digest in seen:
                summary.duplicates += 1
                tick()
                continue
            seen.add(digest)
            if digest in done.members and (digest != done.last_member or done.last_complete):
                summary.skipped += 1
                tick()
                continue
            skip = frozenset(done.last_keys) if digest == done.last_member else frozenset()
            yield member, digest, skip

    def write(outcomes: list[Outcome]) -> None:
        for data, count, errors, interrupted in outcomes:
            if interrupted:
                raise _Stop
            if not data:
                summary.skipped += 1
                tick()
                continue
            if first_write[0]:
                data = _with_options(data, options)
                first_write[0] = False
            _write_all(output.fd, data)
            summary.packages += 1
            summary.records += count
            if errors:
                summary.failed += 1
                room = MAX_LISTED_FAILURES - len(summary.failures)
                summary.failures.extend(errors[:max(0, room)])
            tick(1 if errors else 0)

    runner = make_runner()
    window: deque[Any] = deque()
    try:
        try:
            for chunk in _chunks(pending(), size):
                window.append(runner.submit(chunk))
                while len(window) >= runner.depth:
                    write(runner.result(window.popleft()))
            while window:
                write(runner.result(window.popleft()))
        except (KeyboardInterrupt, _Stop):
            summary.interrupted = True
            _keep_finished(runner, window, write)
    finally:
        runner.close()
    summary.stale = len(done.members - seen)


def _keep_finished(runner: Any, window: deque[Any], write: Callable[[list[Outcome]], None]) -> None:
    """After an interruption: write the chunks that finished, stop the rest."""
    ignore = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if ignore else None
    try:
        for handle in window:
            if runner.ready(handle):
                outcomes = runner.result(handle)
                try:
                    write([o for o in outcomes if not o[3]])
                except _Stop:
                    pass
        runner.stop()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
