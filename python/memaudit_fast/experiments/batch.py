"""Batch scoring of package sets: streamed, parallel, resumable, keyed by content.

One ``memaudit.result/1`` record per (package, budget) is appended to a JSONL file. Besides
the result, each batch record carries

* ``source``: where the member was read (``set.jsonl line 7`` or a path);
* ``member_digest``: the BLAKE2b-128 digest (32 hex digits) of the member's content: the bytes
  of its line (surrounding white space left out), its file or its artifact directory;
* ``options_digest``: the digest of the options that shape records (budgets or budget
  fractions, writers, certification, limits, the estimator by its model's content digest;
  not the number of workers or the backend).

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
  ``overwrite`` is given, and a SET that is no set (missing, a device or FIFO, unreadable, a
  results file).
* Records of one package are written with one ``write``, so a run killed at any moment (even
  by SIGKILL) leaves complete lines plus at most one incomplete last line.
* ``resume=True`` first checks the whole file without modifying it: every line must be a batch
  record, and its options digest must be this run's (else ``UsageError``: the message says
  which options differ). An incomplete last line is dropped at the first write, or when the
  run ends complete (a refused run leaves the file as it was). A member is solved
  only for the budget keys it has no record for: members whose content is unchanged and
  complete are skipped (with the packages' own budgets a worker parses the member to know its
  budgets), members whose content changed are solved anew, and one that a kill cut short is
  completed. After any number of kills and resumes there is exactly one record per key. A resume
  that reads its whole set then moves the records of members no longer in it (changed or
  removed) to ``NAME.superseded.jsonl``, gives moved members their new ``source`` and puts
  the records in input order (:mod:`.batch_compact`).
* A malformed or failing package yields an ``error`` record naming the cause; the batch goes
  on, and :func:`run_batch` reports how many failed. An error record holds no budget key, so
  a resumed run scores that member again (the cause may be gone: a limit raised, a file
  fixed). If it fails again, nothing is appended (one error record per member and options)
  and it counts as failed again; if it succeeds, its records are appended after the error
  record, which stays: :func:`without_superseded_errors` drops such error records from what
  a reader returns. A resume writes error records only once a member turned out to be a
  package; one whose set holds none is refused (``UsageError``), the file as it was.
* Ctrl-C (and SIGTERM, when :func:`run_batch` runs in the main thread) stops the run within a
  second, whether it reaches this process alone or the whole process group (workers stop
  their solve and hand in what they finished): the packages that finished are written,
  workers are stopped (processes killed, thread solves cancelled, Ray tasks cancelled), and
  the summary says ``interrupted``. Worker processes die with the process that started them,
  even when it is killed by SIGKILL.
* Worker processes send each package's records as it finishes (within about
  :data:`~.parallel.HAND_IN_AFTER` seconds), not when their whole chunk is done, so a
  SIGKILL loses what was being solved and what waits in input order behind it, not a chunk.
  A pipe on stdin that stalls does not hold this up: it is read ahead in a thread
  (:mod:`.readahead`), and a part-filled chunk is sent as soon as the input pauses.
* Output order follows input order (a bounded window of in-flight work keeps memory flat), so
  two complete runs with the same inputs and options write the same records in the same order.
  On an interruption, finished work is written as it is found; the resume that completes the
  run puts it back in input order.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MemauditError, OutputError, UsageError, raise_interrupt
from ..model.compiled import compile_validated
from ..model.estimates import with_group_capacity
from ..model.sets import RawMember, parse_member, resolve_member
from ..progress import Progress
from ..results.records import (
    RESULT_FORMAT,
    encode_records,
    encode_records_with,
    error_record,
    failed_package_id,
    without_superseded_errors,
)
from .batch_compact import Compaction, compact, superseded_path
from .batch_count import Counter
from .batch_resume import (
    BatchOptions,
    Output,
    member_digest,
    open_output,
    read_done,
    with_options,
    write_all,
)
from .batch_scoring import budget_plan, score_compiled
from .batch_sets import check_sets
from .parallel import ProcessRunner, chunks, hand_in, make_runner, worker_stop_token
from .readahead import IDLE, read_members

__all__ = [
    "BACKENDS",
    "RESULT_FORMAT",
    "BatchOptions",
    "BatchSummary",
    "member_digest",
    "read_done",
    "run_batch",
    "score_member",
    "without_superseded_errors",
]

BACKENDS = ("local", "threads", "serial", "ray")
# Packages per task: small enough that Ctrl-C loses little, large enough that a task's
# overhead (pickling, a Ray task's scheduling) is paid rarely (local: 32 halves the parent's CPU
# time per package against 8; a chunk stopped by Ctrl-C hands in what it finished).
DEFAULT_CHUNK = {"local": 32, "threads": 4, "serial": 1, "ray": 256}
MAX_LISTED_FAILURES = 100
# After Ctrl-C, how long running chunks get to hand in what they finished (the solver polls
# every 0.1 s) before the workers are stopped.
STOP_GRACE = 0.5
# How long the driver waits for news of the oldest chunk at a time (a chunk's end or a package
# it finished comes at once; this only bounds the wait between checks of a failed worker).
STREAM_WAIT = 0.1


@dataclass
class BatchSummary:
    """What a run did. ``packages`` counts the packages this run scored: all were written,
    except a retried failure that failed again (its error record is in the file already)."""

    packages: int = 0
    skipped: int = 0  # already in the file (resume)
    duplicates: int = 0  # the same content met again in this run
    records: int = 0
    failed: int = 0
    seconds: float = 0.0
    truncated_tail: bool = False
    interrupted: bool = False
    stale: int = 0  # members with records in the file whose content is not in the set any more
    compaction: Compaction | None = None  # what a resume that read its whole set moved aside
    compaction_failed: str | None = None  # why it could not (the file is as the run wrote it)
    retried: int = 0  # members that ended in an error record before (resume) and were scored again
    failures: list[str] = field(default_factory=list)
    lost_worker: bool = False  # a worker process died (killed): the run stopped as if interrupted


# The work of one package (runs in a worker) ---------------------------------------------------
# A task is (raw member, its digest or None, budget keys already written); its outcome is
# (encoded records, how many, the failure messages, whether the work was interrupted before
# the end, the member's digest). A task without a digest has its digest made by the worker:
# a run with nothing to skip leaves the hashing to the workers, and drops a duplicate when
# its outcome comes back.
Task = tuple[RawMember, "str | None", frozenset[float]]
Outcome = tuple[bytes, int, list[str], bool, str]


def score_member(task: Task, options: BatchOptions, cancel: Any = None) -> Outcome:
    """The encoded records of one member. A bad package yields an error record, never raises."""
    member, given, skip = task
    member = resolve_member(member)  # a line sent by where it is: read here, then as any line
    digest = member_digest(member) if given is None else given
    source = member[0]
    package_id: str | None = None
    tag = {"member_digest": digest, "options_digest": options.digest}
    try:
        if cancel is not None and cancel.cancelled:
            return b"", 0, [], True, digest
        package = with_group_capacity(parse_member(member), options.group_capacity)
        package_id = package.package_id
        todo = [step for step in budget_plan(package, options) if step[0] not in skip]
        if not todo:
            return b"", 0, [], False, digest
        compiled = compile_validated(package)  # this worker's own, just validated
        records = score_compiled(compiled, [budget for _, budget, _ in todo], options, cancel)
        if not records:
            return b"", 0, [], True, digest
        extra: dict[str, Any] = {
            "source": source,
            "size": {"candidates": compiled.num_candidates, "groups": len(compiled.group_ids),
                     "units": len(compiled.unit_ids), "nonzeros": int(compiled.indices.size)},
        }
        meta = package.meta
        if isinstance(meta, dict) and isinstance(meta.get("distribution"), str):
            extra["distribution"] = meta["distribution"]
        extra.update(tag)
        for record, (_, _, frac) in zip(records, todo):
            if frac is not None:
                record["budget_frac"] = frac
        return encode_records_with(records, extra), len(records), [], False, digest
    except MemauditError as exc:
        message = str(exc)
        package_id = failed_package_id(exc, package_id)
    except Exception as exc:  # noqa: BLE001 - an internal failure must not end the batch
        message = f"internal error: {type(exc).__name__}: {exc}"
    if skip:
        # The member has records of this content and these options: a resume with the packages'
        # own budgets reads it again to learn them, and a limit lowered since (say) refuses it
        # now. Its records stand; an error record beside them would contradict them.
        return b"", 0, [], False, digest
    record = error_record(message, source=source, package_id=package_id)
    record.update(tag)
    # A PackageError already opens with its source: never say the label twice.
    line = message if message.startswith(f"{source}:") else f"{source}: {message}"
    return encode_records([record]), 1, [line], False, digest


def _was_interrupted(outcome: Outcome) -> bool:
    return bool(outcome[3])


def _score_chunk(chunk: list[Task], options: BatchOptions, cancel: Any = None) -> list[Outcome]:
    """Outcomes of a chunk, up to and with the first interrupted one."""
    if cancel is None:
        cancel = worker_stop_token()  # in a worker process: set when the parent interrupts
    outcomes = []
    for task in chunk:
        outcomes.append(score_member(task, options, cancel))
        hand_in(outcomes[-1])  # a worker process sends it to the driver before the chunk ends
        if outcomes[-1][3]:
            break
    return outcomes


# Counting members for the progress display, without holding up the work ---------------------------
def _own_file(output: Output) -> frozenset[tuple[int, int]]:
    """The results file and the file of its superseded records (by device and inode)."""
    own = [os.fstat(output.fd)]
    side = superseded_path(output.path)
    if side.is_file() and not side.is_symlink():
        own.append(side.stat())
    return frozenset((st.st_dev, st.st_ino) for st in own)


class _Stop(BaseException):
    """A worker's solve was interrupted: stop the run like Ctrl-C."""


_raise_interrupt = raise_interrupt


# The driver -----------------------------------------------------------------------------------
def run_batch(
    paths: str | Path | Iterable[str | Path],
    out: str | Path,
    options: BatchOptions | None = None,
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
    options = options if options is not None else BatchOptions()
    if backend not in BACKENDS:
        raise UsageError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise UsageError(f"workers must be >= 1, got {workers!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size < 1):
        raise UsageError(f"chunk size must be >= 1, got {chunk_size!r}")
    workers = workers or os.cpu_count() or 1
    size = 1 if backend == "serial" or (backend != "ray" and workers <= 1) else (chunk_size or DEFAULT_CHUNK[backend])
    if isinstance(paths, (str, os.PathLike)):  # one set, not the characters of its name
        paths = [paths]
    input_paths = [Path(p) for p in paths]
    check_sets(input_paths)
    if isinstance(out, str) and out.endswith(("/", os.sep)):
        raise UsageError(f"--out {out} names a directory; give the results file's name, e.g. {out.rstrip('/' + os.sep)}/results.jsonl")
    main_thread = threading.current_thread() is threading.main_thread()
    # SIGTERM stops the run like Ctrl-C, unless the program has a handler of its own: from
    # here on (importing Ray takes half a second, and a SIGTERM then left an empty --out).
    # Asked before the workers start: ray.init installs one (it exits at once) that is not
    # the program's, and it is put back after the run.
    own_term = main_thread and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, raise_interrupt)
    put_back = [signal.signal(signal.SIGTERM, _raise_interrupt)] if own_term else []
    try:
        return _run(input_paths, out, options, workers, backend, resume, overwrite, chunk_size, ray_address,
                    progress, size, put_back)
    finally:
        if put_back:
            signal.signal(signal.SIGTERM, put_back[0])


def _run(input_paths: list[Path], out: str | Path, options: BatchOptions, workers: int, backend: str, resume: bool,
         overwrite: bool, chunk_size: int | None, ray_address: str | None, progress: Progress | None,
         size: int, put_back: list[Any]) -> BatchSummary:
    output = open_output(Path(out), input_paths, options, resume=resume, overwrite=overwrite)
    start = time.perf_counter()
    try:
        # Workers (or a Ray cluster) first: if they cannot start, the output stays as it was.
        runner = make_runner(backend, _score_chunk, (options,), workers, ray_address, _was_interrupted)
    except BaseException:
        output.abandon()
        raise
    if put_back and signal.getsignal(signal.SIGTERM) is not _raise_interrupt:
        put_back[0] = signal.signal(signal.SIGTERM, _raise_interrupt)  # ray.init's: back after the run
    summary = BatchSummary(truncated_tail=output.done.torn_tail)
    # The total is counted in the background for the display only: not when nothing shows.
    shown = progress is not None and getattr(progress, "shown", True)  # any object with update() may report
    own = _own_file(output)  # the results file, when it sits in a set directory read here
    counter = Counter(input_paths, own) if shown else None
    stopped = True  # by Ctrl-C or an error: then a local Ray still starting is not waited for
    try:
        if counter is not None:
            counter.start()
        labels = _drive(input_paths, output, options, summary, progress, counter, runner, size, own,
                        ramp=chunk_size is None)
        stopped = summary.interrupted
        if not stopped:
            if not (summary.packages or summary.skipped or summary.duplicates):
                _refuse_empty(input_paths, output, summary)
            # A run that wrote nothing has not cut the file yet: readers (and compact, which reads
            # every line) must not meet a torn last line or, after --force, the old records.
            output.start()
        os.fsync(output.fd)
        if not stopped and output.done.members:
            try:
                summary.compaction = compact(output, labels, options)
            except OSError as exc:  # every record is written; the file keeps the old ones too
                summary.compaction_failed = f"{exc.filename or output.path}: {exc.strerror or exc}"
    except BaseException:
        output.abandon_if_empty()  # a file this run made and wrote nothing to goes away
        raise
    finally:
        runner.close(stopped)
        os.close(output.fd)
    summary.seconds = time.perf_counter() - start
    return summary


def _refuse_empty(input_paths: list[Path], output: Output, summary: BatchSummary) -> None:
    """A set without packages (an empty file, a folder of none; for a resume, one whose members
    all failed) is a mistake, not a run: a results file of nothing, or a resume that left error
    records beside records it then moved aside, helps no one."""
    sets = ", ".join(str(p) for p in input_paths)
    why = "an empty set"
    if summary.failed:
        why = ("its one member" if summary.failed == 1 else f"all {summary.failed} members") + " failed: " + \
            "; ".join(summary.failures[:3]) + ("; ..." if summary.failed > 3 else "")
    fix = "give a set with packages (memaudit generate --count N --out set.jsonl makes one)"
    if output.done.members:
        fix = f"{output.path} was left with the records it had, as it was; give the package set it was scored on"
    raise UsageError(f"no packages in SET {sets} ({why}), so nothing was scored; {fix}")


def _drive(input_paths: list[Path], output: Output, options: BatchOptions, summary: BatchSummary,
           progress: Progress | None, counter: Counter | None, runner: Any, size: int,
           own: frozenset[tuple[int, int]], ramp: bool = False) -> dict[str, str]:
    """Score and write the set; returns where each member was read (digest -> label) when
    the file had records before (a resume), else nothing."""
    done = output.done
    seen: set[str] = set()
    labels: dict[str, str] = {}
    planned = options.planned_keys()
    # The file's first record states the options (a resumed file has them already).
    first_write = [not done.keys and not done.errored]
    # With nothing to skip, the workers hash the members (the parent's time is what limits
    # several workers) and a duplicate is dropped when its outcome comes back, in input order.
    deferred = first_write[0]
    # A resume holds its error records back until a member turns out to be a package (scored or
    # found done): a set of none (a folder of notes, lines that are not JSON) is refused with
    # the file as it was, not left with error records and every record moved aside.
    holding = [not deferred]
    held: list[tuple[bytes, int, str]] = []

    def tick(failed: int = 0) -> None:
        if progress is None:
            return
        if counter is not None and counter.total is not None and progress.total is None:
            progress.set_total(counter.total)
        progress.update(1, failed=failed)

    def pending() -> Iterator[Task]:
        if deferred:
            # Workers on this machine (processes, a local Ray) read the lines themselves: the
            # parent sends where each line is, not its bytes (Ray workers elsewhere get bytes).
            spans = bool(getattr(runner, "reads_files", False))
            for member in read_members(input_paths, STREAM_WAIT, spans=spans, skip=own):
                yield member if member is IDLE else (member, None, frozenset())
            return
        for member in read_members(input_paths, STREAM_WAIT, skip=own):
            if member is IDLE:  # the input stalls: what finished is written meanwhile
                yield member
                continue
            digest = member_digest(member)
            if digest in seen:
                summary.duplicates += 1
                tick()
                continue
            seen.add(digest)
            labels[digest] = member[0]
            keys = done.keys.get(digest)
            # An error record holds no budget key, so it does not count as done: the cause may be
            # gone (a limit raised, a file fixed), and the member is scored again.
            if keys is not None and planned is not None and keys >= planned:
                holding[0] = False
                summary.skipped += 1
                tick()
                continue
            # A member with some records was cut short by a kill (or, with the packages' own
            # budgets, may have been): the worker solves only the budgets it lacks.
            yield member, digest, frozenset(keys or ())

    def append(data: bytes, count: int, digest: str) -> None:
        output.start()  # the first write cuts a torn last line or the old records, not before
        if first_write[0]:
            data = with_options(data, options)
            first_write[0] = False
        try:
            write_all(output.fd, data)
        except OSError as exc:
            raise OutputError(
                f"{output.path}: cannot write results: {exc.strerror or exc}; the {summary.packages} "
                "packages written before are kept (a record cut short is dropped on resume); fix "
                "that and run the same command with --resume") from None
        output.appended.append(digest)  # compact checks the file's order with it
        summary.records += count

    def release() -> None:
        holding[0] = False
        for item in held:
            append(*item)
        held.clear()

    def write(outcomes: list[Outcome]) -> None:
        for data, count, errors, interrupted, digest in outcomes:
            if interrupted:
                raise _Stop
            if deferred:
                if digest in seen:
                    summary.duplicates += 1
                    tick()
                    continue
                seen.add(digest)
            if not data:
                holding[0] = False
                summary.skipped += 1
                tick()
                continue
            retried = digest in done.errored
            summary.retried += retried
            if retried and holding[0]:
                release()  # a member the file knows: the set is the file's, whatever fails
            if errors and (retried or holding[0]):
                # Failed again: the file has this member's error record already (one record
                # per key); the failure still counts. Else held until a package comes.
                if not retried:
                    held.append((data, count, digest))
                summary.packages += 1
                _count_failure(summary, errors)
                tick(1)
                continue
            release()
            append(data, count, digest)
            summary.packages += 1
            if errors:
                _count_failure(summary, errors)
            tick(1 if errors else 0)

    window: deque[Any] = deque()

    streams = isinstance(runner, ProcessRunner)

    def write_oldest() -> None:
        # The chunk stays in the window while the driver waits for it: a Ctrl-C during the
        # wait leaves it to _keep_finished, which writes what it finished (taken off first, a
        # chunk of finished packages waiting on a slow one was lost). Worker processes hand
        # in each package as it finishes: written at once, not when the whole chunk is done.
        if streams:
            while not runner.finished(window[0]):
                write(runner.take(window[0], STREAM_WAIT))
        outcomes = runner.result(window[0])
        window.popleft()
        write(outcomes)

    try:
        # Chunks of the default size start small and double (a size the user chose is kept).
        for chunk in chunks(pending(), size, first=1 if ramp else None):
            if chunk:
                window.append(runner.submit(chunk))
            if streams and window:
                write(runner.take(window[0], 0))  # while reading a slow input, too
            # A full window waits for its oldest chunk; finished ones are written at once (a
            # chunk the driver scored itself, say, while Ray starts), and while the input
            # stalls (no chunk) the runner is asked, Ray too, whatever it costs.
            while window and (len(window) >= runner.depth or runner.finished(window[0])
                              or (not chunk and runner.wait(window[0], 0))):
                write_oldest()
        while window:
            write_oldest()
    except (KeyboardInterrupt, _Stop):
        summary.interrupted = True
        # A pool that lost a worker stops the others (SIGTERM): their cut-short outcomes may
        # come before the pool says it is broken.
        summary.lost_worker = streams and runner.lost_worker()
        _keep_finished(runner, window, write, streams)
    except BrokenProcessPool:
        # A worker was killed (the system's out-of-memory killer, say): the pool cannot go on,
        # and which package it held is not known here. What finished is kept, as on Ctrl-C.
        summary.interrupted = summary.lost_worker = True
        _keep_finished(runner, window, write, streams)
    except BaseException:
        runner.stop()  # an internal failure: no worker goes on solving for nobody
        raise
    if not holding[0]:
        release()  # errors held before a member that was skipped as done
    elif summary.failed and not summary.interrupted:
        _refuse_empty(input_paths, output, summary)
    if not summary.interrupted:  # members not reached are not gone from the set
        summary.stale = len(done.members - seen)
    return labels


def _count_failure(summary: BatchSummary, errors: list[str]) -> None:
    summary.failed += 1
    room = MAX_LISTED_FAILURES - len(summary.failures)
    summary.failures.extend(errors[:max(0, room)])


def _keep_finished(runner: Any, window: deque[Any], write: Callable[[list[Outcome]], None],
                   streams: bool = False) -> None:
    """After an interruption: stop running work early, write what finished, end the rest."""
    held = {}
    if threading.current_thread() is threading.main_thread():
        # A second Ctrl-C, or a SIGTERM that came to the group after the first reached this
        # process, must not cut the writing of what finished short.
        held[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
        if signal.getsignal(signal.SIGTERM) is _raise_interrupt:
            held[signal.SIGTERM] = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        runner.interrupt()
        deadline = time.monotonic() + STOP_GRACE
        for handle in window:
            if runner.wait(handle, max(0.0, deadline - time.monotonic())):
                write([o for o in runner.result(handle) if not o[3]])
            elif streams:  # still running: what it handed in so far
                write([o for o in runner.take(handle, 0) if not o[3]])
        runner.stop()
    finally:
        for signum, previous in held.items():
            signal.signal(signum, previous)
