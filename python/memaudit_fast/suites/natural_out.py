"""Where ``memaudit natural`` puts its packages: one JSONL set, or one file per package.

The rules are :class:`~memaudit_fast.model.outputs.OutputPath`'s, and two more that come from
writing many files named from data:

- a file name made from an id (a LoCoMo ``sample_id``) goes through
  :func:`~memaudit_fast.model.outputs.safe_name`, so it stays one path component of bounded
  length; two ids that map to one name are refused (naming both), never given an
  order-dependent suffix that a later run could hand to the other id;
- every file is checked before any is written, and all are written or none: the files are
  staged under temporary names and renamed into place once every one is complete (a new
  directory is built whole and renamed), so a failure leaves the directory as it was.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from ..model.jsonio import dumps
from ..model.outputs import OutputPath, current_umask, safe_name
from ..model.package import Package
from ..model.sets import is_jsonl, write_package_set


def check_out(out: Path, *, source: Path, force: bool) -> None:
    """Refuse ``--out`` before any work: the input itself, or a file where a directory goes.

    The files of a directory are checked once their names are known (:func:`write_packages`).
    """
    if is_jsonl(out):
        OutputPath(out, inputs=(source,), force=force).check()
        return
    if out.resolve() == source.resolve():
        raise UsageError(f"{out}: refusing to write over the input {source}; choose another output path")
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory; give a directory "
                         "or a name ending in .jsonl")


def file_names(ids: Sequence[str], *, prefix: str = "", label: str = "id") -> list[str]:
    """``<prefix><safe id>.json`` per id; two ids that would share a file are refused (``label``
    names the ids in the message, e.g. ``sample_id``)."""
    names: list[str] = []
    first: dict[str, int] = {}  # a name's lower case (one file on a case-insensitive disk) -> index
    for index, name_id in enumerate(ids):
        name = f"{prefix}{safe_name(name_id)}.json"
        other = first.setdefault(name.lower(), index)
        if other != index:
            if ids[other] == name_id:
                raise UsageError(f"two packages have the {label} {name_id!r}; give each its own")
            raise UsageError(f"{label}s {ids[other]!r} and {name_id!r} map to one file name {name!r} (a file "
                             "name keeps only letters, digits and ._+@=-, and ignores case); write a "
                             ".jsonl set instead")
        names.append(name)
    return names


def write_packages(packages: Sequence[Package], out: Path, names: Sequence[str], *,
                   source: Path, force: bool) -> None:
    """Write ``packages`` as ``out/<name>`` files (or one set when ``out`` is ``.jsonl``), all or none."""
    if is_jsonl(out):
        OutputPath(out, inputs=(source,), force=force).check()
        write_package_set(packages, out, overwrite=force)
        return
    check_out(out, source=source, force=force)
    targets = [OutputPath(out / name, inputs=(source,), force=force).check() for name in names]
    texts = [dumps(pkg.data) + "\n" for pkg in packages]
    if not out.exists():
        with OutputPath(out, inputs=(source,), kind="dir").directory() as tmp:
            for name, text in zip(names, texts):
                (tmp / name).write_text(text, encoding="utf-8")
        return
    _stage_and_rename([t.path for t in targets], texts)


def _stage_and_rename(targets: list[Path], texts: list[str]) -> None:
    """Write every file under a temporary name beside its target, then rename them all."""
    staged: list[str] = []
    current, placed = Path(), 0
    try:
        for target, text in zip(targets, texts):
            current = target
            fd, tmp = tempfile.mkstemp(prefix=".natural.", suffix=".tmp", dir=target.parent)
            staged.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~current_umask())
        for target, tmp in zip(targets, staged):
            current = target
            os.replace(tmp, target)  # a link at target is replaced, never followed
            placed += 1
        staged = []
    except OSError as exc:
        reason = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                  errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
                  errno.EPERM: "permission denied"}.get(exc.errno or 0, exc.strerror or str(exc))
        done = f"{placed} of {len(targets)} package files were written" if placed else "no package file was written"
        raise UsageError(f"{current}: cannot write ({reason}); {done}") from None
    finally:
        for tmp in staged[placed:]:
            if os.path.lexists(tmp):
                os.unlink(tmp)
