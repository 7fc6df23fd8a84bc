"""Account management as plain functions (``notary accounts create|list|revoke``).

Each function opens the API's main database from ``ApiSettings`` (``database_url`` or
``<data_dir>/api.sqlite``; the sandbox uses the same accounts), does one thing, closes
the database and returns plain data; the command line (``python -m ledger.api accounts``
here, ``notary accounts`` in the project CLI) only prints it. The key is returned once, by
``create``; the database keeps only its SHA-256.

A running API notices a revocation at the next look-up of the key: writes at once (they
check the account in their own transaction), reads within ``auth_cache_ttl_s`` (1 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select

from ledger.api.accounts import AccountNotFound, create_account, revoke_account
from ledger.api.db import Database
from ledger.api.models import Account
from ledger.api.settings import ApiSettings
from ledger.core.clock import Clock

__all__ = [
    "AccountInfo",
    "AccountNotFound",
    "NewAccount",
    "accounts_create",
    "accounts_list",
    "accounts_revoke",
]


@dataclass(frozen=True)
class AccountInfo:
    """One account as listed (never its key).

    Attributes:
        id: account number (what ``accounts_revoke`` takes).
        name: display name.
        created_at, revoked_at: Unix seconds; ``revoked_at`` is ``None`` while live.
    """

    id: int
    name: str
    created_at: float
    revoked_at: float | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def to_json(self) -> dict[str, object]:
        """``{"id", "name", "created_at", "revoked_at"}`` with ISO 8601 UTC times (or null)."""
        return {
            "id": self.id,
            "name": self.name,
            "created_at": _iso(self.created_at),
            "revoked_at": None if self.revoked_at is None else _iso(self.revoked_at),
        }


@dataclass(frozen=True)
class NewAccount:
    """A created account and its key (43 characters; shown once, stored only hashed)."""

    account: AccountInfo
    key: str


def accounts_create(
    settings: ApiSettings, name: str, *, key: str | None = None, clock: Clock | None = None
) -> NewAccount:
    """Create an account; returns it with its new key (or ``key`` when importing one).

    Raises:
        ValueError: ``name`` is empty or longer than 200 characters, or ``key`` is given
            but not of the generated form.
    """
    if not name.strip() or len(name) > 200:
        raise ValueError("an account name must have 1 to 200 characters")
    db = _open(settings)
    try:
        with db.write() as session:
            account, plaintext = create_account(session, name, clock=clock, key=key)
            info = _info(account)
    finally:
        db.dispose()
    return NewAccount(info, plaintext)


def accounts_list(settings: ApiSettings, *, include_revoked: bool = True) -> list[AccountInfo]:
    """Every account, oldest first (revoked ones too unless ``include_revoked`` is false)."""
    db = _open(settings)
    try:
        with db.read() as session:
            query = select(Account).order_by(Account.id)
            if not include_revoked:
                query = query.where(Account.revoked_at.is_(None))
            return [_info(a) for a in session.scalars(query)]
    finally:
        db.dispose()


def accounts_revoke(
    settings: ApiSettings, account_id: int, *, clock: Clock | None = None
) -> AccountInfo:
    """Revoke account ``account_id`` (idempotent: the first revocation time stays).

    Raises:
        AccountNotFound: no such account.
    """
    db = _open(settings)
    try:
        with db.write() as session:
            return _info(revoke_account(session, account_id, clock=clock))
    finally:
        db.dispose()


def _open(settings: ApiSettings) -> Database:
    db = Database(settings.resolved_database_url())
    db.create_schema()
    return db


def _info(account: Account) -> AccountInfo:
    return AccountInfo(account.id, account.name, account.created_at, account.revoked_at)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
