"""A resumed batch's results file made to describe the set it was resumed on.

Records are keyed by member content, so a member edited between two runs is solved anew and
one removed is not met again; the records of their old content would otherwise stay in the
file beside the new ones, and every reader of the file (export, report, pandas) would count a
package twice, or one that is no longer in the set. Once a resumed run has read its whole set
(not when it is interrupted), :func:`compact` therefore

* moves the records of members that are no longer in the set to a file beside the results,
  ``NAME.superseded.jsonl`` (appended, nothing lost; the lines it already holds are not
  written twice);
* sets ``source`` of the records kept to where their member is now (a removed line moves the
  lines after it), so the file holds what a fresh run on the edited set would write.

A resume whose set lost no member leaves the file as it is, even when its members are named
otherwise now (the set by an absolute path, or on stdin): ``source`` says where a member was
read when it was scored.

The new file is written beside the old one, synced and renamed over it, locked before the
rename: a kill at any moment leaves the old file or the new one, never a part.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..results.records import encode_records
from .batch_resume import BatchOptions, Output, _lock, _read_whole, write_all

__all__ = ["Compaction", "compact", "superseded_path"]


def superseded_path(out: Path) -> Path:
    """Where the records a compaction takes out of ``out`` go: ``r.jsonl`` -> ``r.superseded.jsonl``."""
    name = out.name.removesuffix(".jsonl")
    return out.with_name(name + ".superseded.jsonl")


@dataclass
class Compaction:
    moved_records: int  # records of members no longer in the set, now in ``moved_to``
    moved_members: int
    relabelled: int  # records whose ``source`` now says where their member is
    moved_to: Path


def compact(output: Output, labels: dict[str, str], stale: set[str], options: BatchOptions) -> Compaction | None:
    """Rewrite ``output`` without the records of ``stale`` members and with ``source`` as in
    ``labels`` (member digest -> where it was read this run); None when nothing changes.
    ``output.fd`` is the new file's afterwards (still locked)."""
    kept: list[bytes] = []
    moved: list[bytes] = []
    moved_members: set[str] = set()
    relabelled = 0
    for line in _read_whole(output.fd).splitlines(keepends=True):
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
        kept.append(line)
    if not moved:
        # Only a set that lost members is rewritten: a resume that names its set another way
        # (an absolute path, stdin) leaves the file as it is, sources and all.
        return None
    first = orjson.loads(kept[0]) if kept else {}
    if kept and "options" not in first:  # the file's first record states the options
        first["options"] = options.identity()
        kept[0] = encode_records([first])
    side = superseded_path(output.path)
    if moved:
        _append_new_lines(side, moved)
    _replace(output, b"".join(kept))
    return Compaction(len(moved), len(moved_members), relabelled, side)


def _append_new_lines(path: Path, lines: list[bytes]) -> None:
    """Append the lines ``path`` does not hold yet (a compaction killed before its rename is
    done again by the next resume)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)
    try:
        held = set(_read_whole(fd).splitlines(keepends=True))
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
        _lock(fd)  # a run that opens the new file after the rename is refused, as before it
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
