"""API accounts and their keys.

A key is 32 random bytes in URL-safe Base64 without padding (43 characters). It is shown
once, at creation; the database keeps only ``sha256(key.encode()).hexdigest()``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from ledger.api.errors import LedgerApiError
from ledger.api.models import Account
from ledger.core.clock import Clock, SystemClock

__all__ = [
    "KEY_BYTES",
    "AccountNotFound",
    "create_account",
    "generate_key",
    "hash_key",
    "revoke_account",
    "verify_key",
]

KEY_BYTES = 32


class AccountNotFound(LedgerApiError, LookupError):
    """No account has the given id. Attributes: ``account_id``."""

    def __init__(self, account_id: int) -> None:
        super().__init__(f"no account with id {account_id}")
        self.account_id = account_id


def generate_key() -> str:
    """A new API key: 32 random bytes, URL-safe Base64, no padding (43 characters)."""
    return secrets.token_urlsafe(KEY_BYTES)


def hash_key(key: str) -> str:
    """SHA-256 hex (64 characters) of the key's UTF-8 bytes; what the database stores."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_account(
    session: Session, name: str, *, clock: Clock | None = None, key: str | None = None
) -> tuple[Account, str]:
    """Add an account (flushed, not committed) and return it with its plaintext key.

    Args:
        session: a write session; the caller commits.
        name: display name of the account.
        clock: source of ``created_at`` (default: the system clock).
        key: import this key instead of generating one (e.g. a development key); it must
            have the generated form (URL-safe Base64 of 32 bytes, no padding).

    Raises:
        ValueError: ``key`` given but not of the generated form.
    """
    plaintext = generate_key() if key is None else _checked_key(key)
    now = (clock or SystemClock()).now()
    account = Account(name=name, key_hash=hash_key(plaintext), created_at=now, revoked_at=None)
    session.add(account)
    session.flush()
    return account, plaintext


def verify_key(session: Session, key: str) -> Account | None:
    """The live (not revoked) account whose key is ``key``, else ``None``.

    The stored hash is found by its index, then compared with ``hmac.compare_digest``.
    """
    presented = hash_key(key)
    account = session.scalar(select(Account).where(Account.key_hash == presented))
    if account is None or not hmac.compare_digest(account.key_hash, presented):
        return None
    return None if account.revoked_at is not None else account


def revoke_account(session: Session, account_id: int, *, clock: Clock | None = None) -> Account:
    """Mark the account revoked (its key stops working); idempotent.

    Raises:
        AccountNotFound: no such account id.
    """
    account = session.get(Account, account_id)
    if account is None:
        raise AccountNotFound(account_id)
    if account.revoked_at is None:
        account.revoked_at = (clock or SystemClock()).now()
    return account


def _checked_key(key: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("an API key must be URL-safe Base64") from exc
    if len(raw) != KEY_BYTES or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != key:
        raise ValueError(f"an API key must encode exactly {KEY_BYTES} bytes without padding")
    return key
