"""Secrets never reach logs, the health and metrics probes, or plaintext storage during a
full run of the stack; the JSON log lines of the run parse one per line."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger import devnet
from ledger.observability.logs import RedactingStreamHandler, configure_logging
from ledger.stack import Stack

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
    assert summary["receipts_verified"] == 5

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
    for secret in (api_key, devnet.DEV_EC_SECRET, devnet.DEV_FCT_SECRET, callback_secret):
        assert secret not in logs

    api_db = stack.settings.data_dir / "api" / "api.sqlite"
    stored = b"".join(p.read_bytes() for p in api_db.parent.glob("api.sqlite*"))
    assert api_key.encode() not in stored
