"""One storage contract run against both stores, plus SQLite durability details."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.wallet.store import MemoryWalletStore, SqliteWalletStore, StoredKey, WalletStore


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WalletStore]:
    made: WalletStore = (
        SqliteWalletStore(tmp_path / "sub" / "w.sqlite")
        if request.param == "sqlite"
        else MemoryWalletStore()
    )
    yield made
    made.close()


def _key(public: str, kind: str = "ec", index: int | None = None) -> StoredKey:
    return StoredKey(kind, public, b"sealed-" + public.encode(), index)  # type: ignore[arg-type]


def test_meta_round_trip_and_overwrite(store: WalletStore) -> None:
    assert store.get_meta("format") is None
    store.put_meta({"format": b"1", "counter:ec": b"0"})
    store.put_meta({"counter:ec": b"3"})
    assert store.get_meta("format") == b"1"
    assert store.get_meta("counter:ec") == b"3"


def test_keys_keep_insertion_order_and_filter_by_kind(store: WalletStore) -> None:
    assert store.add_key(_key("EC-b", "ec", 0))
    assert store.add_key(_key("FA-a", "fct", 0))
    assert store.add_key(_key("id-c", "identity"))
    assert [k.public for k in store.list_keys()] == ["EC-b", "FA-a", "id-c"]
    assert [k.public for k in store.list_keys({"fct", "identity"})] == ["FA-a", "id-c"]
    assert store.list_keys({"ec"})[0] == _key("EC-b", "ec", 0)


def test_duplicate_key_is_refused_but_meta_is_written(store: WalletStore) -> None:
    assert store.add_key(_key("EC-x"), meta={"counter:ec": b"1"})
    assert not store.add_key(StoredKey("ec", "EC-x", b"other", 5), meta={"counter:ec": b"2"})
    assert store.list_keys() == [_key("EC-x")]
    assert store.get_meta("counter:ec") == b"2"


def test_remove_key(store: WalletStore) -> None:
    store.add_key(_key("EC-x"))
    assert store.remove_key("EC-x")
    assert not store.remove_key("EC-x")
    assert store.list_keys() == []


def test_transactions_keep_creation_order_through_updates(store: WalletStore) -> None:
    assert store.get_transaction("a") is None and store.list_transactions() == []
    store.put_transaction("a", b"one")
    store.put_transaction("b", b"two")
    store.put_transaction("a", b"three")  # an update keeps the position
    assert store.list_transactions() == [("a", b"three"), ("b", b"two")]
    assert store.get_transaction("a") == b"three"
    assert store.remove_transaction("a")
    assert not store.remove_transaction("a")
    assert store.list_transactions() == [("b", b"two")]


def test_stored_key_repr_hides_the_secret() -> None:
    assert "sealed-" not in repr(_key("EC-x"))


def test_sqlite_file_persists_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    first = SqliteWalletStore(path)
    first.put_meta({"format": b"1"})
    first.add_key(_key("EC-x", "ec", 7))
    first.close()
    again = SqliteWalletStore(path)
    assert again.get_meta("format") == b"1"
    assert again.list_keys() == [_key("EC-x", "ec", 7)]
    again.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_failed_transaction_rolls_back(tmp_path: Path) -> None:
    store = SqliteWalletStore(tmp_path / "w.sqlite")
    with pytest.raises(sqlite3.IntegrityError):
        store.add_key(StoredKey("bogus", "X", b"s"))  # type: ignore[arg-type]
    store.put_meta({"format": b"1"})  # the connection is usable after the rollback
    assert store.list_keys() == []
    store.close()
