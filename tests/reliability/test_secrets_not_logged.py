"""Secrets never reach logs, the health and metrics probes, or plaintext storage during a
full run of the stack; the JSON log lines of the run parse one per line.

With the JSON-RPC services locked, a full run through them (the pipeline reading the
credentials file), a refused request and a settings error leave the RPC password, in
clear or as its ``Authorization`` header, in no log line, output or error message.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from connectors.audit import AuditStore
from connectors.errors import AuthError
from connectors.node import NodeClient
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger import devnet
from ledger.observability.logs import RedactingStreamHandler, configure_logging
from ledger.stack import Stack
from tests.harness.stack import running_stack, settings_for

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """Every log record of the test as a JSON line (the services' format option), with no
    secret configured for redaction: the lines must be clean on their own."""
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    configure_logging("json", "DEBUG", stream=stream)
    yield stream
    for handler in [h for h in root.handlers if isinstance(h, RedactingStreamHandler)]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_full_run_logs_no_secret_and_api_keys_are_stored_hashed(
    tmp_path: Path,
    stack: Stack,
    pipeline_settings: PipelineSettings,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    json_lines: io.StringIO,
) -> None:
    caplog.set_level(logging.DEBUG)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.txt").write_text(f"secret-free document {i}")
    api_key = pipeline_settings.resolve_api_key()
    summary = notarize_folder(str(folder), "secrets", pipeline_settings, True)
    assert summary["documents_with_receipt"] == 5

    probes = ""
    s = stack.settings
    for port in (s.node_port, s.wallet_port, s.api_port, s.anchor_port):
        for path in ("/health", "/health/live", "/health/ready", "/metrics"):
            probes += httpx.get(s.url(port, path), timeout=10.0).text

    captured = capfd.readouterr()
    lines = json_lines.getvalue().splitlines()
    assert lines, "the run logged nothing at DEBUG"
    for line in lines:
        json.loads(line)  # one event per line, each a JSON object
    logs = caplog.text + captured.out + captured.err + json_lines.getvalue() + probes
    callback_secret = stack.callback_secret_file.read_text().strip()
    with AuditStore(pipeline_settings.audit_url) as store:
        collection = store.collections.find("secrets")
    assert collection is not None and collection.private
    collection_key = collection.key.hex()  # the secret every document's nonce comes from
    secrets = (api_key, devnet.DEV_EC_SECRET, devnet.DEV_FCT_SECRET, callback_secret)
    for secret in (*secrets, collection_key):
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
    json_lines: io.StringIO,
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
    assert summary["documents_with_receipt"] == 5  # the pipeline found the credentials file

    wrong = f"{credentials.user}:{credentials.password}x"
    with pytest.raises(AuthError) as refused:  # a refusal, and its error message
        NodeClient(s.node_url.replace("://", f"://{wrong}@", 1)).heights()
    with pytest.raises(ValidationError) as invalid:  # a settings error names no password
        PipelineSettings(node_rpc_password=credentials.password)

    for port in (s.node_port, s.wallet_port, s.anchor_port):  # the probes stay open
        for path in ("/health/ready", "/metrics"):
            assert httpx.get(s.url(port, path), timeout=10.0).status_code == 200, (port, path)
        assert httpx.post(s.url(port, "/v2"), json={}, timeout=10.0).status_code == 401

    logs = caplog.text + "".join(capfd.readouterr()) + str(refused.value) + str(invalid.value)
    logs += json_lines.getvalue()
    assert "without valid credentials" in logs  # the refusals, summarised
    header = credentials.authorization().decode()
    for secret in (credentials.password, header, header.split()[1], wrong):
        assert secret not in logs
