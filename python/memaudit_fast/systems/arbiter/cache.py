"""The arbiter's on-disk cache (SQLite) and the hashes that key it."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ...model.outputs import _output_error, current_umask


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def config_hash(config: dict[str, Any]) -> str:
    body = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS configs(config TEXT PRIMARY KEY, body TEXT);
CREATE TABLE IF NOT EXISTS decisions(config TEXT, memory TEXT, unit TEXT,
    value REAL, PRIMARY KEY(config, memory, unit)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS salience(config TEXT, memory TEXT, context TEXT,
    value REAL, PRIMARY KEY(config, memory, context)) WITHOUT ROWID;
"""
#: The cache's tables and their columns: a database holding anything else is not a cache.
CACHE_TABLES = {
    "configs": ("config", "body"),
    "decisions": ("config", "memory", "unit", "value"),
    "salience": ("config", "memory", "context", "value"),
}


def check_cache_path(path: str | Path, *, option: str = "the arbiter cache") -> Path:
    """Refuse a cache path that would write through a link or into a file that is not a cache.

    A missing file is fine (it is created); an existing one is reused only when it is an
    arbiter cache (its tables are :data:`CACHE_TABLES`). A symbolic link, a directory, a
    device and any other file, a SQLite database of other tables included, is refused and
    left as it was: the cache is never written through a link or into someone else's file.
    """
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{path} ({option}) is a symbolic link; the cache is never written through "
                         "links: give the path of the file itself, or another path")
    if not path.exists():
        return path
    if not path.is_file():
        raise UsageError(f"{path} ({option}) exists and is not a regular file; choose another path")
    tables = _tables(path)
    if tables is None or not tables or any(CACHE_TABLES.get(name) != cols for name, cols in tables.items()):
        found = ("it is not a SQLite database" if tables is None else "it is empty" if not tables
                 else "it holds the tables " + ", ".join(sorted(tables)) + ", a cache only "
                 + ", ".join(CACHE_TABLES))
        raise UsageError(f"{path} ({option}) exists and is not an arbiter cache ({found}); it is never "
                         "altered: give the path of an earlier cache or of a new file")
    return path


def _tables(path: Path) -> dict[str, tuple[str, ...]] | None:
    """The tables of the SQLite file at ``path`` with their columns; None if it is not one.

    Read with ``immutable=1``: the file is opened read-only and SQLite writes nothing beside
    it (no journal, no lock files), so checking a file never changes it.
    """
    if path.stat().st_size == 0:
        return {}
    uri = path.absolute().as_uri() + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                     if not row[0].startswith("sqlite_")]  # SQLite's own (statistics, sequences)
            return {name: tuple(row[1] for row in conn.execute(f'PRAGMA table_info("{name}")'))
                    for name in names}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


class ArbiterCache:
    """SQLite cache of judge decisions and saliences.

    Tables: ``decisions(config, memory, unit, value)`` and ``salience(config, memory, context,
    value)``, each keyed by hashes (``context`` hashes what a salience was rated against).
    Zeros are stored too: a cached row is a complete answer.

    An existing cache is reused; a new one is created complete (its tables are made in a
    temporary file renamed into place). ``path`` must pass :func:`check_cache_path`:
    never a link, never an existing file that is not a cache. ``option`` names the path in
    messages (``--cache`` on the command line).
    """

    def __init__(self, path: str | Path, *, option: str = "the arbiter cache") -> None:
        self.path = check_cache_path(path, option=option)
        self.option = option
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                self._create()
            self.conn = sqlite3.connect(str(self.path))
            self.conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        except OSError as exc:
            raise _output_error(self.path, exc) from None

    def _create(self) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.close(fd)
        try:
            conn = sqlite3.connect(tmp)
            try:
                conn.executescript(_SCHEMA)
            finally:
                conn.close()
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, self.path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)

    def _error(self, exc: sqlite3.Error) -> UsageError:
        from ...writers.errors import sqlite_os_error

        cause = sqlite_os_error(exc, self.path)
        if cause is not None:
            return _output_error(self.path, cause)
        return UsageError(f"cannot use {self.path} ({self.option}): {exc}")

    def close(self) -> None:
        self.conn.close()

    def remember_config(self, key: str, config: dict[str, Any]) -> None:
        try:
            self.conn.execute("INSERT OR IGNORE INTO configs VALUES (?, ?)",
                              (key, json.dumps(config, sort_keys=True)))
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def rows(self, config: str, memory: str) -> dict[str, float]:
        cur = self.conn.execute("SELECT unit, value FROM decisions WHERE config=? AND memory=?", (config, memory))
        return dict(cur.fetchall())

    def put_rows(self, config: str, rows: Sequence[tuple[str, str, float]]) -> None:
        try:
            self.conn.executemany(
                "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?)", [(config, m, u, v) for m, u, v in rows]
            )
            self.conn.commit()
        except sqlite3.Error as exc:  # a full disk, say: the transaction is undone, the cache intact
            raise self._error(exc) from None

    def salience(self, config: str, memory: str, context: str) -> float | None:
        cur = self.conn.execute(
            "SELECT value FROM salience WHERE config=? AND memory=? AND context=?", (config, memory, context)
        )
        row = cur.fetchone()
        return None if row is None else float(row[0])

    def put_salience(self, config: str, context: str, values: Sequence[tuple[str, float]]) -> None:
        try:
            self.conn.executemany(
                "INSERT OR REPLACE INTO salience VALUES (?, ?, ?, ?)", [(config, m, context, v) for m, v in values]
            )
            self.conn.commit()
        except sqlite3.Error as exc:
            raise self._error(exc) from None
