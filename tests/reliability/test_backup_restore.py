"""``notary backup`` under write load, ``notary restore`` into a fresh folder, and a stack on it.

Node, wallet, publishing API and anchoring service run as separate processes
(``LedgerProcesses``), with their JSON-RPC services locked (HTTP basic authentication:
every client inside the stack passes the credentials on). Writer threads append entries
through the REST API, recording when each write was sent and when its 202 came back.
``notary backup`` runs in the middle (a subprocess, as an operator runs it), and
``notary restore`` over the live data folder is refused. After the services stop,
``notary restore`` (checking the digest ``backup`` printed) fills a fresh data folder and
the four services start on it. Then:

1. every write acknowledged before the backup began is in the API's records
   (``GET .../entries/{hash}``) and, once blocks are made, in the node's entry blocks,
   exactly once; directory and entry blocks link from height 0 (``LedgerAudit``);
2. the restored stack accepts a new write and records it in a block;
3. the audit store and the secret files came back with their modes.

Figures printed (``-s``): writes before, during and after the backup, the backup's time,
the snapshot time of each store, and the longest write latency during the backup beside
the longest before it (the same run's baseline).
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from connectors.audit import AuditStore
from ledger.core.entry import Entry
from ledger.jsonrpc.credentials import BasicCredentials
from tests.harness.processes import child_env
from tests.harness.services import LedgerProcesses, entry_body
from tests.harness.waiting import wait_until
from tests.reliability.ledger_audit import LedgerAudit

pytestmark = pytest.mark.e2e

WRITERS = 3
LOAD_BEFORE_S = 3.0
LOAD_AFTER_S = 1.0


@dataclass
class Write:
    """One acknowledged write: the entry, and when it was sent and answered (monotonic s)."""

    entry: Entry
    sent: float
    answered: float


@dataclass
class Writes:
    """Acknowledged writes of every writer thread, and anything unexpected."""

    acked: list[Write] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _post(http: httpx.Client, url: str, entry: Entry, writes: Writes) -> bool:
    sent = time.monotonic()
    response = http.post(url, json=entry_body(entry))
    answered = time.monotonic()
    with writes.lock:
        if response.status_code == 202:
            writes.acked.append(Write(entry, sent, answered))
            return True
        writes.unexpected.append(f"{response.status_code} {response.text[:200]}")
    return False


def _write_loop(
    api_url: str, key: str, chain_id: bytes, writes: Writes, stop: threading.Event
) -> None:
    url = f"{api_url}/chains/{chain_id.hex()}/entries"
    with httpx.Client(timeout=30.0, headers={"user-key": key}) as http:
        number = 0
        while not stop.is_set():
            entry = Entry(chain_id, (b"backup", str(number).encode()), b"x" * (number % 200))
            number += 1
            _post(http, url, entry, writes)


def _create_chain(api_url: str, key: str, index: int, writes: Writes) -> bytes:
    first = Entry.first_entry((b"backup under load", str(index).encode()), b"")
    with httpx.Client(timeout=30.0, headers={"user-key": key}) as http:
        assert _post(http, f"{api_url}/chains", first, writes), writes.unexpected
    return first.chain_id


def _notary(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env=child_env({"COLUMNS": "200"}),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _audit_url(node_url: str, credentials: BasicCredentials) -> str:
    """The node URL with the credentials in it (``LedgerAudit`` speaks plain httpx)."""
    return node_url.replace("://", f"://{credentials.user}:{credentials.password}@", 1)


def test_backup_under_load_restores_every_acknowledged_write(tmp_path: Path) -> None:
    live, backup, fresh = tmp_path / "live", tmp_path / "backup", tmp_path / "fresh"
    writes = Writes()
    with LedgerProcesses(live, anchor=True, rpc_auth=True) as ledger:
        audit_url = f"sqlite:///{live / 'audit.sqlite'}"
        with AuditStore(audit_url) as audit_store:
            audit_store.create_tables()
            revision = audit_store.schema_revision()
        chains = [_create_chain(ledger.api_url, ledger.api_key, i, writes) for i in range(WRITERS)]
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=_write_loop, args=(ledger.api_url, ledger.api_key, c, writes, stop)
            )
            for c in chains
        ]
        for thread in threads:
            thread.start()
        try:
            time.sleep(LOAD_BEFORE_S)
            began = time.monotonic()
            made = _notary("backup", str(backup), "--data-dir", str(live))
            ended = time.monotonic()
            refused = _notary("restore", str(backup), "--data-dir", str(live), "--force")
            time.sleep(LOAD_AFTER_S)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        assert made.returncode == 0, made.stdout + made.stderr
        assert refused.returncode == 2 and "in use" in refused.stderr, refused.stderr
        assert not writes.unexpected, writes.unexpected[:5]
        credentials = ledger.stack.rpc_credentials()
        assert credentials is not None
    digest = re.search(r"manifest sha256 ([0-9a-f]{64})", made.stdout)
    assert digest, made.stdout

    before = [w for w in writes.acked if w.answered < began]
    during = [w.answered - w.sent for w in writes.acked if w.sent < ended and w.answered > began]
    baseline = [w.answered - w.sent for w in writes.acked if w.answered < began]
    assert before and during, "writes must be acknowledged before and during the backup"
    print(
        f"\nbackup of a live stack in {ended - began:.2f} s (the CLI process, imports "
        f"included); writes acknowledged: {len(before)} before it, {len(during)} during it, "
        f"{len(writes.acked)} in all; longest write latency during it "
        f"{max(during) * 1000:.0f} ms, before it {max(baseline) * 1000:.0f} ms\n{made.stdout}"
    )

    restored = _notary(
        "restore", str(backup), "--data-dir", str(fresh), "--manifest-sha256", digest.group(1)
    )
    assert restored.returncode == 0, restored.stdout + restored.stderr
    for name in ("api-key", "callback-secret", "rpc-credentials"):
        assert stat.S_IMODE((fresh / name).stat().st_mode) == 0o600
    with AuditStore(f"sqlite:///{fresh / 'audit.sqlite'}") as audit_store:
        assert audit_store.schema_revision() == revision

    with LedgerProcesses(fresh, anchor=True) as again:  # locked: rpc-credentials came back
        assert again.stack.rpc_credentials() == credentials
        assert again.api_key == ledger.api_key
        http = httpx.Client(timeout=30.0, headers={"user-key": again.api_key})
        with http:
            missing_in_api = [
                w.entry.hash().hex()
                for w in before
                if http.get(
                    f"{again.api_url}/chains/{w.entry.chain_id.hex()}/entries/{w.entry.hash().hex()}"
                ).status_code
                != 200
            ]
            assert not missing_in_api, f"{len(missing_in_api)} acknowledged writes lost"
            new = Entry(chains[0], (b"after restore",), b"new")
            assert _post(http, f"{again.api_url}/chains/{chains[0].hex()}/entries", new, writes)
        with LedgerAudit(_audit_url(again.node_url, credentials)) as audit:
            wanted = {w.entry.hash() for w in before} | {new.hash()}
            missing = audit.wait_for(wanted, timeout_s=120)
            assert not missing, f"{len(missing)} acknowledged writes not in the restored blocks"
            assert not audit.duplicates(), audit.describe_duplicates()
            print(
                f"restored stack: {len(wanted)} writes found in blocks up to height "
                f"{audit.tip}, every block linked"
            )
        unauthorized = httpx.post(
            again.node_url, json={"jsonrpc": "2.0", "id": 1, "method": "heights"}
        )
        assert unauthorized.status_code == 401
        wait_until(lambda: again.alive("anchor"), 5, 0.1, what="the anchoring service running")
