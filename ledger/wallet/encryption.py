"""A wallet file's encryption at rest: asking whether it is encrypted, and encrypting it.

``wallet_file_encrypted(path)`` reads the ``encryption`` meta record without creating or
changing anything. ``encrypt_wallet_file(path, passphrase)`` migrates a plain wallet
(``PlainSealer``: secrets stored raw) to the argon2id + SecretBox sealing of
``ledger.wallet.sealing``, on request only (``notary wallet encrypt``, docs/security.md):

1. the file must hold a plain wallet (``WalletStateError`` otherwise: missing, already
   encrypted, unknown format); nothing else may have it open for writing (the write
   transaction is taken at once, ``WalletStateError`` when it cannot be);
2. in one transaction, every sealed value (the mnemonic, each key's seed, each named
   transaction) is sealed again under the key derived from ``passphrase``, and the KDF
   parameters and the verifier are stored: a crash leaves the plain wallet as it was;
3. the clear secrets must not survive in the file's free pages or its write-ahead log:
   the transaction runs with ``secure_delete`` (freed content overwritten with zeros), then
   the file is rebuilt (``VACUUM``) and the log emptied (``wal_checkpoint(TRUNCATE)``).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from ledger.wallet.errors import WalletStateError
from ledger.wallet.sealing import (
    DEFAULT_MEMLIMIT_BYTES,
    DEFAULT_OPSLIMIT,
    VERIFIER_PLAINTEXT,
    BoxSealer,
    KdfParams,
)

__all__ = ["encrypt_wallet_file", "wallet_file_encrypted"]

_PLAIN = b"none"


def wallet_file_encrypted(path: Path) -> bool | None:
    """True when ``path`` holds an encrypted wallet, False a plain one, None no wallet
    (no file, or a file never initialized). Opens the file read-only.

    Raises:
        WalletStateError: the file is not a readable wallet database.
    """
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = 'encryption'").fetchone()
    except sqlite3.Error as exc:
        if "no such table" in str(exc):
            return None
        raise WalletStateError(f"cannot read wallet file {path}") from exc
    return None if row is None else bytes(row[0]) != _PLAIN


def encrypt_wallet_file(
    path: Path,
    passphrase: str,
    *,
    opslimit: int = DEFAULT_OPSLIMIT,
    memlimit_bytes: int = DEFAULT_MEMLIMIT_BYTES,
) -> int:
    """Encrypt the plain wallet at ``path`` under ``passphrase`` (module docstring).

    Args:
        path: the wallet's SQLite file.
        passphrase: the new passphrase (UTF-8; never logged).
        opslimit, memlimit_bytes: argon2id cost (passes, bytes of memory).

    Returns:
        how many sealed values were sealed again (mnemonic, keys, transactions).

    Raises:
        WalletStateError: no wallet, already encrypted, or in use by another writer.
    """
    if not passphrase:
        raise WalletStateError("an empty passphrase encrypts nothing")
    if wallet_file_encrypted(path) is not False:
        raise WalletStateError(f"{path} is not a plain wallet (missing or already encrypted)")
    params = KdfParams.fresh(opslimit=opslimit, memlimit_bytes=memlimit_bytes)
    sealer = BoxSealer(params.derive_key(passphrase))
    with closing(sqlite3.connect(path, isolation_level=None, timeout=0)) as conn:
        conn.execute("PRAGMA secure_delete=ON")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise WalletStateError(f"{path} is in use: stop the wallet first") from exc
        try:
            count = _reseal(conn, sealer)
            meta = {"encryption": params.to_bytes(), "verifier": sealer.seal(VERIFIER_PLAINTEXT)}
            conn.executemany(
                "INSERT INTO meta (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                list(meta.items()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return count


def _reseal(conn: sqlite3.Connection, sealer: BoxSealer) -> int:
    """Seal every stored secret of a plain wallet under ``sealer``; how many."""
    count = 0
    for table, column, key in (
        ("meta", "value", "name"),
        ("keys", "sealed_secret", "seq"),
        ("transactions", "sealed", "seq"),
    ):
        where = " WHERE name = 'mnemonic'" if table == "meta" else ""
        rows = conn.execute(f"SELECT {key}, {column} FROM {table}{where}").fetchall()  # noqa: S608
        for ident, plain in rows:
            conn.execute(
                f"UPDATE {table} SET {column} = ? WHERE {key} = ?",  # noqa: S608
                (sealer.seal(bytes(plain)), ident),
            )
            count += 1
    return count
