"""Accounts: keys shown once, stored hashed, verified in constant time, revocable."""

from __future__ import annotations

import base64
import hashlib

import pytest
from sqlalchemy import select

from ledger.api.accounts import (
    AccountNotFound,
    create_account,
    generate_key,
    hash_key,
    revoke_account,
    verify_key,
)
from ledger.api.db import Database
from ledger.api.models import Account
from ledger.core.clock import ManualClock


@pytest.fixture
def db(database_url: str):
    database = Database(database_url)
    database.create_schema()
    yield database
    database.dispose()


def test_generated_key_is_32_random_bytes_in_urlsafe_base64() -> None:
    key = generate_key()
    assert len(key) == 43
    assert len(base64.urlsafe_b64decode(key + "=")) == 32
    assert generate_key() != key


def test_database_keeps_only_the_sha256_of_the_key(db: Database) -> None:
    with db.write() as session:
        account, key = create_account(session, "alice", clock=ManualClock(100.0))
    with db.read() as session:
        stored = session.scalar(select(Account).where(Account.id == account.id))
    assert stored is not None
    assert stored.key_hash == hashlib.sha256(key.encode()).hexdigest() == hash_key(key)
    assert key not in (stored.key_hash, stored.name)
    assert stored.created_at == 100.0 and stored.revoked_at is None


def test_verify_accepts_the_key_and_rejects_others(db: Database) -> None:
    with db.write() as session:
        alice, key = create_account(session, "alice")
        create_account(session, "bob")
    with db.read() as session:
        found = verify_key(session, key)
        assert found is not None and found.id == alice.id
        assert verify_key(session, key[:-1] + ("A" if key[-1] != "A" else "B")) is None
        assert verify_key(session, "") is None


def test_revoked_key_stops_working_and_revoke_is_idempotent(db: Database) -> None:
    clock = ManualClock(10.0)
    with db.write() as session:
        account, key = create_account(session, "alice", clock=clock)
    clock.advance(5)
    with db.write() as session:
        assert revoke_account(session, account.id, clock=clock).revoked_at == 15.0
    clock.advance(5)
    with db.write() as session:
        assert revoke_account(session, account.id, clock=clock).revoked_at == 15.0
    with db.read() as session:
        assert verify_key(session, key) is None


def test_revoke_unknown_account_raises(db: Database) -> None:
    with db.write() as session, pytest.raises(AccountNotFound) as info:
        revoke_account(session, 12345)
    assert info.value.account_id == 12345


def test_import_of_a_known_key_checks_its_form(db: Database) -> None:
    key = generate_key()
    with db.write() as session:
        _, returned = create_account(session, "dev", key=key)
    assert returned == key
    with db.read() as session:
        assert verify_key(session, key) is not None
    for bad in ["short", key + "A", key[:-1] + "=", "!" * 43]:
        with db.write() as session, pytest.raises(ValueError):
            create_account(session, "bad", key=bad)
