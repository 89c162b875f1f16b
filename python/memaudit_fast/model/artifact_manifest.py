"""The manifest and the extra entries of an artifact directory (see :mod:`.artifact`).

The manifest ``candidate_generation_manifest.json`` is the artifact's own record, kept as
given, plus one block this package adds, ``"memaudit"``: the native fields the seven files have
no place for (``top``: budgets, objective, package id, meta, ...), the lists the package did
not have (``absent_lists``) and the record keys that had to travel outside the files so that
the reader would not take them for artifact fields (``kept_keys``). Every value the reader
takes from the manifest is type-checked here; a wrong one is bad input naming the manifest and
the field, never a value replaced by a default.

Any other entry of the directory is kept as an extra file when it is a regular file with a
plain name (text as text, anything else as base64). A regular file beyond the size cap is not
read whole: it is named in ``meta.artifact.not_read``. Every other entry (a symbolic link, a
subdirectory, a FIFO, a device, a hidden name) is refused with its name, because it could
neither be read nor written back.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..errors import PackageError
from .jsonio import cut, describe

REQUIRED_FILES = (
    "experiences.jsonl",
    "evidence_units.jsonl",
    "queries.jsonl",
    "candidate_memories.jsonl",
    "coverage_matrix.jsonl",
    "annotation_decisions.jsonl",
    "candidate_generation_manifest.json",
)
MANIFEST = "candidate_generation_manifest.json"
# Extra top-level files are kept up to this size each.
MAX_EXTRA_FILE_BYTES = 16 * 1024 * 1024
# The lists a package may lack (units and candidates are required).
OPTIONAL_LISTS = ("experiences", "queries")
RECORD_LISTS = ("experiences", "units", "candidates", "queries")
MEMAUDIT_KEYS = ("top", "absent_lists", "kept_keys")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def plain_extra_name(name: str) -> bool:
    """Whether ``name`` can be an extra file: one visible path component, not one of the seven."""
    return not (name in REQUIRED_FILES or name.startswith(".") or "/" in name or "\\" in name
                or "\x00" in name or name == "" or len(name.encode("utf-8", "surrogatepass")) > 255)


def memaudit_block(manifest: dict[str, Any], source: str) -> dict[str, Any]:
    """The manifest's ``"memaudit"`` block, checked (``{}`` when there is none)."""
    if "memaudit" not in manifest:
        return {}
    block = manifest["memaudit"]

    def bad(fld: str, found: Any, expected: str) -> PackageError:
        return PackageError(f"found {describe(found)}, expected {expected}", source=source, field=fld)

    if not isinstance(block, dict):
        raise bad("memaudit", block, "an object holding the package's native fields (top, absent_lists, "
                  "kept_keys)")
    for key in block:
        if key not in MEMAUDIT_KEYS:
            raise PackageError(f"an unknown key; the block holds only {', '.join(MEMAUDIT_KEYS)}",
                               source=source, field=f"memaudit.{key}")
    top = block.get("top", {})
    if not isinstance(top, dict):
        raise bad("memaudit.top", top, "an object of the package's top-level fields")
    for key in ("format", *RECORD_LISTS):
        if key in top:
            raise PackageError(f"{key!r} is held by the directory's files, not by the manifest",
                               source=source, field=f"memaudit.top.{key}")
    if "package_id" in top and (not isinstance(top["package_id"], str) or not top["package_id"]):
        raise bad("memaudit.top.package_id", top["package_id"], "the package id as a non-empty string")
    if "meta" in top and not isinstance(top["meta"], dict):
        raise bad("memaudit.top.meta", top["meta"], "an object (the package's meta)")
    absent = block.get("absent_lists", [])
    if not isinstance(absent, list):
        raise bad("memaudit.absent_lists", absent, f"a list of list names ({', '.join(OPTIONAL_LISTS)})")
    for k, name in enumerate(absent):
        if name not in OPTIONAL_LISTS or absent.index(name) != k:
            raise bad(f"memaudit.absent_lists[{k}]", name,
                      f"one of {', '.join(map(repr, OPTIONAL_LISTS))}, each at most once")
    if not isinstance(block.get("kept_keys", []), list):
        raise bad("memaudit.kept_keys", block["kept_keys"], "a list of kept record keys")
    return block


def package_id_of(manifest: dict[str, Any], top: dict[str, Any], source: str, directory: Path) -> str:
    """The stored package id, else the artifact's ``instance_id``, else the directory's name."""
    if "package_id" in top:
        return str(top["package_id"])
    if "instance_id" in manifest:
        value = manifest["instance_id"]
        if not isinstance(value, str) or not value:
            raise PackageError(f"found {describe(value)}, expected the instance id as a non-empty string "
                               "(it names the package)", source=source, field="instance_id")
        return value
    return directory.name


# ---------------------------------------------------------------------------------------------
# Digests


def listed_digests(manifest: dict[str, Any], source: str) -> dict[str, str]:
    """{file name: sha256 hex} as the manifest lists them (empty when it lists none)."""
    out: dict[str, str] = {}

    def add(name: Any, digest: Any, where: str) -> None:
        if not isinstance(name, str):
            raise PackageError(f"found {describe(name)}, expected the name of a file of the directory",
                               source=source, field=where)
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise PackageError(f"names {name!r}, which is not a file of this directory", source=source,
                               field=where)
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise PackageError(f"found {describe(digest)}, expected a sha256 digest (64 hex digits)",
                               source=source, field=where)
        out[name] = digest.lower()

    if "sha256" in manifest:
        sha = manifest["sha256"]
        if not isinstance(sha, dict):
            raise PackageError(f"found {describe(sha)}, expected an object of file names and their sha256",
                               source=source, field="sha256")
        for name, digest in sha.items():
            add(name, digest, f"sha256.{name}")
    files = manifest.get("files")
    if isinstance(files, dict):
        for name, entry in files.items():
            if isinstance(entry, dict) and "sha256" in entry:
                add(name, entry["sha256"], f"files.{name}.sha256")
    elif isinstance(files, list):
        for k, entry in enumerate(files):
            if isinstance(entry, dict) and "sha256" in entry:
                add(entry.get("path", entry.get("name")), entry["sha256"], f"files[{k}].sha256")
    return out


def check_digests(directory: Path, manifest: dict[str, Any], raw_files: dict[str, bytes], source: str,
                  *, accept: bool) -> list[str]:
    """Check every listed digest; the names that do not match (only when ``accept``)."""
    mismatched = []
    for name, expected in listed_digests(manifest, source).items():
        if name == MANIFEST:
            continue  # a manifest cannot hold its own digest
        raw = raw_files.get(name)
        if raw is None:
            path = directory / name
            try:  # a name the file system cannot hold (too long, say) names no file either
                regular = not path.is_symlink() and path.is_file()
            except OSError:
                regular = False
            if not regular:
                raise PackageError(f"the manifest lists a sha256 for {cut(name, 80)!r}, which is not a regular file "
                                   "of the directory", source=source)
            raw = read_raw(path, MAX_EXTRA_FILE_BYTES)
        found = hashlib.sha256(raw).hexdigest()
        if found != expected:
            if not accept:
                raise PackageError(
                    f"sha256 {found} does not match the manifest's {expected}; the file changed "
                    "since the manifest was written (pass --accept-checksum-mismatch to read it anyway)",
                    source=str(directory / name),
                )
            mismatched.append(name)
    return mismatched


def with_digests(manifest: dict[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    """The manifest with each listed digest replaced by the digest of the file written."""
    out = dict(manifest)
    if isinstance(out.get("sha256"), dict):
        out["sha256"] = {name: digests.get(name, old) for name, old in out["sha256"].items()}
    files = out.get("files")
    if isinstance(files, dict):
        out["files"] = {name: _entry_with_digest(entry, name, digests) for name, entry in files.items()}
    elif isinstance(files, list):
        out["files"] = [
            _entry_with_digest(entry, entry.get("path", entry.get("name")) if isinstance(entry, dict) else None,
                               digests)
            for entry in files
        ]
    return out


def _entry_with_digest(entry: Any, name: Any, digests: dict[str, str]) -> Any:
    if isinstance(entry, dict) and "sha256" in entry and name in digests:
        return {**entry, "sha256": digests[name]}
    return entry


# ---------------------------------------------------------------------------------------------
# Extra entries


def read_raw(path: Path, cap: int) -> bytes:
    """The bytes of a regular file as stored (never decompressed, links never followed)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise PackageError(f"cannot read: {exc.strerror}", source=str(path)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PackageError("is not a regular file; only regular files are read", source=str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            raw = handle.read(cap + 1)
    except OSError as exc:
        raise PackageError(f"cannot read: {exc.strerror}", source=str(path)) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(raw) > cap:
        raise PackageError(f"larger than the limit of {cap} bytes for an extra file of an artifact directory",
                           source=str(path))
    return raw


def _refuse(entry: Path, why: str) -> PackageError:
    name = os.fsencode(entry.name).decode("utf-8", "backslashreplace")
    return PackageError(
        f"{why}; an artifact directory holds its seven files and extra regular files with plain names, "
        f"and {name!r} could be neither read nor written back (move it out of the directory)",
        source=os.fsencode(entry).decode("utf-8", "backslashreplace"),
    )


def read_extra_entries(directory: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """({name: text}, {name: base64}, [names too large to read]) of the entries besides the
    seven files. Any other entry that cannot be kept is refused, so nothing goes unread unnamed;
    a file beyond the size cap is named in the third list (the package's
    ``meta.artifact.not_read``, which ``convert`` reports) rather than read whole."""
    texts: dict[str, str] = {}
    binaries: dict[str, str] = {}
    too_large: list[str] = []
    try:
        entries = sorted(directory.iterdir(), key=lambda p: os.fsencode(p.name))
    except OSError as exc:
        raise PackageError(f"cannot list the directory: {exc.strerror}", source=str(directory)) from None
    for entry in entries:
        if entry.name in REQUIRED_FILES:
            continue
        try:
            info = entry.lstat()
        except OSError as exc:
            raise _refuse(entry, f"cannot be examined ({exc.strerror})") from None
        if stat.S_ISLNK(info.st_mode):
            raise _refuse(entry, "is a symbolic link (links in artifact directories are refused)")
        if stat.S_ISDIR(info.st_mode):
            raise _refuse(entry, "is a subdirectory (artifact directories are not recursive)")
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(entry, "is not a regular file (a FIFO, socket or device)")
        if _has_surrogate(entry.name) or not plain_extra_name(entry.name):
            raise _refuse(entry, "has a hidden name or one that is not UTF-8 text")
        if info.st_size > MAX_EXTRA_FILE_BYTES:
            too_large.append(entry.name)
            continue
        raw = read_raw(entry, MAX_EXTRA_FILE_BYTES)
        try:
            texts[entry.name] = raw.decode("utf-8")
        except UnicodeDecodeError:
            binaries[entry.name] = base64.b64encode(raw).decode("ascii")
    return texts, binaries, too_large


def _has_surrogate(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
