"""Output paths: the one rule every command follows when it writes a file or a directory.

:class:`OutputPath` checks an output before any work (not an input, not existing unless
``--force``, not a symbolic link unless ``--force`` and then replaced, never followed; a
directory is replaced only when it is this command's earlier output), and writes atomically:
files through a temporary file renamed into place (:func:`write_atomic`), directories built
under a temporary name beside the target and renamed when complete. A full disk, a read-only
directory or a permission error becomes a :class:`UsageError` (exit 2) and leaves nothing
partial behind. :func:`safe_name` turns a name that comes from data (an id) into one path
component, so outputs stay where the user pointed.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..errors import UsageError


def current_umask() -> int:
    """The process umask, read without changing it (``os.umask`` would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    # No /proc: create a file with mode 0o666 and see what the umask left.
    fd, probe = tempfile.mkstemp(prefix=".umask.")
    try:
        os.close(fd)
        os.unlink(probe)
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        os.close(fd)
        return 0o666 & ~os.stat(probe).st_mode & 0o777
    finally:
        if os.path.exists(probe):
            os.unlink(probe)


def _output_error(dst: Path, exc: OSError) -> UsageError:
    reason = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
              errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
              errno.EPERM: "permission denied"}.get(exc.errno or 0, exc.strerror or str(exc))
    return UsageError(f"{dst}: cannot write ({reason}); nothing was written there")


def write_atomic(dst: Path, writer: Callable[[Any], None], *, binary: bool = False) -> None:
    """Write through a temporary file in the same directory, then rename into place.

    A crash, a full disk or a permission error leaves either the old file or the complete new
    one, never half of it, and no temporary file. A symbolic link at ``dst`` is replaced by the
    new file, never followed. OS errors become a :class:`UsageError` saying what happened.
    """
    dst = Path(dst)
    tmp: str | None = None
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
        handle: IO[Any] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        )
        with handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, dst)
        tmp = None
    except OSError as exc:
        raise _output_error(dst, exc) from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def check_output_path(dst: Path, *, inputs: tuple[Path, ...] = (), overwrite: bool = False) -> None:
    """Refuse to write over an input, and over any existing file unless asked to.

    Kept for callers of the old API, which then open ``dst`` themselves; new code uses
    :class:`OutputPath`. So that such a caller can never write through a link, a symbolic link
    at ``dst`` (allowed only with ``overwrite``) is removed here (its target is untouched).
    """
    out = OutputPath(dst, inputs=inputs, force=overwrite, kind="file").check()
    if out.path.is_symlink():
        try:
            out.path.unlink()
        except OSError as exc:
            raise _output_error(out.path, exc) from None


class OutputPath:
    """One output of a command: checked before any work, written atomically.

    The rules, the same for every command:

    * an output path that is (or resolves to) one of ``inputs`` is refused;
    * an existing device, FIFO or socket is refused, even with ``force``;
    * an existing output is refused unless ``force`` (the message says to pass ``--force``;
      when ``force`` was given it is replaced, and never named as the remedy);
    * a symbolic link at the output path (dangling or not) is refused unless ``force``, and
      then replaced by the new file: it is never followed, so nothing is written elsewhere;
    * files are written through a temporary file and renamed into place (:func:`write_atomic`);
      a directory (``kind="dir"``) is built under a temporary name beside it and renamed into
      place when complete, so a full disk or a permission error leaves nothing behind;
    * an existing directory is replaced (with ``force``) only when it is empty or holds
      ``marker`` (the file that shows it is this command's output, e.g. ``index.html``) and,
      given ``owns``, when every entry in it is one this command writes (``owns(entry)``);
      otherwise it is refused and left as it was, naming a file that is not the command's, so
      ``--force`` never deletes a user's file;
    * the parent directory must be writable, which :meth:`check` tests before any work.

    Usage::

        out = OutputPath(args.out, inputs=(args.src,), force=args.force)
        out.check()                        # before any work: exit 2 with the reason
        ...                                # the work
        out.write_text(text)               # or out.write(writer), or with out.directory() as d:
    """

    def __init__(self, path: str | Path, *, inputs: tuple[str | Path, ...] = (), force: bool = False,
                 kind: str = "file", marker: str | None = None,
                 owns: Callable[[Path], bool] | None = None, what: str = "this command",
                 option: str = "output directory") -> None:
        if kind not in ("file", "dir"):
            raise ValueError(f"kind must be 'file' or 'dir', not {kind!r}")
        self.path = Path(path)
        self.inputs = tuple(Path(p) for p in inputs)
        self.force = force
        self.kind = kind
        self.marker = marker
        self.owns = owns
        self.what = what
        self.option = option

    def check(self) -> OutputPath:
        """Raise UsageError unless this output may be written; returns self."""
        dst = self.path
        resolved = dst.resolve()
        for src in self.inputs:
            if src.resolve() == resolved or (src.exists() and dst.exists() and same_file(src, dst)):
                raise UsageError(f"{dst}: refusing to write over the input {src}; choose another output path")
            if self.kind == "dir" and _inside(src.resolve(), resolved) and not dst.is_symlink():
                raise UsageError(f"{dst}: refusing to replace a directory that holds the input {src}")
        if dst.is_symlink():
            if not self.force:
                raise UsageError(f"{dst} is a symbolic link; outputs are never written through links "
                                 "(remove it, choose another path, or pass --force to replace the link)")
        elif dst.exists():
            if not (dst.is_file() or dst.is_dir()):  # replacing /dev/null with a file helps no one
                raise UsageError(f"{dst} exists and is not a regular file (a device, a FIFO or a socket); it is "
                                 "never replaced, even with --force; choose another path")
            if not self.force:
                raise UsageError(f"{dst} already exists; choose another path or pass --force")
            if self.kind == "file" and dst.is_dir():
                raise UsageError(f"{dst} is a directory; expected a file path")
            if self.kind == "dir" and not dst.is_dir():
                raise UsageError(f"{dst} is a file; expected a directory path")
            if self.kind == "dir" and any(dst.iterdir()) and not (self.marker and (dst / self.marker).exists()):
                what = f"an earlier output (no {self.marker})" if self.marker else "empty"
                raise UsageError(f"{dst} is a directory that is not {what}; it is never replaced, even "
                                 "with --force; choose a new directory")
            if self.kind == "dir" and self.owns is not None:
                self._check_owned(dst)
        parent = _existing_parent(dst)
        if not parent.is_dir():
            raise UsageError(f"{dst}: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"{dst}: cannot write in {parent} (permission denied)")
        _probe(dst, parent)
        return self

    def _check_owned(self, dst: Path) -> None:
        # --force replaces the whole directory: a file the command did not write would be lost.
        assert self.owns is not None
        foreign = sorted(entry.name for entry in dst.iterdir() if not self.owns(entry))
        if foreign:
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            raise UsageError(
                f"{dst / foreign[0]}{more}: not a file {self.what} writes; --force replaces only "
                f"{self.what}'s own files, so {dst} was left as it was: move such files out of it, "
                f"or choose another {self.option}")

    def write(self, writer: Callable[[Any], None], *, binary: bool = False) -> Path:
        """Write the file atomically (``writer`` gets the open handle)."""
        self.check()
        if self.path.is_symlink():
            self.path.unlink()
        write_atomic(self.path, writer, binary=binary)
        return self.path

    def write_text(self, text: str) -> Path:
        return self.write(lambda handle: handle.write(text))

    def write_bytes(self, data: bytes) -> Path:
        return self.write(lambda handle: handle.write(data), binary=True)

    def directory(self) -> _DirectoryBuild:
        """``with out.directory() as tmp:`` fill ``tmp``; on success it becomes the output."""
        self.check()
        return _DirectoryBuild(self)


class _DirectoryBuild:
    def __init__(self, out: OutputPath) -> None:
        self.out = out
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        dst = self.out.path
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent))
            os.chmod(self.tmp, 0o777 & ~current_umask())
        except OSError as exc:
            raise _output_error(dst, exc) from None
        return self.tmp

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        assert self.tmp is not None
        dst = self.out.path
        if kind is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if isinstance(exc, OSError):
                raise _output_error(dst, exc) from None
            return
        try:
            old: Path | None = None
            if dst.is_symlink() or dst.is_file():
                dst.unlink()
            elif dst.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old.", dir=dst.parent))
                os.rmdir(old)
                os.replace(dst, old)
            os.replace(self.tmp, dst)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except OSError as error:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise _output_error(dst, error) from None


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (a hard link, say); False when either is missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.relative_to(directory)
    except ValueError:
        return False
    return True


def _probe(dst: Path, parent: Path) -> None:
    """Create and remove a file in ``parent``: os.access answers yes to root everywhere, and on
    file systems that take no files (/proc, a read-only mount) the write failed only after
    the work."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".memaudit-probe.", dir=parent)
    except OSError as exc:
        raise _output_error(dst, exc) from None
    os.close(fd)
    os.unlink(probe)


def _existing_parent(path: Path) -> Path:
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._+@=-]+")


def safe_name(name: Any, *, fallback: str = "item") -> str:
    """A file or directory name made from data (an id), that stays one path component.

    Separators, ``..``, control characters, leading dots and anything outside a portable set
    become ``_``; the result is never empty, never ``.``/``..``, at most 120 characters. Two
    different names can map to one result: a caller that writes several adds a digest of the
    exact name where it changed (as ``writers.store.store_dir_name`` does), so that each name
    keeps its own, whatever else the run writes.
    """
    text = str(name)
    text = _UNSAFE_NAME.sub("_", text).strip("_")
    text = text.lstrip(".") or fallback
    if len(text) > 120:
        import hashlib

        text = text[:100] + "-" + hashlib.sha256(str(name).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return text
