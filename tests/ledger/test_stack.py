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


def test_the_callback_secret_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTARY_API_CALLBACK_SECRET", "configured")
    stack = Stack(StackSettings(data_dir=tmp_path / "data"))
    stack.prepare()
    assert stack.callback_secret_file.read_text() == "configured\n"
