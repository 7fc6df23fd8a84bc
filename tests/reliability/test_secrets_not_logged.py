"""Secrets never reach logs or plaintext storage during a full run of the stack.

With the JSON-RPC services locked, a full run through them (the pipeline reading the
credentials file), a refused request and a settings error leave the RPC password, in
clear or as its ``Authorization`` header, in no log line, output or error message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from connectors.errors import AuthError
from connectors.node import NodeClient
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger import devnet
from ledger.stack import Stack
from tests.harness.stack import running_stack, settings_for

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


@pytest.fixture
def locked_stack(tmp_path: Path) -> Iterator[Stack]:
    """The bundled stack with its JSON-RPC services locked (a generated password)."""
    with running_stack(tmp_path / "locked", rpc_auth=True) as stack:
        yield stack


def test_the_rpc_password_reaches_no_log(
    tmp_path: Path,
    locked_stack: Stack,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    credentials = locked_stack.rpc_credentials()
    assert credentials is not None
    s = locked_stack.settings
    settings = settings_for(locked_stack)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.txt").write_text(f"document {i} behind a locked node")
    summary = notarize_folder(str(folder), "locked", settings, True)
    assert summary["receipts_verified"] == 5  # the pipeline found the credentials file

    wrong = f"{credentials.user}:{credentials.password}x"
    with pytest.raises(AuthError) as refused:  # a refusal, and its error message
        NodeClient(s.node_url.replace("://", f"://{wrong}@", 1)).heights()
    with pytest.raises(ValidationError) as invalid:  # a settings error names no password
        PipelineSettings(node_rpc_password=credentials.password)

    logs = caplog.text + "".join(capfd.readouterr()) + str(refused.value) + str(invalid.value)
    assert "refused a JSON-RPC request" in logs
    header = credentials.authorization().decode()
    for secret in (credentials.password, header, header.split()[1], wrong):
        assert secret not in logs
