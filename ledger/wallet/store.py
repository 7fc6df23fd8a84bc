"""Wallet storage: a small interface, an SQLite file and an in-memory twin.

What is stored (every secret already sealed by ``ledger.wallet.sealing``):

* meta records (name -> bytes): ``format``, ``encryption`` (``none`` or KDF params),
  ``verifier``, ``mnemonic`` (sealed words), ``counter:fct|ec|identity`` (next BIP44 index);
* keys: kind (``fct``/``ec``/``identity``), public string (``FA``/``EC``/``idpub``),
  sealed 32-byte ed25519 seed, BIP44 index (``None`` when imported), in insertion order;
* named transactions (``new-transaction`` ...): name -> sealed record (see
  ``ledger.wallet.tx_book``), in creation order; sealed like secrets, so an encrypted
  wallet shows neither addresses nor amounts of its transactions at rest.

The SQLite file runs in WAL mode with ``synchronous=FULL``: a call returns only after its
write is on disk, so an address handed to a caller survives ``kill -9``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ledger.wallet.errors import WalletStateError
from ledger.wallet.hdkeys import KeyKind

__all__ = [
    "MemoryWalletStore",
    "SqliteWalletStore",
    "StoredKey",
    "WalletStore",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS keys (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('fct', 'ec', 'identity')),
    public TEXT NOT NULL UNIQUE,
    sealed_secret BLOB NOT NULL,
    derivation_index INTEGER
);
CREATE TABLE IF NOT EXISTS transactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    sealed BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class StoredKey:
    """One key as stored.

    Attributes:
        kind: ``fct``, ``ec`` or ``identity``.
        public: the public string (``FA...``, ``EC...`` or ``idpub...``).
        sealed_secret: the 32-byte ed25519 seed after sealing (raw if not encrypted).
        index: BIP44 address index when derived from the wallet seed, else None.
    """

    kind: KeyKind
    public: str
    sealed_secret: bytes = field(repr=False)
    index: int | None = None


class WalletStore(Protocol):
    """Persistence used by the keyring. Implementations must be thread-safe."""

    def get_meta(self, name: str) -> bytes | None:
        """Value of meta record ``name`` or None."""
        ...

    def put_meta(self, values: Mapping[str, bytes]) -> None:
        """Write (insert or replace) several meta records atomically."""
        ...

    def add_key(self, key: StoredKey, *, meta: Mapping[str, bytes] | None = None) -> bool:
        """Insert ``key`` and write ``meta`` in one transaction.

        Returns False (and still writes ``meta``) if a key with that public string exists.
        """
        ...

    def list_keys(self, kinds: Collection[KeyKind] | None = None) -> list[StoredKey]:
        """Keys of the given kinds (all when None) in insertion order."""
        ...

    def remove_key(self, public: str) -> bool:
        """Delete the key with that public string; False if there was none."""
        ...

    def put_transaction(self, name: str, sealed: bytes) -> None:
        """Insert or replace the sealed record of transaction ``name`` (keeps its position)."""
        ...

    def get_transaction(self, name: str) -> bytes | None:
        """Sealed record of transaction ``name`` or None."""
        ...

    def list_transactions(self) -> list[tuple[str, bytes]]:
        """``(name, sealed record)`` of every transaction in creation order."""
        ...

    def remove_transaction(self, name: str) -> bool:
        """Delete transaction ``name``; False if there was none."""
        ...

    def close(self) -> None:
        """Release resources; the store is unusable afterwards."""
        ...


class SqliteWalletStore:
    """``WalletStore`` in one SQLite file (WAL, synchronous FULL)."""

    def __init__(self, path: Path | str) -> None:
        """Open or create the file at ``path`` (parent folders are created)."""
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise WalletStateError(f"cannot open wallet file {self._path}") from exc

    def __repr__(self) -> str:
        return f"SqliteWalletStore({str(self._path)!r})"

    def get_meta(self, name: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else bytes(row[0])

    def put_meta(self, values: Mapping[str, bytes]) -> None:
        with self._lock, self._transaction():
            self._write_meta(values)

    def add_key(self, key: StoredKey, *, meta: Mapping[str, bytes] | None = None) -> bool:
        with self._lock, self._transaction():
            cursor = self._conn.execute(
                "INSERT INTO keys (kind, public, sealed_secret, derivation_index) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (public) DO NOTHING",
                (key.kind, key.public, key.sealed_secret, key.index),
            )
            self._write_meta(meta or {})
        return cursor.rowcount == 1

    def list_keys(self, kinds: Collection[KeyKind] | None = None) -> list[StoredKey]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT kind, public, sealed_secret, derivation_index FROM keys ORDER BY seq"
            ).fetchall()
        keys = [
            StoredKey(kind, public, bytes(secret), index) for kind, public, secret, index in rows
        ]
        return keys if kinds is None else [k for k in keys if k.kind in kinds]

    def remove_key(self, public: str) -> bool:
        with self._lock, self._transaction():
            cursor = self._conn.execute("DELETE FROM keys WHERE public = ?", (public,))
        return cursor.rowcount == 1

    def put_transaction(self, name: str, sealed: bytes) -> None:
        with self._lock, self._transaction():
            self._conn.execute(
                "INSERT INTO transactions (name, sealed) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed",
                (name, bytes(sealed)),
            )

    def get_transaction(self, name: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT sealed FROM transactions WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def list_transactions(self) -> list[tuple[str, bytes]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT name, sealed FROM transactions ORDER BY seq"
            ).fetchall()
        return [(name, bytes(sealed)) for name, sealed in rows]

    def remove_transaction(self, name: str) -> bool:
        with self._lock, self._transaction():
            cursor = self._conn.execute("DELETE FROM transactions WHERE name = ?", (name,))
        return cursor.rowcount == 1

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _write_meta(self, values: Mapping[str, bytes]) -> None:
        self._conn.executemany(
            "INSERT INTO meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [(name, bytes(value)) for name, value in values.items()],
        )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


class MemoryWalletStore:
    """In-memory ``WalletStore`` twin for tests (same contract, nothing persisted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._meta: dict[str, bytes] = {}
        self._keys: dict[str, StoredKey] = {}
        self._transactions: dict[str, bytes] = {}

    def get_meta(self, name: str) -> bytes | None:
        with self._lock:
            return self._meta.get(name)

    def put_meta(self, values: Mapping[str, bytes]) -> None:
        with self._lock:
            self._meta.update({name: bytes(value) for name, value in values.items()})

    def add_key(self, key: StoredKey, *, meta: Mapping[str, bytes] | None = None) -> bool:
        with self._lock:
            self._meta.update({name: bytes(value) for name, value in (meta or {}).items()})
            if key.public in self._keys:
                return False
            self._keys[key.public] = key
            return True

    def list_keys(self, kinds: Collection[KeyKind] | None = None) -> list[StoredKey]:
        with self._lock:
            keys = list(self._keys.values())
        return keys if kinds is None else [k for k in keys if k.kind in kinds]

    def remove_key(self, public: str) -> bool:
        with self._lock:
            return self._keys.pop(public, None) is not None

    def put_transaction(self, name: str, sealed: bytes) -> None:
        with self._lock:
            self._transactions[name] = bytes(sealed)

    def get_transaction(self, name: str) -> bytes | None:
        with self._lock:
            return self._transactions.get(name)

    def list_transactions(self) -> list[tuple[str, bytes]]:
        with self._lock:
            return list(self._transactions.items())

    def remove_transaction(self, name: str) -> bool:
        with self._lock:
            return self._transactions.pop(name, None) is not None

    def close(self) -> None:
        """Nothing to release."""
