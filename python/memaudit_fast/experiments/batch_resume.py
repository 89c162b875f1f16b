"""Options and the results file of a batch: the options' digest, resume, one writer at a time.

A batch record's key is (member digest, options digest, budget), with ``budget_frac`` in place
of the budget when the run uses fractions (see :mod:`.batch`). This module owns the two halves
of that key that do not come from the package: :class:`BatchOptions` (and its digest), and
the output file: opened without following links, locked against a second writer, and, for a
resume, checked whole before anything in it changes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from .. import _core
from ..errors import MemauditError, PackageError, UsageError
from ..model.compiled import check_budgets
from ..model.jsonio import loads_strict, read_bytes, read_text
from ..model.outputs import same_file
from ..model.sets import RawMember
from ..results.records import (
    RECORD_START_PATTERN,
    ResultsFile,
    encode_records,
    parse_results,
    plain_number,
    validate_record,
)
from ..solve.exact import MAX_NODE_LIMIT

__all__ = ["DIGEST_SCHEME", "BatchOptions", "format_number", "lock_file", "member_digest", "open_output", "read_done",
           "read_whole", "starts_as_results", "unique", "write_all"]

#: The end of the name of the file beside a results file that a resume moves records to.
SUPERSEDED_SUFFIX = ".superseded.jsonl"

#: How members are digested (member_digest); recorded with the options, so a file keyed
#: another way is not resumed as if its keys were this run's.
DIGEST_SCHEME = "blake2b-128 of compact JSON"


def unique(values: Iterable[Any]) -> tuple[Any, ...]:
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
    estimator: str | None = None  # model path or "embed", for the estimated writers
    group_capacity: int | None = None  # overrides objective.group_capacity
    # How the options name the estimator: ``sha256:`` and the digest of a model file's canonical
    # JSON, so that the same model under any path is one estimator and a changed file is not.
    # Derived from ``estimator``; given only for options read back from a results file.
    estimator_identity: str | None = None
    # The model as digested: workers load these bytes, not the file, which may change mid-run.
    estimator_model: bytes | None = field(default=None, repr=False, compare=False)
    # "auto": a budget the branch-and-bound leaves open after its first second is raced with
    # HiGHS, as solve() does; None: the branch-and-bound alone (the same store on every run).
    # Not digested: either way a record states OPT or proven bounds (like the worker count).
    finish: str | None = "auto"

    def __post_init__(self) -> None:
        if self.budgets is not None and self.budget_fracs is not None:
            raise UsageError("give budgets or budget fractions, not both")
        for name in ("budgets", "budget_fracs"):
            values = getattr(self, name)
            if values is None:
                continue
            checked = check_budgets(values, "budgets" if name == "budgets" else "budget fractions")
            if not checked:
                raise UsageError(f"{name} is empty; give at least one value, or None for the packages' own budgets")
            object.__setattr__(self, name, unique(checked))
        writers = self.writers
        if isinstance(writers, str):  # one name or "gvt,greedy", not its characters
            writers = tuple(w.strip() for w in writers.split(",") if w.strip())
        object.__setattr__(self, "writers", unique(str(w) for w in writers))
        if self.writers:
            from ..evaluate.baselines import ALL_WRITERS as known

            unknown = [w for w in self.writers if w not in known]
            if unknown:
                raise UsageError(f"unknown writer(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
        if self.finish not in ("auto", None):
            raise UsageError(f"finish must be 'auto' or None (the branch-and-bound alone), not {self.finish!r}")
        if self.certify not in ("none", "auto", "highs", "gurobi"):
            raise UsageError(f"certify must be none, auto, highs or gurobi, not {self.certify!r}")
        if self.time_limit is not None and not (self.time_limit >= 0):
            raise UsageError(f"time limit must be >= 0 seconds, got {self.time_limit!r}")
        if self.node_limit is not None and (isinstance(self.node_limit, bool) or int(self.node_limit) != self.node_limit
                                            or not 0 <= self.node_limit <= MAX_NODE_LIMIT):
            raise UsageError(f"node limit must be an integer from 0 to 2^63 - 1, got {self.node_limit!r}")
        if self.group_capacity is not None and (type(self.group_capacity) is not int or self.group_capacity < 1):
            raise UsageError(f"--group-capacity must be an integer >= 1, got {self.group_capacity!r}")
        if self.estimator is not None and self.estimator_identity is None:
            if is_embedding_estimator(self.estimator):
                from ..evaluate.estimators import load_estimator

                load_estimator(self.estimator)  # an unknown embedder is refused before anything runs
                object.__setattr__(self, "estimator_identity", self.estimator)
            else:
                identity, model = estimator_model(self.estimator)
                object.__setattr__(self, "estimator_identity", identity)
                object.__setattr__(self, "estimator_model", model)

    def identity(self) -> dict[str, Any]:
        """The options that shape records, in a form that does not depend on their order."""
        return {
            "budgets": None if self.budgets is None else sorted(self.budgets),
            "budget_fracs": None if self.budget_fracs is None else sorted(self.budget_fracs),
            "writers": sorted(self.writers),
            "certify": self.certify,
            "time_limit": self.time_limit,
            "node_limit": self.node_limit,
            "estimator": self.estimator_identity,
            "group_capacity": self.group_capacity,
            "member_digest": DIGEST_SCHEME,
        }

    @cached_property
    def digest(self) -> str:
        text = orjson.dumps(self.identity(), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(text).hexdigest()[:16]

    def planned_keys(self) -> frozenset[float] | None:
        """The budget keys of every package, when the options fix them (None: each package's own)."""
        planned = self.budgets if self.budgets is not None else self.budget_fracs
        return None if planned is None else frozenset(planned)

    def key_of(self, record: dict[str, Any]) -> float | None:
        """The budget part of a record's key (None for a package-level error record)."""
        value = record.get("budget_frac") if self.budget_fracs is not None else record.get("budget")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(value)
        return float(value)


def is_embedding_estimator(spec: str) -> bool:
    return spec == "embed" or spec.startswith("embed:")


def estimator_model(spec: str) -> tuple[str, bytes]:
    """(identity, canonical JSON) of the ridge model file ``spec``; a UsageError, before any
    work, when it is missing or not a model."""
    from ..evaluate.estimators import MODEL_FORMAT, RidgeEstimator

    fix = "give the model file that memaudit train-estimator SET --out MODEL.json wrote, or --estimator embed"
    path = Path(spec)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "no such file"
        raise UsageError(f"--estimator {spec}: {what}; {fix}")
    try:
        data = loads_strict(read_text(path), source=spec)
        RidgeEstimator.from_json(data, source=spec)
    except PackageError as exc:
        raise UsageError(f"--estimator {spec}: cannot be loaded as a {MODEL_FORMAT} model: {exc.detail}; "
                         f"{fix}") from None
    except OSError as exc:
        raise UsageError(f"--estimator {spec}: cannot be read: {exc.strerror or exc}; {fix}") from None
    # Canonical JSON: the model, not its spelling (indentation, key order) is what is keyed.
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return "sha256:" + hashlib.sha256(canonical).hexdigest(), canonical


# Resume ---------------------------------------------------------------------------------------
@dataclass
class Done:
    """What a results file already holds for this run's options."""

    keys: dict[str, set[float]] = field(default_factory=dict)  # budget keys per member digest
    errored: set[str] = field(default_factory=set)  # members that ended in a package-level error
    sources: dict[str, set[str]] = field(default_factory=dict)  # where the records say each member is
    order: list[str] = field(default_factory=list)  # the member digest of each record, in file order
    complete_bytes: int = 0
    torn_tail: bool = False

    @property
    def members(self) -> set[str]:
        return set(self.keys) | self.errored


def _check_resumable(parsed: ResultsFile, options: BatchOptions) -> Done:
    """What a results file holds for resume; raises, modifying nothing, when it is not one."""
    source = parsed.source
    done = Done(complete_bytes=parsed.complete_bytes, torn_tail=bool(parsed.torn_tail))
    found_options: dict[str, Any] = {}
    other: dict[str, int] = {}
    for number, record in parsed.records:
        member, digest = record.get("member_digest"), record.get("options_digest")
        if not isinstance(member, str) or not isinstance(digest, str):
            raise PackageError(
                "this record has no member_digest / options_digest, so the file was not written by "
                "memaudit batch (or by an older version of it); resume only continues a file that "
                "this batch wrote: choose a new --out, or pass --force to replace the file",
                source=source, record=f"line {number}",
            )
        # A record export and report refuse is not one done (it was skipped as done for good).
        validate_record(record, source, f"line {number}")
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
        done.order.append(member)
        where = record.get("source")
        if isinstance(where, str):
            done.sources.setdefault(member, set()).add(where)
        if key is None:
            done.errored.add(member)
        else:
            done.keys.setdefault(member, set()).add(key)
    if other:
        raise UsageError(_options_difference(source, options, found_options, other))
    return done


def format_number(value: float) -> str:
    """A budget as the command line takes it back: every digit (``:g`` keeps six, so 1234567
    showed as 1.23457e+06, and a resume command printed that way was refused)."""
    return str(plain_number(value))


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(format_number(v) if isinstance(v, float) else str(v) for v in value) or "none"
    return str(value)


def _difference(name: str, theirs: Any, now: Any) -> str:
    if name == "estimator" and isinstance(theirs, str) and isinstance(now, str) \
            and now.startswith("sha256:") and not is_embedding_estimator(theirs):
        return (f"the estimator model differs ({_show(theirs)} in the file, {now} now: --estimator names a "
                "model whose content is not the one the file was scored with)")
    return f"{name} {_show(theirs)} in the file, {_show(now)} now"


def _options_difference(source: str, options: BatchOptions, found: dict[str, Any], other: dict[str, int]) -> str:
    now = options.identity()
    parts = []
    for digest, line in other.items():
        theirs = found.get(digest)
        if not isinstance(theirs, dict):
            parts.append(f"the records from line {line} on were made with other options (digest {digest}, "
                         f"now {options.digest}); no record says which")
            continue
        diffs = [_difference(name, theirs.get(name), now[name]) for name in now if theirs.get(name) != now[name]]
        parts.append("; ".join(diffs) or f"options digest {digest} in the file, {options.digest} now")
    if all(found.get(d, {}).get("member_digest") != DIGEST_SCHEME for d in other) \
            and all(isinstance(found.get(d), dict) for d in other) \
            and all(found[d].get(name) == now[name] for d in other for name in now if name != "member_digest"):
        return (f"{source}: this file was written by an older memaudit batch, which keyed packages by "
                "their bytes, not their JSON content, so its records cannot be matched to this run's: "
                "write to another --out (the file was not modified)")
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
    done = _check_resumable(parsed, options)
    return done.keys, done.errored, done.torn_tail


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
                    # The recorded estimator is its identity (a model's digest): no file to load.
                    estimator_identity=found.get("estimator"), group_capacity=found.get("group_capacity"),
                )
            except (MemauditError, TypeError, ValueError):
                raise PackageError("the recorded options are malformed", source=source, record=f"line {number}",
                                   field="options") from None
        break
    return BatchOptions()


DIGEST_CHARS = 32  # BLAKE2b-128: as strong as needed to key content, twice as fast as SHA-256 here


# Content digests ------------------------------------------------------------------------------
# A package's digest is over its text without the whitespace between JSON tokens, each string
# character spelt one way (an escaped one as itself, so Python's escaped non-ASCII too; numbers
# and key order as written; the core's compact_json, a few microseconds a package), so the same
# package as a .jsonl line, a pretty-printed .json file or a .json.gz file is one member. An artifact directory is keyed by its files' names and bytes (the scheme is one of
# the options a results file records: DIGEST_SCHEME).
def _digest_json(text: bytes, h: Any) -> None:
    h.update(b"json\0")
    h.update(_core.compact_json(text))


def _digest_path(path: Path, h: Any) -> None:
    if path.is_dir():
        h.update(b"directory\0")
        for child in sorted(path.iterdir()):
            # Every entry counts, read or not (a link by its target, a FIFO or folder by its
            # kind): two broken directories must not share a digest and hide one failure.
            # (A regular file hashes as it always has, so that earlier results files resume.)
            mode = child.lstat().st_mode
            kind = b"" if stat.S_ISREG(mode) else b"\0link\0" if stat.S_ISLNK(mode) else b"\0other%o\0" % stat.S_IFMT(mode)
            h.update(kind + child.name.encode("utf-8", "surrogateescape") + b"\0")
            if stat.S_ISLNK(mode):
                h.update(os.fsencode(os.readlink(child)))
            elif stat.S_ISREG(mode):
                with open(child, "rb") as handle:  # in pieces: an extra file may be large
                    for piece in iter(lambda: handle.read(1 << 20), b""):
                        h.update(piece)
            h.update(b"\0")
    else:
        _digest_json(read_bytes(path), h)  # decompressed (.json.gz), within the file-size limit


def member_digest(member: RawMember) -> str:
    """The digest of a set member's content (what resume keys records by)."""
    label, kind, payload = member
    h = hashlib.blake2b(digest_size=DIGEST_CHARS // 2)
    if kind == "text":
        text = payload if isinstance(payload, (bytes, bytearray)) else payload.encode("utf-8", "surrogatepass")
        _digest_json(bytes(text), h)
    elif kind == "path":
        try:
            _digest_path(Path(str(payload)), h)
        except (OSError, PackageError) as exc:
            h.update(f"unreadable\0{label}\0{exc}".encode("utf-8", "surrogateescape"))
    else:
        # A member that could not be read: keyed by where it is and why, so that an
        # unchanged failure is not retried, and a fixed one is.
        detail = payload if isinstance(payload, str) else payload.decode("utf-8", "surrogateescape")
        h.update(f"{kind}\0{label}\0{detail}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


# The output file ------------------------------------------------------------------------------
@dataclass
class Output:
    """The locked output of a run. Nothing in it changes before :meth:`start`."""

    path: Path
    fd: int
    done: Done
    created: bool  # the file did not exist before this run
    keep_bytes: int | None  # where start() cuts the file (None: as it is)
    made: tuple[Path, ...] = ()  # directories made for it, deepest first
    appended: list[str] = field(default_factory=list)  # the member of each write of this run, in order

    def start(self) -> None:
        """Drop a torn last line (resume) or the old records (overwrite), once. Called at the
        run's first write, or when a run ends complete: a refused run, or an interrupted one
        that wrote nothing, leaves the file as it was."""
        if self.keep_bytes is not None:
            os.ftruncate(self.fd, self.keep_bytes)
            self.keep_bytes = None

    def abandon(self) -> None:
        """Close without having started: an empty file this run created goes away."""
        try:
            self.abandon_if_empty()
        finally:
            os.close(self.fd)

    def abandon_if_empty(self) -> None:
        """Remove the file if this run created it and it is still empty (the caller closes it)."""
        if self.created and os.fstat(self.fd).st_size == 0:
            self.path.unlink(missing_ok=True)
            for folder in self.made:
                try:
                    folder.rmdir()  # only while empty
                except OSError:
                    break


def _holds_other_than_results(path: Path) -> bool:
    """Whether ``path`` is a non-empty file that does not start as a results file does."""
    try:
        with path.open("rb") as f:
            head = f.read(256).lstrip()
    except OSError:
        return False
    return bool(head) and not RECORD_START_PATTERN.match(head)


def starts_as_results(path: Path) -> bool:
    """Whether the first non-blank line of ``path`` (a .jsonl or .jsonl.gz file) opens a result
    record. Only a bounded prefix is read: a set may be large."""
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")) as f:
            head = f.read(1 << 16).lstrip()
    except (OSError, EOFError, zlib.error):
        return False  # the set's reader says what is wrong with it
    return bool(RECORD_START_PATTERN.match(head))


def lock_file(fd: int) -> bool:
    """Take ``fd``'s exclusive advisory lock without waiting; False when another holds it."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def open_output(out: Path, inputs: list[Path], options: BatchOptions, *, resume: bool, overwrite: bool) -> Output:
    """Check, open and lock the output; nothing in it is modified until ``Output.start``."""
    if resume and overwrite:
        raise UsageError("--resume continues the results file and --force replaces it; give one of them")
    if str(out) == "-":
        raise UsageError("--out -: a batch writes a results file (appended, resumable, locked), not standard "
                         "output; give a file name, e.g. --out results.jsonl")
    if out.name.endswith(".gz"):
        # Records are appended one package at a time and a resumed file is cut back to its last
        # whole line: that needs plain text. A .gz name would hold plain JSONL under a name that
        # every reader takes for gzip.
        plain = out.name[: -len(".gz")]
        raise UsageError(f"--out {out}: results are written as plain JSONL (appended, resumable), not gzip; "
                         f"give a name without .gz (e.g. {plain}) and compress the finished file if needed "
                         f"(gzip -k {plain})")
    if out.name.endswith(SUPERSEDED_SUFFIX):
        # A resume moves the records of members no longer in the set there (batch_compact):
        # results written into it would be taken for those, and a resume of it would archive
        # its own records in NAME.superseded.superseded.jsonl.
        raise UsageError(f"--out {out}: names ending in {SUPERSEDED_SUFFIX} are where a resume keeps the records of "
                         "packages no longer in the set, not a results file to write; choose another --out")
    resolved = out.resolve()
    side = out.with_name(out.name.removesuffix(".jsonl") + SUPERSEDED_SUFFIX)  # a resume may append there
    for p in inputs:
        if p.resolve() == side.resolve() or (side.exists() and same_file(p, side)):
            raise UsageError(f"--out {out}: a resume keeps moved records in {side}, which is an input; choose another --out")
        if p.resolve() == resolved:
            raise UsageError(f"{out}: refusing to write results over an input")
        if same_file(p, out):  # a hard link: --force would empty the input, --resume append to it
            raise UsageError(f"{out}: refusing to write results over an input ({p} is the same file under "
                             "another name); choose another --out")
        if overwrite and p.is_dir() and resolved.parent == p.resolve() and _holds_other_than_results(out):
            # A results file may sit in a set directory (the run skips its own file), but --force
            # must not empty a member of the set.
            raise UsageError(f"--out {out} is a file of {p}, a directory this run reads as a set, and it holds "
                             "no results (a package?); --force would replace it: choose another --out")
    if out.is_symlink():
        raise UsageError(f"{out} is a symbolic link; give the path of the results file itself")
    existed = out.exists()
    if existed and not out.is_file():
        raise UsageError(f"{out} exists and is not a regular file; choose another --out")
    if existed and not resume and not overwrite and out.stat().st_size > 0:
        raise UsageError(f"{out} already exists; pass --resume to continue it or --force to replace it")
    made = []  # the missing directories above the file, which abandon() removes again
    for folder in [out.parent, *out.parent.parents]:
        if folder.exists():
            break
        made.append(folder)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create its directory {out.parent}: {exc.strerror or exc}"
                         f"{' (a file of that name is in the way)' if isinstance(exc, (FileExistsError, NotADirectoryError)) else ''}; "
                         "choose another --out") from None
    fd = _open_locked(out)
    try:
        done = Done()
        keep: int | None = None
        if resume:
            data = read_whole(fd)
            try:
                parsed = parse_results(data, str(out))
            except PackageError as exc:
                # parse_results says what is wrong with the file, not what to do about it.
                raise PackageError(
                    f"{exc.detail}; --resume continues only a results file that memaudit batch wrote "
                    "(the file was not modified): choose another --out",  # not --force: it may be a package set
                    package_id=exc.package_id, record=exc.record, field=exc.field, source=exc.source,
                ) from None
            if data and not data.strip():
                # Blank lines only: no run wrote this, and records appended after them would
                # leave a file that starts with blank lines.
                raise UsageError(f"{out} holds only blank lines, not results; --resume continues a results file that "
                                 "memaudit batch wrote (the file was not modified): remove it, pass --force, or "
                                 "choose another --out")
            done = _check_resumable(parsed, options)
            keep = done.complete_bytes if done.torn_tail else None
        elif overwrite:
            keep = 0
    except BaseException:
        Output(out, fd, Done(), not existed, None, tuple(made)).abandon()
        raise
    return Output(out, fd, done, not existed, keep, tuple(made))


def _open_locked(out: Path) -> int:
    """``out`` opened for appending and locked. A run that ends by replacing its file (a resume
    that moved records aside, :mod:`.batch_compact`) releases the lock of a file no longer at
    ``out``: a lock won on that one is let go and the file at ``out`` is opened again."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(out, flags, 0o666)
        except OSError as exc:
            raise UsageError(f"{out}: cannot open for writing: {exc.strerror or exc}") from None
        if not lock_file(fd):
            os.close(fd)
            raise UsageError(f"{out} is being written by another batch run (it holds the file's lock); "
                             "wait for it to finish, or choose another --out")
        try:
            now = os.stat(out, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        held = os.fstat(fd)
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)


def read_whole(fd: int) -> bytes:
    """The file's content, read to its end: st_size is 0 for files that are made as they are
    read (/proc), and such content must be checked too, not taken for an empty file."""
    parts: list[bytes] = []
    offset = 0
    while True:
        part = os.pread(fd, max(1 << 20, os.fstat(fd).st_size - offset), offset)
        if not part:
            return b"".join(parts)
        parts.append(part)
        offset += len(part)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def with_options(data: bytes, options: BatchOptions) -> bytes:
    """The first record of a file also carries the options."""
    cut = data.index(b"\n") + 1
    first = orjson.loads(data[:cut])
    first["options"] = options.identity()
    return encode_records([first]) + data[cut:]
