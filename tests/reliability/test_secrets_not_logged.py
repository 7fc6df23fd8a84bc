"""Secrets never reach logs or plaintext storage during a full run of the stack."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger import devnet
from ledger.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_full_run_logs_no_secret_and_api_keys_are_stored_hashed(
    tmp_path: Path,
    stack: Stack,
    pipeline_settings: PipelineSettings,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.txt").write_text(f"secret-free document {i}")
    api_key = pipeline_settings.resolve_api_key()
    summary = notarize_folder(str(folder), "secrets", pipeline_settings, True)
    assert summary["receipts_verified"] == 5

    captured = capfd.readouterr()
    logs = caplog.text + captured.out + captured.err
    for secret in (api_key, devnet.DEV_EC_SECRET, devnet.DEV_FCT_SECRET):
        assert secret not in logs

    api_db = stack.settings.data_dir / "api" / "api.sqlite"
    stored = b"".join(p.read_bytes() for p in api_db.parent.glob("api.sqlite*"))
    assert api_key.encode() not in stored
