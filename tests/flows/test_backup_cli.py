"""``notary backup`` and ``notary restore`` as commands: output, exit codes, the layout.

The data folder is the stack's (``Stack.prepare``: the API's database and the secret
files) plus an audit store and a node store; stores without a file yet are reported. The
live case, under load with the services running, is ``tests/reliability/
test_backup_restore.py``.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.audit import AuditStore
from flows.cli import app
from flows.cli.exit_codes import ExitCode
from ledger.backup import MANIFEST_NAME
from ledger.stack import Stack, StackSettings
from tests.ledger.backup.conftest import insert, open_store

ENV = {"COLUMNS": "300"}


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("NOTARY_AUDIT_DB_URL", "NOTARY_API_DATABASE_URL", "NOTARY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "data"
    Stack(StackSettings(data_dir=folder, rpc_auth=True)).prepare()
    with AuditStore(f"sqlite:///{folder / 'audit.sqlite'}") as audit:
        audit.create_tables()
    node = open_store(folder / "node" / "node.sqlite")
    node.execute("CREATE TABLE dblocks (height INTEGER PRIMARY KEY)")
    node.executemany("INSERT INTO dblocks VALUES (?)", [(h,) for h in range(13)])
    insert(node, 1)
    node.close()
    return folder


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    return result.exit_code, result.output


def test_backup_then_restore_into_a_new_folder(data: Path, tmp_path: Path) -> None:
    backup, fresh = tmp_path / "backup", tmp_path / "fresh"
    code, out = _run("backup", str(backup), "--data-dir", str(data))
    assert code == ExitCode.OK, out
    assert "node height 12" in out
    assert "4 secret files: api-key, callback-secret, rpc-credentials, wallet-passphrase" in out
    assert "no file yet for: anchor, pow, wallet" in out
    digest = re.search(r"manifest sha256 ([0-9a-f]{64})", out)
    assert digest is not None
    names = [s["store"] for s in json.loads((backup / MANIFEST_NAME).read_text())["stores"]]
    assert names == ["audit", "api", "node"]

    code, out = _run(
        "restore", str(backup), "--data-dir", str(fresh), "--manifest-sha256", digest.group(1)
    )
    assert code == ExitCode.OK, out
    assert "node height 12" in out
    for path in ("audit.sqlite", "api/api.sqlite", "node/node.sqlite", "rpc-credentials"):
        assert (fresh / path).read_bytes() == (backup / path).read_bytes(), path
    assert stat.S_IMODE((fresh / "rpc-credentials").stat().st_mode) == 0o600


def test_refusals_exit_with_their_codes(data: Path, tmp_path: Path) -> None:
    backup = tmp_path / "backup"
    assert _run("backup", str(backup), "--data-dir", str(data))[0] == ExitCode.OK
    code, out = _run("backup", str(backup), "--data-dir", str(data))
    assert code == ExitCode.USAGE and "not empty" in out
    code, out = _run("backup", str(tmp_path / "b2"), "--data-dir", str(tmp_path / "nothing"))
    assert code == ExitCode.USAGE and "no data folder" in out
    code, out = _run("restore", str(backup), "--data-dir", str(data))
    assert code == ExitCode.USAGE and "--force" in out
    assert _run("restore", str(backup), "--data-dir", str(data), "--force")[0] == ExitCode.OK

    (backup / "api-key").write_text("another key\n")
    code, out = _run("restore", str(backup), "--data-dir", str(tmp_path / "fresh"))
    assert code == ExitCode.INCOMPLETE and "does not check out" in out
    assert not (tmp_path / "fresh").exists()


def test_a_postgresql_store_is_refused_or_skipped(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_AUDIT_DB_URL", "postgresql+psycopg://u:secret@db:5432/audit")
    code, out = _run("backup", str(tmp_path / "refused"), "--data-dir", str(data))
    assert code == ExitCode.USAGE and "pg_dump" in out and "secret" not in out
    code, out = _run("backup", str(tmp_path / "backup"), "--data-dir", str(data), "--skip-external")
    assert code == ExitCode.OK, out
    assert "skipped audit (postgresql+psycopg://u:***@db:5432/audit)" in out
