"""The data folder is owner-only: 0700 folders, 0600 files, after a full run and at start.

The full run is what a user does: ``notary up`` (with its Prefect server) in a child
process, then ``notary notarize``, ``notary collect`` and ``notary proof export`` into the
data folder, each a child process of its own (as from a shell with the usual umask 022).
Then every file and folder under the data folder is listed with its mode: the SQLite
databases with their ``-wal`` and ``-shm`` files, Prefect's database and log, the secret
files, the proofs and their folder.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flows.settings import PipelineSettings
from ledger.stack import Stack, StackSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.waiting import wait_until


def listing(root: Path) -> dict[str, int]:
    """Every file and folder under ``root`` (relative path -> permission bits), ``root``
    itself as ``.``; symbolic links are listed with their own bits."""
    found = {".": stat.S_IMODE(root.lstat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def loose(found: dict[str, int], root: Path) -> list[str]:
    """The entries of ``found`` that are not owner-only (0700 folders, 0600 files)."""
    bad = []
    for name, mode in found.items():
        wanted = 0o700 if (root / name).is_dir() else 0o600
        if mode != wanted:
            bad.append(f"{name} {mode:04o}")
    return bad


def _notary(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.e2e
def test_every_file_of_a_full_run_is_owner_only(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "docs"
    folder.mkdir()
    for i in range(5):
        (folder / f"doc-{i}.txt").write_text(f"document {i}\n")
    ports = {name: free_port() for name in ("NODE", "WALLET", "API", "ANCHOR")}
    env = child_env({f"NOTARY_STACK_{name}_PORT": str(port) for name, port in ports.items()})
    env = {k: v for k, v in env.items() if not k.startswith("PREFECT_")}
    env |= {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "NOTARY_API_URL": f"http://127.0.0.1:{ports['API']}/v1",
        "NOTARY_NODE_URL": f"http://127.0.0.1:{ports['NODE']}/v2",
        "NOTARY_ANCHOR_URL": f"http://127.0.0.1:{ports['ANCHOR']}/v2",
    }
    argv = [sys.executable, "-m", "flows.cli", "up", "--data-dir", str(data)]
    argv += ["--block-time", "1", "--prefect-port", str(free_port())]
    up = ManagedProcess("notary-up", argv, env, tmp_path / "up.log")
    up.spawn()
    try:
        url_file = PipelineSettings(data_dir=data).prefect_api_url_file
        wait_until(url_file.exists, 240, 0.2, what="notary up's Prefect server")
        _notary("notarize", str(folder), "--data-dir", str(data), env=env)
        wait_until(
            lambda: _anchored(_notary("collect", "--data-dir", str(data), env=env)) == 5,
            180,
            1.0,
            what="the documents to reach the anchor stage",
        )
        proofs = data / "proofs"
        _notary("proof", "export", "--out", str(proofs), "--data-dir", str(data), env=env)
        found = listing(data)
    finally:
        up.stop()
    print("\n".join(f"{mode:04o} {name}" for name, mode in sorted(found.items())))
    expected = {"audit.sqlite", "api/api.sqlite", "wallet/wallet.sqlite", "node/node.sqlite"}
    expected |= {"anchor/anchor.sqlite", "anchor/pow.sqlite", "prefect/prefect.db"}
    expected |= {"api-key", "callback-secret", "wallet-passphrase", "proofs"}
    expected |= {"prefect/server.log", "prefect-api-url"}
    assert expected <= set(found), sorted(set(expected) - set(found))
    assert sum(name.endswith(".proof.json") for name in found) == 5
    assert any(name.endswith("-wal") for name in found)  # SQLite's side files are listed
    assert loose(found, data) == []
    assert loose(listing(data), data) == []  # and after the stop


def test_a_loose_data_folder_is_tightened_at_start_and_said_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    (data / "wallet").mkdir(parents=True)
    data.chmod(0o755)
    (data / "wallet").chmod(0o775)
    (data / "audit.sqlite").write_bytes(b"")
    (data / "audit.sqlite").chmod(0o644)
    (data / "audit.sqlite-wal").write_bytes(b"")
    (data / "audit.sqlite-wal").chmod(0o664)
    (data / "outside").write_text("x")
    (data / "outside").chmod(0o640)
    (data / "link").symlink_to(data / "outside")
    caplog.set_level(logging.WARNING, logger="ledger.stack")
    Stack(StackSettings(data_dir=data)).prepare()
    found = listing(data)
    del found["link"]  # a link's own bits are not a permission (0777 on Linux)
    assert loose(found, data) == []
    lines = [r.getMessage() for r in caplog.records if "owner-only" in r.getMessage()]
    assert len(lines) == 1
    assert f"made the data folder {data} owner-only: 5 modes changed" in lines[0]
    assert f"{data} 0755 -> 0700" in lines[0] and "audit.sqlite 0644 -> 0600" in lines[0]
    caplog.clear()
    Stack(StackSettings(data_dir=data)).prepare()
    assert not [r for r in caplog.records if "owner-only" in r.getMessage()]  # nothing to say


def _anchored(collect_output: str) -> int:
    """The ``anchor`` row of ``notary collect``'s stage table (every stage is listed, 0 or
    not, so the word alone says nothing)."""
    found = re.search(r"^\W*anchor\W+(\d+)", collect_output, re.MULTILINE)
    return int(found.group(1)) if found else 0
