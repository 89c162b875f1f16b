"""The MILP files of ``--write-model``: names any package id can take, and a run's files
written whole or not at all.

:class:`ModelWriter` is one run's output directory: every name is checked before any file is
written, each model goes through a temporary directory beside its place (HiGHS writes to a
path, so the files are renamed into place once complete), and a failed run's files are removed,
so that the run can be repeated. :func:`bounded_model_stem` keeps a name within what a file
system takes, whatever the package id.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import CertificationError, UsageError
from ..model.compiled import CompiledPackage
from .milp import MODEL_FORMATS, MilpModel, model_stem, write_milp

#: Characters a model file's stem may take: with ``.columns.json`` and the temporary names
#: of :class:`ModelWriter` it stays well under the 255 bytes a file name may have.
MAX_MODEL_STEM = 150
#: How each model format ends: a file cut short (a full disk under HiGHS's own writer, which
#: does not report it) lacks it.
_MODEL_ENDS = {"mps": b"ENDATA", "lp": b"end"}


def bounded_model_stem(package_id: str, budget: float, suffix: str = "") -> str:
    """:func:`~memaudit_fast.solve.milp.model_stem`, at most :data:`MAX_MODEL_STEM` characters.

    A longer (legal) package id is cut, and the digest of the whole id kept after it (the one
    ``model_stem`` adds to an id it changed), so two long ids sharing a prefix keep apart.
    """
    stem = model_stem(package_id, budget, suffix)
    if len(stem) <= MAX_MODEL_STEM:
        return stem
    name, tail = stem.rsplit("__B", 1)
    digest = hashlib.sha256(package_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    name = name.removesuffix("-" + digest)
    keep = max(1, MAX_MODEL_STEM - len(tail) - len("__B") - len(digest) - 1)
    return f"{name[:keep].rstrip('._-') or 'package'}-{digest}__B{tail}"


class ModelWriter:
    """The ``--write-model`` directory of one run.

    Every name is checked before anything is written (:meth:`check`): a file there already
    (an earlier run's, or the user's) is never written over, and refusing it writes nothing.
    Each model is written by HiGHS under a temporary directory beside its final place, checked
    to be complete, and renamed into place, so no file is ever seen half written. When the run
    fails, :meth:`remove_written` takes away what it wrote, so the run can simply be repeated.
    A model asked for twice in one run (two results of one package and budget) is written once.
    """

    def __init__(self, directory: str | Path, option: str = "--write-model") -> None:
        self.directory = Path(directory)
        self.option = option
        self.written: list[Path] = []
        self.made: list[Path] = []  # directories this run created, innermost last
        self.entries: dict[str, dict[str, Any]] = {}

    def _names(self, stem: str) -> list[str]:
        return [*(f"{stem}.{fmt}" for fmt in MODEL_FORMATS), f"{stem}.columns.json"]

    def check(self, stems: Iterable[str]) -> None:
        """Raise UsageError, writing nothing, unless every model of ``stems`` may be written."""
        where = f"{self.option} {self.directory}"
        if self.directory.is_symlink():
            raise UsageError(f"{where}: is a symbolic link; outputs are never written through links; "
                             "give the directory itself")
        if self.directory.exists() and not self.directory.is_dir():
            raise UsageError(f"{where}: exists and is not a directory; give a directory")
        for stem in dict.fromkeys(stems):
            if stem in self.entries:
                continue
            for name in self._names(stem):
                target = self.directory / name
                if target.exists() or target.is_symlink():
                    # Never written over: it may be another run's (or the user's own) file.
                    raise UsageError(f"{where}: {name} exists already (an earlier run's?); nothing was "
                                     "written; give a new or empty directory, or remove the file")
        parent = self.directory if self.directory.is_dir() else _existing_parent(self.directory)
        if not parent.is_dir():
            raise UsageError(f"{where}: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"{where}: cannot write in {parent} (permission denied); nothing was written")

    def write(self, model: MilpModel, c: CompiledPackage, stem: str) -> dict[str, Any]:
        """Write one model (``write_milp``'s record, with the files' final paths)."""
        if stem in self.entries:
            return self.entries[stem]
        self.check([stem])
        self._make_directory()
        staged = None
        name = " / ".join(self._names(stem) if model.num_cols else self._names(stem)[-1:])
        try:
            staged = Path(tempfile.mkdtemp(prefix=".model.", suffix=".tmp", dir=self.directory))
            entry = write_milp(model, c, staged, stem)
            for f in entry["files"]:
                name = Path(f["path"]).name
                _check_complete(Path(f["path"]), f["format"])
            for item in [*entry["files"], entry["columns"]]:
                name = Path(item["path"]).name
                target = self.directory / name
                _move_new(staged / name, target)
                self.written.append(target)
                item["path"] = str(target)
        except (OSError, CertificationError) as exc:
            if isinstance(exc, OSError) and exc.filename:
                name = Path(exc.filename).name
            reason = _reason(exc).replace(str(staged), str(self.directory))
            raise UsageError(f"{self.option} {self.directory}: cannot write {name} ({reason}); nothing "
                             "was written there") from None
        finally:
            if staged is not None:
                shutil.rmtree(staged, ignore_errors=True)
        self.entries[stem] = entry
        return entry

    def _make_directory(self) -> None:
        missing = []
        d = self.directory
        while not d.exists() and not d.is_symlink() and d != d.parent:
            missing.append(d)
            d = d.parent
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{self.option} {self.directory}: cannot make the directory ({_reason(exc)}); "
                             "nothing was written") from None
        self.made += reversed(missing)

    def remove_unfinished(self) -> None:
        """Remove the files of a model whose writing was stopped part way (Ctrl-C between its
        files): no certificate names them. The models written whole are kept."""
        whole = {path for entry in self.entries.values() for path in _paths(entry)}
        self._remove([p for p in self.written if p not in whole])

    def remove_since(self, count: int) -> None:
        """Remove the files written after the first ``count`` of the run (the models of a
        package that failed: no certificate names them); the earlier ones are kept."""
        self._remove(self.written[count:])

    def _remove(self, paths: list[Path]) -> None:
        gone = set(paths)
        for path in paths:
            try:
                path.unlink()
            except OSError:
                pass
        self.written = [p for p in self.written if p not in gone]
        self.entries = {stem: entry for stem, entry in self.entries.items() if gone.isdisjoint(_paths(entry))}

    def remove_written(self) -> None:
        """Remove the files this run wrote, and the directories it made if they are empty."""
        for path in reversed(self.written):
            try:
                path.unlink()
            except OSError:
                pass
        self.written.clear()
        self.entries.clear()
        for d in reversed(self.made):
            try:
                d.rmdir()
            except OSError:
                break
        self.made.clear()


def _paths(entry: dict[str, Any]) -> list[Path]:
    return [Path(item["path"]) for item in [*entry["files"], entry["columns"]]]


def _check_complete(path: Path, fmt: str) -> None:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64))
        tail = handle.read().rstrip()
        os.fsync(handle.fileno())
    if not tail.endswith(_MODEL_ENDS[fmt]):
        raise CertificationError(f"HiGHS wrote {size} bytes and stopped before the end of the model "
                                 "(is the disk full?)")


def _move_new(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, which must not exist (a link, then the name removed: never
    replacing a file that appeared meanwhile)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        raise OSError(f"{dst.name} appeared while the model was written") from None
    except OSError:  # a file system without hard links
        if dst.exists() or dst.is_symlink():
            raise OSError(f"{dst.name} appeared while the model was written") from None
        os.replace(src, dst)
        return
    src.unlink()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        known = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                 errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
                 errno.EPERM: "permission denied", errno.ENAMETOOLONG: "the file name is too long"}
        return known.get(exc.errno, exc.strerror or str(exc))
    return str(exc)


def _existing_parent(path: Path) -> Path:
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent
