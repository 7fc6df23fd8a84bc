"""A small data folder of WAL-mode SQLite stores and secret files, for backup tests."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger.backup import StoreSpec
from ledger.secret_file import write_secret_file

NAMES = ("first", "second")


def open_store(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` set up as the services' stores are (WAL, FULL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY, body BLOB)")
    conn.execute("PRAGMA user_version=7")
    return conn


def insert(conn: sqlite3.Connection, n: int, size: int = 100) -> None:
    conn.execute("INSERT INTO rows VALUES (?, ?)", (n, bytes([n % 256]) * size))


def row_numbers(path: Path) -> set[int]:
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return {n for (n,) in conn.execute("SELECT n FROM rows")}
    finally:
        conn.close()


@dataclass
class DataFolder:
    """``root`` with two stores (``first/first.sqlite``, ``second/second.sqlite``), two
    secret files (0600) and a public file (0644, not a secret)."""

    root: Path

    def path(self, name: str) -> Path:
        return self.root / name / f"{name}.sqlite"

    def stores(self, root: Path | None = None) -> list[StoreSpec]:
        base = DataFolder(root or self.root)
        return [
            StoreSpec.sqlite(
                name,
                f"{name}/{name}.sqlite",
                base.path(name),
                facts={"rows": "SELECT count(*) FROM rows"},
                derived=(base.path(name).with_suffix(".cache"),),
            )
            for name in NAMES
        ]


@pytest.fixture
def folder(tmp_path: Path) -> DataFolder:
    data = DataFolder(tmp_path / "data")
    for name in NAMES:
        conn = open_store(data.path(name))
        for n in range(50):
            insert(conn, n)
        conn.close()
    write_secret_file(data.root / "api-key", b"key-material")
    write_secret_file(data.root / "rpc-credentials", b"notary:pw")
    (data.root / "prefect-api-url").write_text("http://127.0.0.1:4200/api")
    (data.root / "prefect-api-url").chmod(0o644)
    return data
