"""memaudit write on a full disk (or a read-only one): a clean usage error naming the store,
exit 2, and nothing left behind: no half store, no OUT directory made by the failed run."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("faiss")

import faiss

import memaudit_fast.writers.index as index_module
from memaudit_fast.cli.main import main
from memaudit_fast.writers.errors import sqlite_os_error
from memaudit_fast.writers.store import DATABASE
from oracles.cli_runs import locomo

REAL_CONNECT = sqlite3.connect



def write(writer: str, src: Path, out: Path, *extra: str) -> int:
    return main(["write", writer, "--locomo", str(src), "--out", str(out), "--embedder", "hashing:64", *extra])


def tree(directory: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(directory)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(directory.rglob("*"))}


def sqlite_fails(monkeypatch: pytest.MonkeyPatch, message: str, code: int | None = None) -> None:
    """SQLite runs out of room while it writes a store's database (a partial file is left)."""
    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(database).endswith(DATABASE):
            Path(database).write_bytes(b"SQLite format 3\0partial")
            exc = sqlite3.OperationalError(message)
            if code is not None:
                exc.sqlite_errorcode = code  # type: ignore[attr-defined]
            raise exc
        return REAL_CONNECT(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)


def faiss_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills while a FAISS index is written (half of it reaches the file)."""
    class Full:
        def __init__(self, path: Any, mode: str) -> None:
            self.handle = open(path, mode)  # noqa: SIM115 - closed in __exit__

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> int:
            self.handle.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    real_write_index = faiss.write_index

    def write_index(index: Any, target: Any, *args: Any) -> None:
        if not isinstance(target, str):  # serialize_index writes into memory through it
            return real_write_index(index, target, *args)
        Path(target).write_bytes(b"half")
        raise RuntimeError(f"Error in faiss::write_index: write error in {target}: 1 != 2 (No space left on device)")

    monkeypatch.setattr(index_module, "open", Full, raising=False)
    monkeypatch.setattr(faiss, "write_index", write_index)


@pytest.mark.parametrize("writer", ["flat", "membox", "engram"])
@pytest.mark.parametrize("fail", ["sqlite", "sqlite-code", "faiss"])
def test_a_full_disk_is_a_usage_error_and_leaves_no_out(tmp_path, monkeypatch, capsys, writer, fail):
    src = locomo(tmp_path / "locomo.json", "conv")
    if fail == "faiss":
        faiss_fails(monkeypatch)
    else:
        sqlite_fails(monkeypatch, "database or disk is full", 13 if fail == "sqlite-code" else None)
    out = tmp_path / "new" / "stores"
    assert write(writer, src, out) == 2
    err = capsys.readouterr().err
    assert f"{out / 'conv'}: cannot write (the disk is full); nothing was written there" in err
    assert "internal error" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locomo.json"]  # neither stores/ nor new/


def test_a_full_disk_keeps_the_earlier_store_and_the_existing_out(tmp_path, monkeypatch, capsys):
    src = locomo(tmp_path / "locomo.json", "conv")
    out = tmp_path / "stores"
    assert write("flat", src, out) == 0
    (tmp_path / "stores" / "README").mkdir()  # not a store; OUT was the user's before
    before = tree(out)
    sqlite_fails(monkeypatch, "database or disk is full")
    capsys.readouterr()
    assert write("flat", src, out, "--force") == 2
    assert "the disk is full" in capsys.readouterr().err
    assert tree(out) == before


def test_a_later_store_failing_leaves_the_earlier_complete_stores_only(tmp_path, monkeypatch, capsys):
    src = locomo(tmp_path / "locomo.json", "one", "two")
    calls = {"n": 0}

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(database).endswith(DATABASE):
            calls["n"] += 1
            if calls["n"] == 2:
                raise sqlite3.OperationalError("database or disk is full")
        return REAL_CONNECT(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    out = tmp_path / "stores"
    assert write("flat", src, out) == 2
    assert f"{out / 'two'}: cannot write (the disk is full)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["one"]  # complete, no temporary directory
    assert main(["retrieve", str(out / "one"), "support group"]) == 0
    capsys.readouterr()


def test_a_read_only_database_write_is_a_usage_error(tmp_path, monkeypatch, capsys):
    src = locomo(tmp_path / "locomo.json", "conv")
    sqlite_fails(monkeypatch, "attempt to write a readonly database", 8)
    assert write("flat", src, tmp_path / "stores") == 2
    err = capsys.readouterr().err
    assert "cannot write (" in err and "nothing was written there" in err and "internal error" not in err
    assert not (tmp_path / "stores").exists()


def test_sqlite_errors_map_to_the_os_error_behind_them_only(tmp_path):
    full = sqlite_os_error(sqlite3.OperationalError("database or disk is full"), tmp_path / "x.sqlite")
    assert isinstance(full, OSError) and full.errno == errno.ENOSPC
    coded = sqlite3.OperationalError("whatever the text")
    coded.sqlite_errorcode = 13 | (1 << 8)  # type: ignore[attr-defined]  # an extended SQLITE_FULL
    mapped = sqlite_os_error(coded, tmp_path / "x.sqlite")
    assert mapped is not None and mapped.errno == errno.ENOSPC
    # A mistake in the SQL is a bug, not the environment: it is not dressed up as a write error.
    assert sqlite_os_error(sqlite3.OperationalError("no such table: boxes"), tmp_path / "x.sqlite") is None
    syntax = sqlite3.OperationalError('near "SELEC": syntax error')
    syntax.sqlite_errorcode = 1  # type: ignore[attr-defined]
    assert sqlite_os_error(syntax, tmp_path / "x.sqlite") is None
