"""Public surface, settings and the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

import ledger.api
from ledger.api.accounts import verify_key
from ledger.api.command import main
from ledger.api.db import Database
from ledger.api.settings import ApiSettings


def test_exported_members_exist_and_are_listed_once() -> None:
    assert len(ledger.api.__all__) == len(set(ledger.api.__all__))
    missing = [name for name in ledger.api.__all__ if not hasattr(ledger.api, name)]
    assert missing == []
    assert {"create_app", "ApiSettings", "create_account", "LedgerGateway"} <= set(
        ledger.api.__all__
    )


def test_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ["NOTARY_API_PORT", "NOTARY_API_DATABASE_URL", "NOTARY_API_CALLBACK_ALLOWED_HOSTS"]:
        monkeypatch.delenv(name, raising=False)
    settings = ApiSettings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8090)
    assert settings.node_url == "http://127.0.0.1:8088/v2"
    assert settings.wallet_url == "http://127.0.0.1:8089/v2"
    assert settings.resolved_database_url() == f"sqlite:///{Path('.notary/api') / 'api.sqlite'}"
    monkeypatch.setenv("NOTARY_API_PORT", "9999")
    monkeypatch.setenv("NOTARY_API_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("NOTARY_API_CALLBACK_ALLOWED_HOSTS", '["127.0.0.1", "10.0.0.0/8"]')
    settings = ApiSettings()
    assert settings.port == 9999
    assert settings.resolved_database_url() == "postgresql+psycopg://u@h/db"
    assert settings.callback_allowed_hosts == ["127.0.0.1", "10.0.0.0/8"]


def test_command_line_creates_and_revokes_accounts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NOTARY_API_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("NOTARY_API_DATABASE_URL", raising=False)
    assert main(["create-account", "pipeline"]) == 0
    out = capsys.readouterr().out
    key = out.strip().rsplit(" ", 1)[-1]
    assert out.startswith("account 1 (pipeline) key: ") and len(key) == 43
    db = Database(f"sqlite:///{tmp_path / 'api.sqlite'}")
    with db.read() as session:
        assert verify_key(session, key) is not None
    assert main(["revoke-account", "1"]) == 0
    with db.read() as session:
        assert verify_key(session, key) is None
    assert main(["revoke-account", "99"]) == 1
    db.dispose()
