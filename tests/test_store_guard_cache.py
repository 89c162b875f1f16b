"""memaudit import --cache: the arbiter cache is never written through a symbolic link, never
added to a file that is not a cache (with or without --force), and an earlier cache is reused."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.systems.arbiter import ArbiterCache
from oracles.exports import GET_ALL, HISTORY_ROWS, MEM0_HISTORY_DDL

EXAMPLE = example_package_path()

# The tables every earlier version of the cache made: such a cache is reused as it is.
EARLIER_CACHE_DDL = """
CREATE TABLE configs(config TEXT PRIMARY KEY, body TEXT);
CREATE TABLE decisions(config TEXT, memory TEXT, unit TEXT,
    value REAL, PRIMARY KEY(config, memory, unit)) WITHOUT ROWID;
CREATE TABLE salience(config TEXT, memory TEXT, context TEXT,
    value REAL, PRIMARY KEY(config, memory, context)) WITHOUT ROWID;
"""


@pytest.fixture
def export(tmp_path: Path) -> Path:
    path = tmp_path / "get_all.json"
    path.write_text(json.dumps(GET_ALL))
    return path


def run_import(export: Path, out: Path, *extra: str) -> int:
    return main(["import", "mem0", str(export), "--package", str(EXAMPLE), "--out", str(out),
                 "--embedder", "hashing", *extra])


def sqlite_file(path: Path, ddl: str, rows: tuple[str, ...] = ()) -> bytes:
    con = sqlite3.connect(path)
    con.executescript(ddl)
    for row in rows:
        con.execute(row)
    con.commit()
    con.close()
    return path.read_bytes()


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_dangling_link_is_refused_and_its_target_never_made(tmp_path, export, capsys, force):
    link = tmp_path / "dc.sqlite"
    link.symlink_to("nowhere.sqlite")
    out = tmp_path / "u.json"
    assert run_import(export, out, "--cache", str(link), *force) == 2
    err = capsys.readouterr().err
    assert str(link) in err and "symbolic link" in err and "--cache" in err
    assert not (tmp_path / "nowhere.sqlite").exists() and link.is_symlink()
    assert not out.exists()


def test_a_link_to_an_earlier_cache_is_refused_and_the_cache_unchanged(tmp_path, export, capsys):
    real = tmp_path / "real.sqlite"
    assert run_import(export, tmp_path / "u0.json", "--cache", str(real)) == 0
    before = real.read_bytes()
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    capsys.readouterr()
    assert run_import(export, tmp_path / "u.json", "--cache", str(link)) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert real.read_bytes() == before and not (tmp_path / "u.json").exists()


@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("kind", ["other-tables", "one-table-more", "text", "empty"])
def test_a_file_that_is_not_a_cache_is_refused_and_never_altered(tmp_path, export, capsys, force, kind):
    path = tmp_path / "mine.db"
    if kind == "other-tables":
        before = sqlite_file(path, "CREATE TABLE notes(x TEXT);", ("INSERT INTO notes VALUES ('keep')",))
    elif kind == "one-table-more":
        before = sqlite_file(path, EARLIER_CACHE_DDL + "CREATE TABLE notes(x TEXT);")
    else:
        before = b"my notes\n" if kind == "text" else b""
        path.write_bytes(before)
    out = tmp_path / "u.json"
    assert run_import(export, out, "--cache", str(path), *force) == 2
    err = capsys.readouterr().err
    assert f"{path} (--cache)" in err and "is not an arbiter cache" in err and "never altered" in err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["get_all.json", "mine.db"]


def test_a_directory_is_refused(tmp_path, export, capsys):
    (tmp_path / "d").mkdir()
    assert run_import(export, tmp_path / "u.json", "--cache", str(tmp_path / "d")) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_an_input_or_the_output_is_never_the_cache(tmp_path, export, capsys):
    history = tmp_path / "history.db"
    sqlite_file(history, MEM0_HISTORY_DDL)
    con = sqlite3.connect(history)
    con.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", HISTORY_ROWS)
    con.commit()
    con.close()
    before = history.read_bytes()
    assert run_import(export, tmp_path / "u.json", "--history", str(history), "--cache", str(history)) == 2
    assert "--cache" in capsys.readouterr().err
    assert history.read_bytes() == before
    out = tmp_path / "u.json"
    assert run_import(export, out, "--cache", str(out)) == 2
    assert "is also --out" in capsys.readouterr().err
    assert not out.exists()


def test_an_earlier_cache_is_reused_without_force(tmp_path, export, capsys):
    cache = tmp_path / "c.sqlite"
    assert run_import(export, tmp_path / "u1.json", "--cache", str(cache)) == 0
    assert "cache 0 hits" in capsys.readouterr().err
    assert run_import(export, tmp_path / "u2.json", "--cache", str(cache)) == 0
    assert "0 judged" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite", "get_all.json", "u1.json", "u2.json"]


def test_a_cache_made_by_an_earlier_version_is_reused(tmp_path, export, capsys):
    cache = tmp_path / "old.sqlite"
    sqlite_file(cache, EARLIER_CACHE_DDL)
    assert run_import(export, tmp_path / "u.json", "--cache", str(cache)) == 0
    con = sqlite3.connect(cache)
    assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] > 0
    con.close()
    capsys.readouterr()


def test_the_default_cache_sits_beside_out_as_spelt_not_beside_a_links_target(tmp_path, export, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.json").write_text("{}")
    here = tmp_path / "here"
    here.mkdir()
    (here / "u.json").symlink_to(elsewhere / "target.json")
    assert run_import(export, here / "u.json", "--force") == 0
    assert (here / ".memaudit-arbiter.sqlite").is_file()
    assert sorted(os.listdir(elsewhere)) == ["target.json"]
    capsys.readouterr()


def test_the_python_api_keeps_the_same_rules(tmp_path):
    link = tmp_path / "link.sqlite"
    link.symlink_to("nowhere.sqlite")
    with pytest.raises(UsageError, match="symbolic link"):
        ArbiterCache(link)
    assert not (tmp_path / "nowhere.sqlite").exists()
    other = tmp_path / "other.db"
    before = sqlite_file(other, "CREATE TABLE t(x);")
    with pytest.raises(UsageError, match="not an arbiter cache"):
        ArbiterCache(other)
    assert other.read_bytes() == before
    fresh = ArbiterCache(tmp_path / "sub" / "new.sqlite")  # created complete, in a new directory
    fresh.put_rows("cfg", [("m", "u", 1.0)])
    fresh.close()
    again = ArbiterCache(tmp_path / "sub" / "new.sqlite")
    assert again.rows("cfg", "m") == {"u": 1.0}
    again.close()
    assert sorted(os.listdir(tmp_path / "sub")) == ["new.sqlite"]  # no temporary file left


def test_a_full_disk_while_caching_is_a_usage_error_and_keeps_the_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ArbiterCache(path)
    cache.put_rows("cfg", [("m1", "u", 0.5)])

    class FullConnection:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, *args: object) -> sqlite3.Cursor:
            return self.conn.execute(*args)  # type: ignore[arg-type]

        def executemany(self, *args: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        def commit(self) -> None:
            self.conn.commit()

        def close(self) -> None:
            self.conn.close()

    cache.conn = FullConnection(cache.conn)  # type: ignore[assignment]
    with pytest.raises(UsageError, match=r"cannot write \(the disk is full\)"):
        cache.put_rows("cfg", [("m2", "u", 1.0)])
    with pytest.raises(UsageError, match="the disk is full"):
        cache.put_salience("cfg", "ctx", [("m2", 1.0)])
    cache.close()
    assert ArbiterCache(path).rows("cfg", "m1") == {"u": 0.5}
