"""The audit store holds collection keys only while it is owner-only (``store_modes``).

A new SQLite store is created 0600 whatever the umask; an existing one more open is made
0600 (with its side files) when opened, and said so; one that cannot be made owner-only is
not opened. ``notary backup`` and ``restore`` carry the keys with the store, owner-only:
the restored store derives the same document nonces.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import connectors.store_modes as store_modes
from connectors.audit import AuditStore
from connectors.store_modes import StoreExposedError, owner_only_sqlite
from flows.cli import app
from flows.cli.exit_codes import ExitCode
from ledger.core.commitment import document_nonce

DOCUMENT = bytes(range(32))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _register(store: AuditStore, name: str = "c") -> bytes:
    record = store.collections.use(name, "aggregate", chain_namer=lambda *_: "ab" * 32)
    return record.key


@pytest.mark.usefixtures("umask_022")
def test_a_new_store_is_owner_only_with_its_side_files(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.sqlite"
    with AuditStore(f"sqlite:///{path}") as store:
        _register(store)
        sides = [p for p in path.parent.iterdir() if p != path]
        assert sides and all(mode(p) == 0o600 for p in sides)  # -wal, -shm while open
    assert mode(path) == 0o600


@pytest.mark.usefixtures("umask_022")
def test_an_open_store_is_tightened_at_open_and_said_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.sqlite"
    url = f"sqlite:///{path}"
    with AuditStore(url) as store:
        key = _register(store)
    path.chmod(0o644)
    caplog.set_level(logging.WARNING, logger="connectors.audit.store")
    with AuditStore(url) as store:
        assert store.collections.key("c") == key
    assert mode(path) == 0o600
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"made the audit store owner-only (it holds collection keys): {path} 0644 -> 0600"
    ]


def test_a_store_that_cannot_be_made_owner_only_is_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.sqlite"
    path.write_bytes(b"")
    path.chmod(0o644)

    def not_ours(file: Path, wanted: int) -> None:  # another user's file (we are root here)
        raise PermissionError(1, "Operation not permitted", str(file))

    monkeypatch.setattr(store_modes, "tighten_file", not_ours)
    with pytest.raises(StoreExposedError, match="readable by other users"):
        AuditStore(f"sqlite:///{path}")


def test_server_and_memory_stores_are_left_alone() -> None:
    assert owner_only_sqlite("postgresql+psycopg://u:p@127.0.0.1:5432/audit") == []
    assert owner_only_sqlite("sqlite://") == []


def test_backup_and_restore_carry_the_keys_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NOTARY_AUDIT_DB_URL", "NOTARY_API_DATABASE_URL", "NOTARY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    data, backup, fresh = tmp_path / "data", tmp_path / "backup", tmp_path / "fresh"
    with AuditStore(f"sqlite:///{data / 'audit.sqlite'}") as store:
        key = _register(store)
    nonce = document_nonce(key, DOCUMENT)
    runner = CliRunner()
    done = runner.invoke(app, ["backup", str(backup), "--data-dir", str(data)])
    assert done.exit_code == ExitCode.OK, done.output
    assert mode(backup / "audit.sqlite") == 0o600
    done = runner.invoke(app, ["restore", str(backup), "--data-dir", str(fresh)])
    assert done.exit_code == ExitCode.OK, done.output
    restored = fresh / "audit.sqlite"
    assert mode(restored) == 0o600
    with AuditStore(f"sqlite:///{restored}") as store:
        restored_key = store.collections.key("c")
    assert restored_key is not None and document_nonce(restored_key, DOCUMENT) == nonce
