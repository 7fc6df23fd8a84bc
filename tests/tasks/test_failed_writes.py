"""Writes the publishing API gave up reach the audit store and the report, with the reason.

A real publishing API (its app on loopback, the twin ledger, a manual clock, the worker run
by hand) and the pipeline's own client and audit store.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.audit import AuditStore, DocumentIn, NewNotarization
from connectors.publishing import PublishingClient, WriteFailure, write_failure
from ledger.api.accounts import create_account
from ledger.api.app import create_app, services_of
from ledger.api.outbox.gateway import RpcFailure
from ledger.api.outbox.worker import LedgerWorker
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.settings import ApiSettings
from ledger.core.clock import ManualClock
from tasks import report as rpt
from tasks import report_output as out
from tasks.failed_writes import check_failed_writes, failure_message, sweep_failed_writes
from tests.harness.ports import free_port
from tests.harness.servers import AppServer

BAD_SIGNATURE = RpcFailure(-32602, "Invalid params", "invalid commit signature: does not verify")
REASON = (
    "refused by the ledger: commit: -32602 Invalid params "
    "(invalid commit signature: does not verify)"
)


@dataclass
class Setup:
    client: PublishingClient
    ledger: InMemoryLedger
    worker: LedgerWorker
    store: AuditStore
    chain_id: str
    ids: dict[str, int]  # entry hash -> notarization id


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    settings = ApiSettings(
        data_dir=tmp_path,
        ec_address="EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r",
        worker_enabled=False,
        callback_secret="s",
    )
    ledger = InMemoryLedger()
    app = create_app(settings, gateway=ledger, clock=ManualClock(1_700_000_000.0))
    with AppServer(app) as served:
        svc = services_of(app)
        with svc.db.write() as session:
            key = create_account(session, "pipeline")[1]
        assert svc.worker is not None
        client = PublishingClient(f"{served.url}/v1", key)
        store = AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite'}")
        chain_id = client.create_chain([b"collection"], b"")
        ids: dict[str, int] = {}
        for name in ("a.txt", "b.txt", "c.txt"):
            sha = name.encode().hex().ljust(64, "0")
            entry_hash = client.create_entry(chain_id, [name.encode()], b"doc")
            (doc_id,) = store.notarizations.upsert_documents(
                "folder:/docs", [DocumentIn(name, sha, 3)]
            )
            (nid,) = store.notarizations.add([NewNotarization(doc_id, "docs", chain_id, sha)])
            store.notarizations.mark_published({nid: entry_hash})
            ids[entry_hash] = nid
        try:
            yield Setup(client, ledger, svc.worker, store, chain_id, ids)
        finally:
            client.close()
            store.close()


def test_a_given_up_write_is_failed_in_the_audit_store_and_listed_by_the_report(
    setup: Setup, tmp_path: Path
) -> None:
    refused = next(iter(setup.ids))
    setup.ledger.refuse_commit[refused] = BAD_SIGNATURE
    setup.worker.run_once()

    assert setup.client.failed_entries(setup.chain_id) == [refused]
    entry = setup.client.get_entry(setup.chain_id, refused)
    assert entry is not None
    failure = write_failure(entry)
    assert failure == WriteFailure(REASON, "2023-11-14T22:13:20.000Z", 1)

    outcome = sweep_failed_writes(setup.store, setup.client)
    assert (outcome.marked, outcome.chains_checked) == (1, 1)
    expected = (
        f"the publishing API gave the write up: {REASON} (1 attempt, failed at "
        "2023-11-14T22:13:20.000Z)"
    )
    assert outcome.errors == [expected] and failure_message(failure) == expected
    rows = {
        r.entry_hash: r
        for r in setup.store.notarizations.pending(stage_from="published", stage_below="ledger")
    }
    assert set(rows) == set(setup.ids) - {refused}  # the others still wait
    events = setup.store.notarizations.events(setup.ids[refused])
    assert events[-1].stage == "failed" and events[-1].details == {
        "error": expected,
        "retryable": False,
    }
    assert sweep_failed_writes(setup.store, setup.client).marked == 0  # not waiting any more

    data = rpt.load_report_data(setup.store)
    report = rpt.build_report(data, now=datetime.now(UTC))
    paths = out.write_report(report, tmp_path / "report")
    with paths["problems"].open(newline="") as handle:
        problems = list(csv.DictReader(handle))
    assert [(p["notarization_id"], p["problem"], p["detail"]) for p in problems] == [
        (str(setup.ids[refused]), "failed", expected)
    ]
    html = paths["html"].read_text()
    assert "invalid commit signature: does not verify" in html
    assert report.summary["failed"] == 1


def test_writes_not_given_up_are_left_alone(setup: Setup) -> None:
    setup.worker.run_once()  # every write revealed, none failed
    outcome = sweep_failed_writes(setup.store, setup.client)
    assert (outcome.marked, outcome.errors) == (0, [])
    waiting = setup.store.notarizations.pending(stage_from="published", stage_below="ledger")
    assert len(waiting) == 3


def test_an_unreachable_api_postpones_the_check(setup: Setup) -> None:
    with PublishingClient(f"http://127.0.0.1:{free_port()}/v1", "k", timeout_s=1) as gone:
        outcome = check_failed_writes(setup.store, gone)
    assert outcome.marked == 0
    assert outcome.errors and outcome.errors[0].startswith("failed-write check skipped:")
