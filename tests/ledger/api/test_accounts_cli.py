"""Account management functions (``notary accounts ...``) and ``python -m ledger.api accounts``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.api.accounts import verify_key
from ledger.api.accounts_cli import (
    AccountNotFound,
    accounts_create,
    accounts_list,
    accounts_revoke,
)
from ledger.api.command import main
from ledger.api.db import Database
from ledger.api.settings import ApiSettings
from ledger.core.clock import ManualClock


@pytest.fixture
def settings(tmp_path: Path) -> ApiSettings:
    return ApiSettings(data_dir=tmp_path)


def _verify(settings: ApiSettings, key: str) -> bool:
    db = Database(settings.resolved_database_url())
    try:
        with db.read() as session:
            return verify_key(session, key) is not None
    finally:
        db.dispose()


def test_create_list_revoke_round_trip(settings: ApiSettings) -> None:
    clock = ManualClock(1_700_000_000.0)
    first = accounts_create(settings, "pipeline", clock=clock)
    second = accounts_create(settings, "auditor", clock=clock)
    assert (first.account.id, second.account.id) == (1, 2)
    assert len(first.key) == 43 and first.key != second.key
    assert _verify(settings, first.key)
    listed = accounts_list(settings)
    assert [(a.id, a.name, a.revoked) for a in listed] == [
        (1, "pipeline", False),
        (2, "auditor", False),
    ]
    assert listed[0].to_json() == {
        "id": 1,
        "name": "pipeline",
        "created_at": "2023-11-14T22:13:20Z",
        "revoked_at": None,
    }
    clock.advance(60)
    revoked = accounts_revoke(settings, 1, clock=clock)
    assert revoked.revoked and revoked.revoked_at == 1_700_000_060.0
    assert not _verify(settings, first.key) and _verify(settings, second.key)
    clock.advance(60)
    assert accounts_revoke(settings, 1, clock=clock).revoked_at == 1_700_000_060.0  # idempotent
    assert [a.id for a in accounts_list(settings, include_revoked=False)] == [2]


def test_errors_are_typed(settings: ApiSettings) -> None:
    with pytest.raises(AccountNotFound) as caught:
        accounts_revoke(settings, 42)
    assert caught.value.account_id == 42
    with pytest.raises(ValueError):
        accounts_create(settings, "  ")
    with pytest.raises(ValueError):
        accounts_create(settings, "x", key="short")
    imported = accounts_create(settings, "dev", key="A" * 43)
    assert imported.key == "A" * 43 and _verify(settings, "A" * 43)


def test_command_line_accounts_create_list_revoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NOTARY_API_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("NOTARY_API_DATABASE_URL", raising=False)
    assert main(["accounts", "create", "pipeline"]) == 0
    key = capsys.readouterr().out.strip().rsplit(" ", 1)[-1]
    assert main(["accounts", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(a["id"], a["name"], a["revoked_at"]) for a in listed] == [(1, "pipeline", None)]
    assert main(["accounts", "revoke", "1"]) == 0
    assert capsys.readouterr().out.strip() == "account 1 revoked"
    assert main(["accounts", "list"]) == 0
    assert "revoked" in capsys.readouterr().out
    assert not _verify(ApiSettings(data_dir=tmp_path), key)
    assert main(["accounts", "revoke", "7"]) == 1
