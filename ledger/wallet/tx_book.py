"""The wallet's named transactions, durable in its store (``new-transaction`` ...
docs/formats.md §9.4).

Each transaction is stored under its name as ``keyring.seal_record(to_record(tx))``: an
encrypted wallet keeps even addresses and amounts of its transactions under the passphrase,
and every method needs the wallet unlocked (``WalletLockedError`` otherwise). A write returns
only once it is on disk (the store's contract), so a transaction survives a restart.
Read-modify-write steps run under one lock, so concurrent steps on a name do not lose updates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ledger.core.clock import Clock
from ledger.core.errors import LedgerFormatError
from ledger.core.transaction import Transaction
from ledger.wallet.errors import TransactionError, WalletStateError
from ledger.wallet.keyring import Keyring
from ledger.wallet.store import WalletStore
from ledger.wallet.tx_build import check_name, from_record, to_record

__all__ = ["TransactionBook"]

_EXISTS = "wallet: Transaction name already exists"
_NOT_FOUND = "wallet: Transaction name was not found"


class TransactionBook:
    """Named transactions of one wallet. Thread-safe.

    Args:
        store: the wallet store (holds the sealed records).
        keyring: seals and opens records (and gates them on the lock state).
        clock: time of ``new-transaction`` timestamps (Unix seconds -> ms).
    """

    def __init__(self, store: WalletStore, keyring: Keyring, *, clock: Clock) -> None:
        self._store = store
        self._keyring = keyring
        self._clock = clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "TransactionBook()"

    def now_ms(self) -> int:
        """The clock's time in Unix milliseconds."""
        return round(self._clock.now() * 1000)

    def create(self, name: str) -> Transaction:
        """A new empty transaction stamped now. TransactionError: bad or taken name."""
        check_name(name)
        with self._lock:
            self._keyring.require_unlocked()
            if self._store.get_transaction(name) is not None:
                raise TransactionError(_EXISTS, name=name)
            tx = Transaction(self.now_ms())
            self._write(name, tx)
            return tx

    def get(self, name: str) -> Transaction:
        """The transaction called ``name``. TransactionError when there is none."""
        with self._lock:
            return self._read(name)

    def update(self, name: str, change: Callable[[Transaction], Transaction]) -> Transaction:
        """Store and return ``change(current)``; nothing is stored if ``change`` raises."""
        with self._lock:
            tx = change(self._read(name))
            self._write(name, tx)
            return tx

    def delete(self, name: str) -> Transaction:
        """Remove ``name`` and return its last state. TransactionError when there is none."""
        with self._lock:
            tx = self._read(name)
            self._store.remove_transaction(name)
            return tx

    def items(self) -> list[tuple[str, Transaction]]:
        """Every ``(name, transaction)`` in creation order."""
        with self._lock:
            self._keyring.require_unlocked()
            return [(name, self._open(sealed)) for name, sealed in self._store.list_transactions()]

    def _read(self, name: str) -> Transaction:
        self._keyring.require_unlocked()
        sealed = self._store.get_transaction(name)
        if sealed is None:
            raise TransactionError(_NOT_FOUND, name=name)
        return self._open(sealed)

    def _open(self, sealed: bytes) -> Transaction:
        try:
            return from_record(self._keyring.open_record(sealed))
        except (ValueError, KeyError, TypeError, LedgerFormatError) as exc:
            raise WalletStateError("a stored transaction is unreadable") from exc

    def _write(self, name: str, tx: Transaction) -> None:
        self._store.put_transaction(name, self._keyring.seal_record(to_record(tx)))
