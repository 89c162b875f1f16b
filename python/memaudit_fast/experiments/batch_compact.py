"""A resumed batch's results file made to describe the set it was resumed on.

Records are keyed by member content, so a member edited between two runs is solved anew and
one removed is not met again; the records of their old content would otherwise stay in the
file beside the new ones, and every reader of the file (export, report, pandas) would count a
package twice, or one that is no longer in the set. Once a resumed run has read its whole set
(not when it is interrupted), :func:`compact` therefore

* moves the records of members that are no longer in the set to a file beside the results,
  ``NAME.superseded.jsonl`` (appended, nothing lost; the lines it already holds are not
  written twice);
* sets ``source`` of the records kept to where their member is now (a line removed, inserted
  or moved moves others);
* puts the records kept in the set's order (a resume appends what it scores at the end: the
  members an interruption left out, the edited ones), a member's own records in the order
  they were written, with the options on the first record only;

so the file holds what a fresh run on the edited set would write.

A resume whose members are all where its records say, in the set's order, leaves the file as it is, even when the
set is spelt otherwise now (an absolute path after a relative one): the same line of the
same file is the same place, whichever path names it (:func:`same_place`). Whether anything
changes is known from what the resume read (:class:`~.batch_resume.Done`); only then is the
file read again.

The new file is written beside the old one, synced and renamed over it, locked before the
rename: a kill at any moment leaves the old file or the new one, never a part.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..results.records import encode_records
from .batch_resume import SUPERSEDED_SUFFIX, BatchOptions, Output, lock_file, read_whole, write_all

__all__ = ["Compaction", "compact", "superseded_path"]


def superseded_path(out: Path) -> Path:
    """Where the records a compaction takes out of ``out`` go: ``r.jsonl`` -> ``r.superseded.jsonl``."""
    name = out.name.removesuffix(".jsonl")
    return out.with_name(name + SUPERSEDED_SUFFIX)


@dataclass
class Compaction:
    moved_records: int  # records of members no longer in the set, now in ``moved_to``
    moved_members: int
    relabelled: int  # records whose ``source`` now says where their member is
    moved_to: Path
    reordered: int = 0  # records put in another place to follow the set's order


_LINE_LABEL = re.compile(r"^(.*) line (\d+)$")


def same_place(recorded: str, now: str) -> bool:
    """Whether a record's ``source`` and a member's label now name one place: the same line of
    the same file, or the same package file of a directory set, where a file may be named by
    another path now (absolute after relative, or from another working directory): the
    shorter path, without its leading ``..``, must end the longer one. Two files of one name
    in other folders (``a/set.jsonl``, ``b/set.jsonl``) are not one place."""
    if recorded == now:
        return True
    old, new = _LINE_LABEL.match(recorded), _LINE_LABEL.match(now)
    if old is None or new is None:
        return old is None and new is None and _same_file(recorded, now)
    return old.group(2) == new.group(2) and _same_file(old.group(1), new.group(1))


@functools.lru_cache(maxsize=4096)  # one set file names many members; emptied by compact()
def _same_file(recorded: str, now: str) -> bool:
    a, b = os.path.abspath(recorded), os.path.abspath(now)  # relative ones from this run's folder
    if a == b:
        return True
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    if os.path.isabs(recorded) and os.path.isabs(now):
        return False
    # A file not found from here was named from another folder: compare what both paths name.
    parts_a, parts_b = _parts(os.path.normpath(recorded)), _parts(os.path.normpath(now))
    if not parts_a or not parts_b:
        return False
    shorter, longer = sorted((parts_a, parts_b), key=len)
    return longer[len(longer) - len(shorter):] == shorter


def _parts(path: str) -> list[str]:
    """The path's names without the root and the leading ``..`` (where it was named from)."""
    parts = [part for part in path.split(os.sep) if part]
    while parts and parts[0] in (os.pardir, os.curdir):
        parts.pop(0)
    return parts


def in_order(members: Iterable[str], rank: dict[str, int]) -> bool:
    """Whether ``members`` (of records, in file order) follow their ranks; those without one
    (no longer in the set) are left out."""
    last = -1
    for member in members:
        now = rank.get(member, last)
        if now < last:
            return False
        last = now
    return True


def compact(output: Output, labels: dict[str, str], options: BatchOptions) -> Compaction | None:
    """Rewrite ``output`` without the records of members not in ``labels`` (member digest ->
    where it was read this run, in input order), with ``source`` as there and in that order;
    None when nothing changes (the file is left as it is). ``output.fd`` is the new file's
    afterwards (still locked)."""
    done = output.done
    _same_file.cache_clear()  # the files may have changed since the last run of this process
    stale = done.members - labels.keys()
    moves = any(not same_place(source, labels[member]) for member, sources in done.sources.items()
                if member in labels for source in sources)
    rank = {member: k for k, member in enumerate(labels)}
    if not stale and not moves and in_order(itertools.chain(done.order, output.appended), rank):
        return None
    kept: list[tuple[int, bytes, bool]] = []  # (rank of the member, line, whether it states the options)
    moved: list[bytes] = []
    moved_members: set[str] = set()
    relabelled = 0
    for line in read_whole(output.fd).splitlines(keepends=True):
        if not line.strip():
            continue
        record = orjson.loads(line)
        member = record.get("member_digest")
        if member in stale:
            moved.append(line)
            moved_members.add(member)
            continue
        label = labels.get(member)
        if label is not None and record.get("source") != label:
            record["source"] = label
            line = encode_records([record])
            relabelled += 1
        kept.append((rank.get(member, len(rank)), line, "options" in record))
    order = sorted(range(len(kept)), key=lambda k: kept[k][0])  # stable: a member's records keep their order
    lines = []
    for place, k in enumerate(order):
        _, line, stated = kept[k]
        if stated != (place == 0):  # the file's first record states the options, and no other
            record = orjson.loads(line)
            if stated:
                del record["options"]
            else:
                record["options"] = options.identity()
            line = encode_records([record])
        lines.append(line)
    side = superseded_path(output.path)
    if moved:
        _append_new_lines(side, moved)
    _replace(output, b"".join(lines))
    reordered = sum(place != k for place, k in enumerate(order))
    return Compaction(len(moved), len(moved_members), relabelled, side, reordered)


def _append_new_lines(path: Path, lines: list[bytes]) -> None:
    """Append the lines ``path`` does not hold yet (a compaction killed before its rename is
    done again by the next resume)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)
    try:
        held = set(read_whole(fd).splitlines(keepends=True))
        new = [line for line in lines if line not in held]
        if new:
            write_all(fd, b"".join(new))
            os.fsync(fd)
    finally:
        os.close(fd)


def _replace(output: Output, data: bytes) -> None:
    path = output.path
    temporary = path.with_name(f".{path.name}.compact-{os.getpid()}")
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    mode = os.fstat(output.fd).st_mode & 0o7777
    fd = os.open(temporary, flags, mode)
    try:
        os.fchmod(fd, mode)  # the results file's mode, whatever the umask
        lock_file(fd)  # a run that opens the new file after the rename is refused, as before it
        write_all(fd, data)
        os.fsync(fd)
        os.replace(temporary, path)
    except BaseException:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename is still atomic
    os.close(output.fd)
    output.fd = fd
