"""``ledger.stack.Stack.prepare``: the files the command line reads, without serving."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ledger.stack import Stack, StackSettings


def test_prepare_writes_the_api_key_and_the_callback_secret_owner_only(tmp_path: Path) -> None:
    stack = Stack(StackSettings(data_dir=tmp_path / "data"))
    key = stack.prepare()
    assert stack.api_key_file.read_text() == key + "\n"
    secret = stack.callback_secret_file.read_text().strip()
    assert len(secret) == 64 and int(secret, 16) >= 0
    for path in (stack.api_key_file, stack.callback_secret_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stack.prepare() == key  # the same account and secret on the next start
    assert stack.write_callback_secret().read_text().strip() == secret


def test_the_callback_secret_is_stored_once_in_its_file(tmp_path: Path) -> None:
    from ledger.api.db import Database
    from ledger.api.models import ServiceState
    from ledger.api.services import CALLBACK_SECRET_KEY, load_callback_secret

    stack = Stack(StackSettings(data_dir=tmp_path / "data"))
    api = stack.api_settings()
    (tmp_path / "data" / "api").mkdir(parents=True)
    db = Database(api.resolved_database_url())
    db.create_schema()
    kept = load_callback_secret(db, api)  # as an older stack kept it: in the database
    stack.prepare()
    with db.read() as session:
        assert session.get(ServiceState, CALLBACK_SECRET_KEY) is None  # moved out
    assert stack.callback_secret_file.read_bytes() == kept + b"\n"  # the same key
    settings = stack.api_settings()
    assert settings.callback_secret is not None
    assert load_callback_secret(db, settings) == kept  # what the API signs with
    with db.read() as session:
        assert session.get(ServiceState, CALLBACK_SECRET_KEY) is None  # still once
    db.dispose()


def test_the_callback_secret_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTARY_API_CALLBACK_SECRET", "configured")
    stack = Stack(StackSettings(data_dir=tmp_path / "data"))
    stack.prepare()
    assert stack.callback_secret_file.read_text() == "configured\n"


# -- RPC credentials (docs/jsonrpc.md §1.1) ---------------------------------------------------


def _stack(data: Path, **rpc: object) -> Stack:
    return Stack(StackSettings(data_dir=data, **rpc))  # type: ignore[arg-type]


def test_rpc_auth_generates_credentials_that_every_service_gets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert _stack(data).rpc_credentials() is None  # open by default
    stack = _stack(data, rpc_auth=True)
    stack.prepare()
    credentials = stack.rpc_credentials()
    assert credentials is not None and credentials.user == "notary"
    assert len(credentials.password) >= 32
    file = stack.rpc_credentials_file
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert file.read_text() == f"notary:{credentials.password}\n"
    for settings in (stack.node_settings(), stack.wallet_settings(), stack.anchor_settings()):
        assert settings.rpc_credentials() == credentials
    for settings in (stack.wallet_settings(), stack.anchor_settings(), stack.api_settings()):
        assert settings.node_access().credentials == credentials
    assert stack.api_settings().wallet_access().credentials == credentials
    assert stack.node_access().credentials == credentials
    assert credentials.password not in repr(stack.node_settings())


def test_a_locked_data_folder_stays_locked_until_opened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _stack(data, rpc_auth=True).prepare()
    kept = _stack(data)
    kept.prepare()
    first = kept.rpc_credentials()
    assert first is not None
    renamed = _stack(data, rpc_user="alice")
    assert renamed.rpc_credentials() == type(first)("alice", first.password)
    opened = _stack(data, rpc_auth=False)
    opened.prepare()
    assert opened.rpc_credentials() is None and not opened.rpc_credentials_file.exists()
    assert _stack(data).rpc_credentials() is None


def test_a_given_password_wins_and_is_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stack = _stack(data, rpc_password="given-password", rpc_user="ops")
    stack.prepare()
    assert stack.rpc_credentials_file.read_text() == "ops:given-password\n"
    assert _stack(data).rpc_credentials() == stack.rpc_credentials()


def test_the_stack_lists_its_stores_in_backup_order(tmp_path: Path) -> None:
    stores = _stack(tmp_path / "data").stores()
    assert [s.name for s in stores] == ["api", "anchor", "pow", "node", "wallet"]
    assert [s.archive_name for s in stores] == [
        "api/api.sqlite",
        "anchor/anchor.sqlite",
        "anchor/pow.sqlite",
        "node/node.sqlite",
        "wallet/wallet.sqlite",
    ]
    assert all(s.path is not None and s.path.is_relative_to(tmp_path / "data") for s in stores)


def test_an_api_on_postgresql_is_an_external_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_API_DATABASE_URL", "postgresql+psycopg://u:pw@db:5432/api")
    (api,) = [s for s in _stack(tmp_path / "data").stores() if s.name == "api"]
    assert api.path is None and "pw" not in api.location
