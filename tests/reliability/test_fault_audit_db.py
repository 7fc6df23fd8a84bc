"""Fault: the audit store's PostgreSQL connections are dropped while a notarization runs.

A PostgreSQL restart (or a failover, or an idle-connection reaper) ends every session of
the audit store. The test does that to the machine's shared server without restarting it:
``pg_terminate_backend`` on every backend of the run's own database (created fresh for the
test), again and again while the run goes on, so both idle pooled connections and
statements under way are cut.

How the pipeline copes: the audit store's engine checks each pooled connection before use
(``pool_pre_ping``), so connections killed while idle are replaced without an error; a
statement whose connection dies under it fails with ``OperationalError``, and the Prefect
task around it (record, publish, ledger sweep) retries. A failure outside a task ends the
run; the next run finishes its rows, since every step is idempotent by document hash.

Proven: the run or its rerun completes; every file has exactly one notarization at the
``ledger`` stage with a verified receipt, and one entry on the chain.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from connectors.audit import AuditStore
from connectors.audit.models import AUDIT_METADATA
from connectors.audit.proofs import Proofs
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from tests.harness.postgres import conninfo

from .fault_stack import assert_collection_on_ledger, make_files

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

FILES = 40


#: When to drop every connection: one "restart" per phase of the run, in this order.
PHASES: tuple[tuple[str, Callable[[dict[str, int]], bool]], ...] = (
    ("recording", lambda c: sum(c.values()) > 0),
    ("publishing", lambda c: c.get("published", 0) + c.get("multi_az", 0) > 0),
    # The first receipts are stored: the sweep's stage change comes next.
    ("ledger sweep", lambda c: c.get("receipts", 0) > 0),
)


class BackendKiller(threading.Thread):
    """Terminate every backend of ``database`` once per phase, when the phase begins.

    A phase begins when its predicate holds for the notarization counts per stage and the
    receipt count (read on the killer's own connection every 20 ms). Attributes: ``done`` (phases hit, with the
    backends ended and how many of them were inside a transaction or statement).
    """

    def __init__(self, url: str, database: str) -> None:
        super().__init__(name="pg-backend-killer", daemon=True)
        self.url, self.database = url, database
        self.done: list[tuple[str, int, int]] = []
        self.error: BaseException | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(conninfo(self.url), autocommit=True) as conn:
                for name, begun in PHASES:
                    while not begun(self._counts(conn)):
                        if self._stop_event.wait(0.02):
                            return
                    rows = conn.execute(
                        "SELECT state, pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = %s AND pid <> pg_backend_pid()",
                        (self.database,),
                    ).fetchall()
                    busy = sum(1 for state, ok in rows if ok and state != "idle")
                    self.done.append((name, sum(1 for _, ok in rows if ok), busy))
        except BaseException as exc:  # reported by the test thread
            self.error = exc

    @staticmethod
    def _counts(conn: Any) -> dict[str, int]:
        """Notarizations per stage, and stored receipts under ``"receipts"``."""
        try:
            rows = conn.execute(
                "SELECT stage, count(*) FROM notarizations GROUP BY stage"
                " UNION ALL SELECT 'receipts', count(*) FROM receipts"
            ).fetchall()
        except Exception:  # noqa: BLE001 - the tables are made by the run's migration
            return {}
        return {stage: int(count) for stage, count in rows}

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


def _document_duplicates(url: str) -> int:
    """Document rows beyond one per (source, path, sha256)."""
    documents = AUDIT_METADATA.tables["documents"]
    with AuditStore(url, create_tables=False) as store, store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(documents)).scalar_one()
        key = select(documents.c.source, documents.c.path, documents.c.sha256).distinct()
        distinct = conn.execute(select(func.count()).select_from(key.subquery())).scalar_one()
    return int(total) - int(distinct)


@pytest.mark.postgres
def test_audit_store_connections_dropped_during_a_run_lose_and_duplicate_nothing(
    tmp_path: Path, pipeline_settings: PipelineSettings, postgres_database: str
) -> None:
    audit_db_url = postgres_database
    folder = tmp_path / "docs"
    files = make_files(folder, FILES, tag="audit-db")
    collection = "audit-db-drop"
    # One entry per document in windows of 10: each phase (recording, publishing, the
    # ledger sweep's writes) lasts long enough for the killer to find it under way; one
    # aggregated batch of 40 is recorded, published and swept in a few statements.
    settings = pipeline_settings.model_copy(
        update={"audit_db_url": audit_db_url, "publish_mode": "entry", "batch_size": 10}
    )
    AuditStore(audit_db_url).close()  # migrate first: the fault is mid-run, not mid-migration

    database = make_url(audit_db_url).database or ""
    killer = BackendKiller(audit_db_url, database)
    killer.start()
    outcomes: list[str] = []
    summary: dict[str, Any] | None = None
    try:
        # Each phase's restart may end a run (a statement cut outside any retried task):
        # the next run finishes its rows. At most one failed run per phase.
        for _ in range(len(PHASES) + 1):
            try:
                summary = notarize_folder(str(folder), collection, settings, True)
            except Exception as exc:  # noqa: BLE001 - recorded; the rerun must finish
                outcomes.append(f"failed ({type(exc).__name__})")
            else:
                outcomes.append("completed")
                break
    finally:
        killer.stop()
    assert killer.error is None, killer.error
    assert [name for name, _, _ in killer.done] == [name for name, _ in PHASES]
    assert all(killed > 0 for _, killed, _ in killer.done), killer.done
    hits = ", ".join(f"{name}: {k} ({b} busy)" for name, k, b in killer.done)
    print(f"\nconnections dropped per phase: {hits}; runs: {', '.join(outcomes)}")
    assert summary is not None, outcomes
    assert summary["documents_waiting"] == 0
    with AuditStore(audit_db_url, create_tables=False) as store:
        unproven = [row.path for row in store.proofs.missing_receipts(collection=collection)]
    assert unproven == [], f"at stage ledger without a stored receipt: {unproven}"
    assert_collection_on_ledger(settings, collection, files)
    assert _document_duplicates(audit_db_url) == 0


@pytest.mark.parametrize("written", [False, True], ids=["rolled-back", "committed"])
def test_connection_lost_at_the_ledger_stage_write_leaves_no_row_unproven(
    tmp_path: Path,
    pipeline_settings: PipelineSettings,
    monkeypatch: pytest.MonkeyPatch,
    written: bool,
) -> None:
    """The narrowest window of the fault above, made certain: the ledger sweep writes the
    receipts and the stage change of a page in one transaction (``record_receipts``), and
    the first one fails with the ``OperationalError`` a dropped connection raises (on
    SQLite here, so it runs without PostgreSQL), before its commit (nothing written) or
    after it (written, the acknowledgement lost). The retried sweep, or a rerun, must leave
    every row at ``ledger`` with its receipt. (When the two were separate writes, with the
    stage written first, rows were left at ``ledger`` with no receipt, and no sweep looked
    at them again: the PostgreSQL test above found it.)"""
    folder = tmp_path / "docs"
    files = make_files(folder, 12, tag=f"between-{written}")
    collection = f"audit-db-between-{written}"
    calls: list[str] = []
    original = Proofs.record_receipts

    def failing_first(self: Proofs, *args: Any, **kwargs: Any) -> Any:
        calls.append("record_receipts")
        if len(calls) == 1:
            if written:
                original(self, *args, **kwargs)
            raise OperationalError("COMMIT", {}, Exception("server closed the connection"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Proofs, "record_receipts", failing_first)
    outcomes: list[str] = []
    for _ in range(2):
        try:
            notarize_folder(str(folder), collection, pipeline_settings, True)
        except Exception as exc:  # noqa: BLE001 - recorded; the rerun must finish
            outcomes.append(f"failed ({type(exc).__name__})")
        else:
            outcomes.append("completed")
            break
    # rolled back: the write was made again; committed: nothing was left to write
    assert len(calls) >= (1 if written else 2), calls
    with AuditStore(pipeline_settings.audit_url) as store:
        unproven = [row.path for row in store.proofs.missing_receipts(collection=collection)]
        assert (
            store.runs.summary(collection)["ledger"] + store.runs.summary(collection)["anchor"]
            == 12
        )
    assert unproven == [], f"at stage ledger without a stored receipt: {unproven} ({outcomes})"
    assert_collection_on_ledger(pipeline_settings, collection, files)
