"""The ``audit_report`` flow and ``notary report``: files, artifacts and exit codes.

Known rows (``tests.tasks.test_report.build_known``) on SQLite and PostgreSQL under the
Prefect test harness, and one run against the real bundled stack, where the sampled
receipts are re-verified against the node and a tampered one is flagged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import typer
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from connectors.audit import AuditStore
from flows.audit_report import audit_report, slug
from flows.cli.commands.report import register
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger.core.clock import ManualClock
from tests.harness.ports import free_port
from tests.harness.postgres import PG_URL, fresh_schema
from tests.tasks.test_report import START_S, build_known, tamper_receipt

pytestmark = pytest.mark.usefixtures("prefect_harness")


def closed_node_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v2"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def known_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PipelineSettings]:
    """Settings whose audit store holds the known rows; the node is not running."""
    if request.param == "sqlite":
        yield _known_settings(tmp_path, f"sqlite:///{tmp_path / 'audit.sqlite'}", None)
        return
    request.getfixturevalue("postgres_url")
    with fresh_schema(prefix="test_flow_report") as schema:
        yield _known_settings(tmp_path, PG_URL, schema)


def _known_settings(tmp_path: Path, url: str, schema: str | None) -> PipelineSettings:
    with AuditStore(url, clock=ManualClock(START_S), schema=schema) as store:
        build_known(store, store._clock)  # type: ignore[arg-type]
    store_url = url if schema is None else f"{url}?options=-csearch_path%3D{schema}"
    return PipelineSettings(data_dir=tmp_path, audit_db_url=store_url, node_url=closed_node_url())


def artifacts_of(state: Any) -> dict[str, Any]:
    with get_client(sync_client=True) as client:
        runs = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        return {str(a.key): a for a in client.read_artifacts(flow_run_filter=runs)}


def test_flow_writes_files_and_artifacts_matching_the_store(
    known_settings: PipelineSettings, tmp_path: Path
) -> None:
    state = audit_report(
        "c1", out_dir=str(tmp_path / "out"), settings=known_settings, sample=0, return_state=True
    )
    summary = state.result()
    with AuditStore(known_settings.audit_url) as store:
        assert summary["stages"] == store.runs.summary("c1")
        assert summary["receipts_stored"] == store.runs.receipt_count("c1") == 2
        assert summary["documents"] == len(store.proofs.records(collection="c1")) == 5
        run = store.runs.get(summary["run_id"])
    assert run is not None
    assert run["flow"] == "audit_report" and run["status"] == "completed"
    assert run["counts"]["stages"] == summary["stages"]
    assert summary["failed"] == 1 and summary["overdue"] == 3  # c, e and b: created in 2023
    docs = pd.read_csv(summary["files"]["documents"])
    assert len(docs) == 5 and docs["stage"].value_counts().to_dict() == {
        s: n for s, n in summary["stages"].items() if n
    }
    assert json.loads(Path(summary["files"]["summary"]).read_text())["stages"] == summary["stages"]
    assert Path(summary["files"]["html"]).read_text().startswith("<!DOCTYPE html>")

    artifacts = artifacts_of(state)
    assert set(artifacts) == {"audit-report-c1", "audit-report-c1-stages"}
    table = artifacts["audit-report-c1-stages"].data
    rows = json.loads(table) if isinstance(table, str) else table
    assert {r["stage"]: r["documents"] for r in rows} == summary["stages"]
    assert "| overdue | 3 |" in artifacts["audit-report-c1"].data


def test_unreachable_node_is_reported_not_fatal(
    known_settings: PipelineSettings, tmp_path: Path
) -> None:
    summary = audit_report(None, out_dir=str(tmp_path / "all"), settings=known_settings, sample=5)
    assert summary["documents"] == 6 and summary["collection"] is None
    assert (summary["reverified"], summary["reverify_unavailable"]) == (2, 2)
    assert Path(summary["files"]["reverification"]).exists()


def test_default_out_dir_and_slug(known_settings: PipelineSettings) -> None:
    summary = audit_report("c2", settings=known_settings, sample=0, thresholds={"published": None})
    out = Path(summary["out_dir"])
    assert out.parent == known_settings.data_dir / "reports" and out.name.startswith("c2-")
    assert summary["overdue"] == 0 and summary["stages"]["published"] == 1
    assert slug("Invoices 2024/Q1") == "invoices-2024-q1" and slug(None) == "all"


# -- notary report ------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    for name in ("PREFECT_HOME", "PREFECT_LOGGING_LEVEL", "NOTARY_AUDIT_DB_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))  # restored afterwards
    monkeypatch.setenv("NOTARY_NODE_URL", closed_node_url())
    return CliRunner()


def notary() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """The notary command line (test stand-in)."""

    register(app)
    return app


def test_report_command_exit_codes(cli: CliRunner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with AuditStore(f"sqlite:///{data / 'audit.sqlite'}", clock=ManualClock(START_S)) as store:
        build_known(store, store._clock)  # type: ignore[arg-type]
    base = ["report", "--data-dir", str(data), "--sample", "0"]

    found = cli.invoke(notary(), [*base, "--collection", "c1", "--out", str(tmp_path / "c1")])
    assert found.exit_code == 1, found.output
    assert "overdue" in found.output and (tmp_path / "c1" / "report.html").exists()
    clean = cli.invoke(notary(), [*base, "--collection", "c2", "--max-wait", "published=none"])
    assert clean.exit_code == 0, clean.output
    recent = cli.invoke(notary(), [*base, "--collection", "c1", "--since=-1d"])
    assert recent.exit_code == 0, recent.output  # the known rows were queued in 2023
    unreachable = cli.invoke(notary(), ["report", "--data-dir", str(data), "--sample", "3"])
    assert unreachable.exit_code == 3, unreachable.output
    for bad in (
        ["--since", "last week"],
        ["--max-wait", "anchor=5"],
        ["--max-wait", "ledger=soon"],
    ):
        usage = cli.invoke(notary(), [*base, *bad])
        assert usage.exit_code == 2, (bad, usage.output)


def test_report_command_help_and_bad_store(cli: CliRunner, tmp_path: Path) -> None:
    shown = cli.invoke(notary(), ["report", "--help"])
    assert shown.exit_code == 0
    for option in (
        "--collection",
        "--since",
        "--until",
        "--out",
        "--data-dir",
        "--sample",
        "--max-wait",
    ):
        assert option in shown.output
    strange = tmp_path / "strange"
    strange.mkdir()
    engine = create_engine(f"sqlite:///{strange / 'audit.sqlite'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE documents (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    refused = cli.invoke(notary(), ["report", "--data-dir", str(strange), "--sample", "0"])
    assert refused.exit_code == 2, refused.output


# -- with the real stack ------------------------------------------------------------------


@pytest.mark.e2e
def test_receipts_of_a_real_run_verify_again_and_tampering_is_flagged(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    """One entry (and receipt) per document, so one receipt can be tampered alone."""
    pipeline_settings = pipeline_settings.model_copy(update={"publish_mode": "entry"})
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(4):
        (folder / f"doc-{i}.txt").write_text(f"audit report document {i}\n")
    notarize_folder(str(folder), "report-e2e", pipeline_settings, True)

    summary = audit_report(
        "report-e2e", settings=pipeline_settings, sample=10, out_dir=str(tmp_path / "r1")
    )
    with AuditStore(pipeline_settings.audit_url) as store:
        assert summary["stages"] == store.runs.summary("report-e2e")
        assert (summary["reverified"], summary["reverify_ok"]) == (4, 4)
        victim = store.proofs.records(collection="report-e2e")[1].notarization.id
        tamper_receipt(store, victim, column_too=True)

    again = audit_report(
        "report-e2e", settings=pipeline_settings, sample=10, out_dir=str(tmp_path / "r2")
    )
    assert (again["reverify_ok"], again["reverify_rejected"]) == (3, 1)
    problems = pd.read_csv(again["files"]["problems"])
    assert problems.loc[problems["problem"] == "receipt_rejected", "notarization_id"].tolist() == [
        victim
    ]


@pytest.mark.e2e
def test_an_aggregated_run_reports_its_batch_and_each_document(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(4):
        (folder / f"doc-{i}.txt").write_text(f"aggregated report document {i}\n")
    notarize_folder(str(folder), "report-batch", pipeline_settings, True)

    summary = audit_report(
        "report-batch", settings=pipeline_settings, sample=10, out_dir=str(tmp_path / "r")
    )
    assert (summary["documents"], summary["batches"]) == (4, 1)
    assert summary["stages"]["ledger"] == 4 and summary["receipts_stored"] == 4
    assert (summary["reverified"], summary["reverify_ok"]) == (1, 1)  # one receipt, stored once
    batches = pd.read_csv(summary["files"]["batches"])
    assert batches[["size", "members", "stage"]].values.tolist() == [[4, 4, "ledger"]]
    documents = pd.read_csv(summary["files"]["documents"])
    assert sorted(documents["path"]) == [f"doc-{i}.txt" for i in range(4)]
    assert set(documents["notarization_id"]) == set(batches["batch_id"])
    assert set(documents["entry_hash"]) == set(batches["entry_hash"])
    assert "<h2>Batches</h2>" in Path(summary["files"]["html"]).read_text()


def test_a_run_that_died_is_closed_by_the_report_and_shown_in_it(
    known_settings: PipelineSettings, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from sqlalchemy import update

    from connectors.audit.sql import runs_table

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    with AuditStore(known_settings.audit_url) as store:
        dead = store.runs.start("notarize_folder", parameters={"folder": "/drop"})
        with store.engine.begin() as conn:  # as the killed process recorded it
            conn.execute(
                update(runs_table).where(runs_table.c.id == dead).values(pid=int(gone.stdout))
            )
    summary = audit_report("c1", out_dir=str(tmp_path / "out"), settings=known_settings, sample=0)
    (crashed,) = summary["runs_crashed"]
    assert crashed["id"] == dead and crashed["flow"] == "notarize_folder"
    assert crashed["reason"] == f"process {int(gone.stdout)} on {crashed['host']} is gone"
    with AuditStore(known_settings.audit_url) as store:
        assert store.runs.get(dead)["status"] == "crashed"  # type: ignore[index]
    html = Path(summary["files"]["html"]).read_text()
    assert "Runs that crashed" in html and f"process {int(gone.stdout)} on" in html
    saved = json.loads(Path(summary["files"]["summary"]).read_text())
    assert saved["runs_crashed"][0]["id"] == dead
