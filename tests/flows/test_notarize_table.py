"""End to end: table rows notarized through the real node, wallet and publishing API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import typer
from prefect import flow
from typer.testing import CliRunner

from connectors.audit import AuditStore
from connectors.node import NodeClient
from connectors.table_source import TableSource
from connectors.watermark_store import WatermarkStore
from flows.cli.commands.table import register
from flows.notarize_table import notarize_table
from flows.pipeline import Recorder
from flows.settings import PipelineSettings
from ledger.core.receipt import Receipt, verify_receipt
from ledger.stack import Stack
from tasks.documents import notarization_entry
from tasks.row_hashing import hash_row
from tests.harness.postgres import PG_URL, fresh_schema

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


class Source:
    """A source database with an ``orders`` table (in a fresh schema on PostgreSQL)."""

    def __init__(self, url: str, schema: str | None) -> None:
        self.url, self.schema = url, schema
        self.engine = sa.create_engine(url)
        self.table = sa.Table(
            "orders",
            sa.MetaData(schema=schema),
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("customer", sa.String(50), nullable=False),
            sa.Column("amount", sa.Numeric(12, 2), nullable=False),
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        )
        self.table.create(self.engine)
        self.name = f"{schema}.orders" if schema else "orders"

    def add(self, ids: range, *, at: datetime = T0) -> None:
        rows = [
            {"id": i, "customer": f"c{i % 3}", "amount": Decimal(f"{i}.25"), "updated_at": at}
            for i in ids
        ]
        with self.engine.begin() as conn:
            conn.execute(self.table.insert(), rows)

    def change(self, ids: list[int], *, at: datetime) -> None:
        with self.engine.begin() as conn:
            where = self.table.c.id.in_(ids)
            conn.execute(self.table.update().where(where).values(amount=99, updated_at=at))

    def expected_docs(self) -> dict[str, str]:
        """Row key -> SHA-256 of the canonical row, as the table holds it now."""
        with TableSource.connect(self.url, table=self.name, watermark="updated_at") as source:
            docs = [hash_row(k, r) for page in source.pages(None, limit=100) for k, r in page.rows]
        return {d.path: d.sha256 for d in docs}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Source]:
    if request.param == "sqlite":
        src = Source(f"sqlite:///{tmp_path / 'shop.db'}", None)
        yield src
        src.engine.dispose()
        return
    request.getfixturevalue("postgres_url")
    with fresh_schema(prefix="test_notarize_table", create=True) as schema:
        src = Source(PG_URL, schema)
        try:
            yield src
        finally:
            src.engine.dispose()


@pytest.fixture
def sqlite_source(tmp_path: Path) -> Iterator[Source]:
    src = Source(f"sqlite:///{tmp_path / 'shop.db'}", None)
    yield src
    src.engine.dispose()


def run(src: Source, settings: PipelineSettings, collection: str) -> dict[str, Any]:
    return notarize_table(
        src.url, table=src.name, watermark="updated_at", collection=collection, settings=settings
    )


def assert_verified_in_ledger(settings: PipelineSettings, collection: str, src: Source) -> None:
    """Every current row of the table is notarized once, at ``ledger``, with a verified receipt
    (its entry: a batch's, or its own, as the collection's mode made it)."""
    node = NodeClient(settings.node_url)
    with AuditStore(settings.audit_url) as store:
        proofs = store.proofs.records(collection=collection)
        record = store.collections.find(collection)
    assert record is not None
    chain_id = record.chain_id
    latest = {(p.notarization.path, p.notarization.sha256) for p in proofs}
    assert set(src.expected_docs().items()) <= latest
    assert len({p.notarization.sha256 for p in proofs}) == len(proofs)
    for proof in proofs:
        row = proof.notarization
        assert row.stage == "ledger" and row.chain_id == chain_id
        entry = notarization_entry(row, collection_key=record.key)
        assert row.entry_hash == entry.entry_hash
        assert proof.receipt is not None
        dblock = node.dblock_by_height(row.dblock_height)
        trusted = bytes.fromhex(dblock["dblock"]["keymr"])
        verify_receipt(Receipt.from_json(proof.receipt.raw), trusted_directory_block_keymr=trusted)
    node.close()


def test_rows_reach_ledger_and_only_new_or_changed_rows_are_notarized_again(
    source: Source, pipeline_settings: PipelineSettings
) -> None:
    source.add(range(10))
    first = run(source, pipeline_settings, "orders")  # batch_size 7: two pages

    assert first["documents_seen"] == 10 and first["published"] == 10
    assert first["documents_with_receipt"] == 10 and first["documents_waiting"] == 0
    assert first["source"].startswith("table:") and first["watermark"] is not None
    assert_verified_in_ledger(pipeline_settings, "orders", source)

    again = run(source, pipeline_settings, "orders")
    assert again["documents_seen"] == 0 and again["queued"] == 0 and again["published"] == 0

    later = T0 + timedelta(minutes=5)
    source.change([2, 8], at=later)
    source.add(range(10, 11), at=later)
    changed = run(source, pipeline_settings, "orders")
    assert changed["documents_seen"] == 3 and changed["published"] == 3
    # The run's 3 rows, not the collection's 13 (those are a labelled total).
    assert changed["documents_with_receipt"] == 3 and changed["documents_waiting"] == 0
    assert changed["documents_in_ledger"] == 3 and changed["skipped_known"] == 0
    assert changed["collection_totals"]["with_receipt"] == 13
    assert_verified_in_ledger(pipeline_settings, "orders", source)
    with AuditStore(pipeline_settings.audit_url) as store:
        paths = [p.notarization.path for p in store.proofs.records(collection="orders")]
    assert paths.count("id=2") == 2 and paths.count("id=8") == 2 and paths.count("id=10") == 1


class Killed(RuntimeError):
    """Stands for the process dying at a chosen point of the run."""


@pytest.mark.parametrize("kill_point", ["after_record", "after_watermark"])
def test_killed_run_is_finished_by_the_rerun_without_duplicates(
    sqlite_source: Source,
    pipeline_settings: PipelineSettings,
    monkeypatch: pytest.MonkeyPatch,
    kill_point: str,
) -> None:
    """One entry per row (entry mode): a page's rows are queued as it is recorded."""
    pipeline_settings = pipeline_settings.model_copy(update={"publish_mode": "entry"})
    src = sqlite_source
    src.add(range(16))  # three pages of at most 7 rows
    if kill_point == "after_record":
        real = Recorder.add

        def record_then_die(self: Recorder, docs: Any) -> None:
            real(self, docs)
            raise Killed("killed after the first batch was recorded")

        monkeypatch.setattr(Recorder, "add", record_then_die)
    else:
        real_save = WatermarkStore.save

        def save_then_die(self: WatermarkStore, *args: Any, **kwargs: Any) -> None:
            real_save(self, *args, **kwargs)
            raise Killed("killed after the first batch's watermark was saved")

        monkeypatch.setattr(WatermarkStore, "save", save_then_die)

    with pytest.raises(Killed):
        run(src, pipeline_settings, "killed")
    monkeypatch.undo()

    with AuditStore(pipeline_settings.audit_url) as store:
        counts = store.runs.summary("killed")  # the first page's 7, published as it was recorded
        assert counts["multi_az"] + counts["published"] + counts["pending"] == 7
        marks = WatermarkStore(store.engine)
        source_name = store.proofs.records(collection="killed")[0].notarization.source
        saved = marks.load(source_name, "killed", watermark_column="updated_at", key_columns=["id"])
    assert (saved is None) == (kill_point == "after_record")

    rerun = run(src, pipeline_settings, "killed")
    assert rerun["documents_seen"] == (16 if kill_point == "after_record" else 9)
    assert rerun["skipped_known"] == (7 if kill_point == "after_record" else 0)
    left = 0  # the killed run published its 7 as it recorded them: nothing to finish
    if kill_point == "after_record":  # re-read: they are this run's documents, skipped
        assert (rerun["queued"], rerun["published"]) == (9, 9)
        assert rerun["documents_with_receipt"] == 16
    else:  # not re-read: the killed run had published them; nothing counted twice
        assert (rerun["queued"], rerun["published"]) == (9, 9)
        assert rerun["documents_with_receipt"] == 9
    assert rerun["published_for_other_runs"] == left and rerun["publish_failed"] == 0
    assert rerun["documents_waiting"] == 0
    assert rerun["collection_totals"] == {
        "in_ledger": 16,
        "with_receipt": 16,
        "waiting": 0,
        "failed": 0,
    }
    assert_verified_in_ledger(pipeline_settings, "killed", src)
    with AuditStore(pipeline_settings.audit_url) as store:
        proofs = store.proofs.records(collection="killed")
        with store.engine.connect() as conn:
            documents = conn.execute(sa.text("SELECT count(*) FROM documents")).scalar_one()
            runs = conn.execute(sa.text("SELECT status FROM runs ORDER BY id")).scalars().all()
    assert sorted(p.notarization.path for p in proofs) == sorted(f"id={i}" for i in range(16))
    assert documents == 16 and runs == ["failed", "completed"]


def test_aggregated_rows_not_yet_batched_are_read_again_after_a_kill(
    sqlite_source: Source, pipeline_settings: PipelineSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 7, batches of 10: killed after the second page, the first batch (10 rows) is
    recorded and published but 4 rows wait for the next one, so no position is saved; the
    rerun reads every row again, skips the 10 and aggregates the other 6."""
    settings = pipeline_settings.model_copy(update={"aggregate_batch_size": 10})
    src = sqlite_source
    src.add(range(16))
    real, calls = Recorder.add, {"n": 0}

    def record_then_die(self: Recorder, docs: Any) -> None:
        real(self, docs)
        calls["n"] += 1
        if calls["n"] == 2:
            raise Killed("killed after the second page was recorded")

    monkeypatch.setattr(Recorder, "add", record_then_die)
    with pytest.raises(Killed):
        run(src, settings, "killed-aggregate")
    monkeypatch.undo()
    with AuditStore(settings.audit_url) as store:
        assert [(b.size, b.stage) for b in store.batches.read(collection="killed-aggregate")] == [
            (10, "multi_az")
        ]
        source_name = store.proofs.records(collection="killed-aggregate")[0].notarization.source
        marks = WatermarkStore(store.engine)
        columns = {"watermark_column": "updated_at", "key_columns": ["id"]}
        assert marks.load(source_name, "killed-aggregate", **columns) is None

    rerun = run(src, settings, "killed-aggregate")
    assert (rerun["documents_seen"], rerun["skipped_known"], rerun["queued"]) == (16, 10, 6)
    assert rerun["published"] == 6 and rerun["documents_with_receipt"] == 16
    assert_verified_in_ledger(settings, "killed-aggregate", src)
    with AuditStore(settings.audit_url) as store:
        assert [b.size for b in store.batches.read(collection="killed-aggregate")] == [10, 6]
        assert marks.load(source_name, "killed-aggregate", **columns) is not None


# -- the command line ------------------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """notary (test copy)"""

    register(app)
    return app


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli(), ["table", *args])


def test_cli_notarizes_a_table_and_exits_zero(
    sqlite_source: Source, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = stack.settings
    monkeypatch.setenv("NOTARY_API_URL", s.api_url)
    monkeypatch.setenv("NOTARY_NODE_URL", s.node_url)
    monkeypatch.setenv("NOTARY_LEDGER_WAIT_S", "60")
    sqlite_source.add(range(4))
    args = [sqlite_source.url, "--table", "orders", "--watermark", "updated_at", "--key", "id"]
    result = invoke([*args, "--collection", "cli", "--data-dir", str(s.data_dir)])
    assert result.exit_code == 0, result.output
    assert "rows read (new or changed)" in result.output
    # Aggregate mode: the new chain (1 + 10 EC) and one batch entry for the 4 rows (1 EC).
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "│ ledger entries written │ 2 │" in lines, result.output
    assert "│ entry credits spent (EC) │ 12 │" in lines, result.output
    with AuditStore(PipelineSettings(data_dir=s.data_dir).audit_url) as store:
        assert store.runs.summary("cli")["ledger"] == 4 and store.runs.receipt_count("cli") == 4

    again = invoke([*args, "--collection", "cli", "--data-dir", str(s.data_dir), "--no-wait"])
    assert again.exit_code == 0 and "No new or changed rows" in again.output
    assert "│ ledger entries written │ 0 │" in [
        " ".join(ln.split()) for ln in again.output.splitlines()
    ]


def test_cli_usage_errors_exit_two(sqlite_source: Source, tmp_path: Path) -> None:
    (tmp_path / "api-key").write_text("key")
    data = ["--data-dir", str(tmp_path)]
    url = sqlite_source.url
    cases = [
        (
            [url, "--table", "orders", "--watermark", "nope", *data],
            "unknown watermark column 'nope'",
        ),
        ([url, "--table", "missing", *data], "no table 'missing'"),
        ([url, *data], "exactly one of --table and --query"),
        (["not a url", "--table", "orders", *data], "not an SQLAlchemy URL"),
        ([url, "--query", "SELECT id FROM orders", *data], "give the key columns"),
    ]
    for args, message in cases:
        result = invoke(args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), result.output
    no_key = invoke([url, "--table", "orders", "--data-dir", str(tmp_path / "empty")])
    assert no_key.exit_code == 2 and "no API key" in no_key.output


def test_cli_unreachable_services_exit_three(
    sqlite_source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.harness.ports import free_port

    monkeypatch.setenv("NOTARY_API_KEY", "key")
    monkeypatch.setenv("NOTARY_API_URL", f"http://127.0.0.1:{free_port()}/v1")
    sqlite_source.add(range(2))
    result = invoke([sqlite_source.url, "--table", "orders", "--data-dir", str(tmp_path)])
    assert result.exit_code == 3, result.output
    assert "notary up" in " ".join(result.output.split())

    down = f"postgresql+psycopg://127.0.0.1:{free_port()}/db?connect_timeout=2"
    result = invoke([down, "--table", "orders", "--data-dir", str(tmp_path)])
    assert result.exit_code == 3 and "cannot connect" in " ".join(result.output.split())


class FailingSource:
    """Stands for a ``TableSource`` whose reads fail with ``error``; counts the attempts."""

    def __init__(self, error: Exception) -> None:
        self.error, self.calls = error, 0

    def read_page(self, after: Any, *, limit: int) -> Any:
        self.calls += 1
        raise self.error


def test_page_reads_are_retried_only_when_the_database_is_unreachable() -> None:
    from connectors.table_source import SourceUnreachable
    from flows.notarize_table import read_table_batch
    from tasks.row_hashing import UnsupportedValue

    reader = read_table_batch.with_options(retry_delay_seconds=0)

    @flow(validate_parameters=False)
    def read_once(source: FailingSource) -> Any:
        return reader(source, None, limit=5)

    down = FailingSource(SourceUnreachable("down", url="sqlite:///x"))
    with pytest.raises(SourceUnreachable):
        read_once(down)
    bad = FailingSource(UnsupportedValue("Range", column="period"))
    with pytest.raises(UnsupportedValue):
        read_once(bad)
    assert (down.calls, bad.calls) == (3, 1)
