"""The arbiter's on-disk cache (SQLite) and the hashes that key it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import UsageError


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def config_hash(config: dict[str, Any]) -> str:
    body = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


class ArbiterCache:
    """SQLite cache of judge decisions and saliences.

    Tables: ``decisions(config, memory, unit, value)`` and ``salience(config, memory, context,
    value)``, each keyed by hashes (``context`` hashes what a salience was rated against).
    Zeros are stored too: a cached row is a complete answer.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(str(self.path))
            self.conn.executescript(
                """
                CREATE TABLE IF NOT EXISTS configs(config TEXT PRIMARY KEY, body TEXT);
                CREATE TABLE IF NOT EXISTS decisions(config TEXT, memory TEXT, unit TEXT,
                    value REAL, PRIMARY KEY(config, memory, unit)) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS salience(config TEXT, memory TEXT, context TEXT,
                    value REAL, PRIMARY KEY(config, memory, context)) WITHOUT ROWID;
                """
            )
        except sqlite3.Error as exc:
            raise UsageError(f"cannot use {self.path} as the arbiter cache: {exc}") from None

    def close(self) -> None:
        self.conn.close()

    def remember_config(self, key: str, config: dict[str, Any]) -> None:
        self.conn.execute("INSERT OR IGNORE INTO configs VALUES (?, ?)", (key, json.dumps(config, sort_keys=True)))

    def rows(self, config: str, memory: str) -> dict[str, float]:
        cur = self.conn.execute("SELECT unit, value FROM decisions WHERE config=? AND memory=?", (config, memory))
        return dict(cur.fetchall())

    def put_rows(self, config: str, rows: Sequence[tuple[str, str, float]]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?)", [(config, m, u, v) for m, u, v in rows]
        )
        self.conn.commit()

    def salience(self, config: str, memory: str, context: str) -> float | None:
        cur = self.conn.execute(
            "SELECT value FROM salience WHERE config=? AND memory=? AND context=?", (config, memory, context)
        )
        row = cur.fetchone()
        return None if row is None else float(row[0])

    def put_salience(self, config: str, context: str, values: Sequence[tuple[str, float]]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO salience VALUES (?, ?, ?, ?)", [(config, m, context, v) for m, v in values]
        )
        self.conn.commit()
