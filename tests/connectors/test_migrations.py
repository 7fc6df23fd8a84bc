"""Alembic migrations of the audit store, on SQLite and the machine's PostgreSQL."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    create_engine,
    inspect,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from connectors import migrations
from connectors.audit import (
    AnchorRecord,
    AuditStore,
    DocumentIn,
    NewNotarization,
    ReceiptRecord,
)
from connectors.audit.models import AUDIT_METADATA
from connectors.migrations import (
    ANCHORS_REVISION,
    BATCHES_REVISION,
    HEAD_REVISION,
    INITIAL_REVISION,
    MEMBER_PATHS_REVISION,
    VERSION_TABLE,
    WATERMARKS_REVISION,
    MigrationError,
)
from connectors.table_position import Position
from connectors.watermark_store import WatermarkStore
from tasks.documents import aggregation_tree, chain_for
from tasks.steps import record_aggregate
from tests.harness.postgres import PG_URL, fresh_schema

INITIAL_TABLES = {"documents", "notarizations", "stage_events", "receipts", "runs"}


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict]:
    """Arguments of an empty database: ``url`` and ``schema`` (PostgreSQL, created here)."""
    if request.param == "sqlite":
        yield {"url": f"sqlite:///{tmp_path / 'audit.db'}", "schema": None}
        return
    request.getfixturevalue("postgres_url")
    with fresh_schema(prefix="test_mig", create=True) as schema:
        yield {"url": PG_URL, "schema": schema}


def raw_engine(backend: dict) -> Engine:
    """An engine on the test database that does not run migrations."""
    if backend["schema"] is None:
        return create_engine(backend["url"])
    return create_engine(
        backend["url"], connect_args={"options": f"-csearch_path={backend['schema']}"}
    )


def open_store(backend: dict) -> AuditStore:
    return AuditStore(backend["url"], schema=backend["schema"])


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names()) - {VERSION_TABLE}


def schema_diff(engine: Engine) -> list:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return compare_metadata(context, AUDIT_METADATA)


def legacy_metadata() -> MetaData:
    """The tables ``create_all`` made before migrations: no anchors, no stage CHECK, no
    notarization kind or batch size."""
    legacy = MetaData()
    for name in sorted(INITIAL_TABLES - {"notarizations"}):
        AUDIT_METADATA.tables[name].to_metadata(legacy)
    current = AUDIT_METADATA.tables["notarizations"]
    Table(
        "notarizations",
        legacy,
        *[c._copy() for c in current.columns if c.name not in ("kind", "batch_size")],
        UniqueConstraint("chain_id", "sha256", name="uq_notarizations_chain_sha256"),
        ForeignKeyConstraint(["document_id"], ["documents.id"]),
        Index("ix_notarizations_stage_collection", "stage", "collection"),
    )
    return legacy


def fill(store: AuditStore) -> list[int]:
    """Two notarizations, one of them in a directory block with a receipt."""
    docs = store.notarizations.upsert_documents(
        "folder:/d", [DocumentIn(f"{x}.txt", h(x), 1) for x in "ab"]
    )
    ids = store.notarizations.add(
        [NewNotarization(d, "c", h("chain"), h(x)) for d, x in zip(docs, "ab", strict=True)]
    )
    store.notarizations.mark_published({ids[0]: h("ea")})
    store.notarizations.record_ledger({h("ea"): (3, h("db3"))})
    return ids


def fill_legacy(engine: Engine) -> list[int]:
    """``fill``'s rows written in SQL into tables made before notarizations had a kind."""
    at = datetime(2024, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        for i, x in enumerate("ab", start=1):
            conn.execute(
                text(
                    "INSERT INTO documents (id, source, path, sha256, size_bytes, "
                    "first_seen_at, last_seen_at) VALUES (:i, 'folder:/d', :p, :h, 1, :t, :t)"
                ),
                {"i": i, "p": f"{x}.txt", "h": h(x), "t": at},
            )
            conn.execute(
                text(
                    "INSERT INTO notarizations (id, document_id, collection, chain_id, sha256, "
                    "stage, attempts, created_at, updated_at) "
                    "VALUES (:i, :i, 'c', :c, :h, 'pending', 0, :t, :t)"
                ),
                {"i": i, "c": h("chain"), "h": h(x), "t": at},
            )
            conn.execute(
                text(
                    "INSERT INTO stage_events (notarization_id, stage, at) "
                    "VALUES (:i, 'pending', :t)"
                ),
                {"i": i, "t": at},
            )
        conn.execute(
            text(
                "UPDATE notarizations SET stage = 'ledger', entry_hash = :e, dblock_height = 3, "
                "dblock_keymr = :k, ledger_at = :t WHERE id = 1"
            ),
            {"e": h("ea"), "k": h("db3"), "t": at},
        )
    return [1, 2]


def anchor(height: int) -> AnchorRecord:
    raw = {
        "directoryblockheight": height,
        "directoryblockkeymr": h(f"db{height}"),
        "anchor_pow": {"transactionhash": h("tx"), "blockhash": h("blk")},
    }
    return AnchorRecord.from_node(raw, verified_at=datetime(2024, 1, 1, tzinfo=UTC))


def test_head_constant_matches_the_revision_scripts() -> None:
    script = ScriptDirectory.from_config(migrations.alembic_config())
    assert script.get_current_head() == HEAD_REVISION
    assert script.get_base() == INITIAL_REVISION
    assert [r.revision for r in script.walk_revisions()] == [
        HEAD_REVISION,
        "0007_run_heartbeat",
        "0006_receipt_branch_once",
        MEMBER_PATHS_REVISION,
        BATCHES_REVISION,
        WATERMARKS_REVISION,
        ANCHORS_REVISION,
        INITIAL_REVISION,
    ]


def test_upgrade_from_empty_matches_the_models(backend: dict) -> None:
    engine = raw_engine(backend)
    assert migrations.current_revision(engine) is None
    assert migrations.upgrade(engine) == HEAD_REVISION
    assert tables(engine) == INITIAL_TABLES | {
        "anchors",
        "table_watermarks",
        "collections",
        "batch_members",
        "block_timestamps",
    }
    assert schema_diff(engine) == []
    assert migrations.upgrade(engine) == HEAD_REVISION  # idempotent
    engine.dispose()


def test_first_revision_matches_the_unversioned_detection(backend: dict) -> None:
    engine = raw_engine(backend)
    migrations.upgrade(engine, INITIAL_REVISION)
    assert tables(engine) == INITIAL_TABLES
    with engine.connect() as conn:
        conn.execute(text(f"DELETE FROM {VERSION_TABLE}"))
        conn.commit()
        assert migrations.detect_unversioned_revision(conn) == INITIAL_REVISION
    engine.dispose()


def test_database_made_by_create_all_is_stamped_and_upgraded_with_its_data(backend: dict) -> None:
    engine = raw_engine(backend)
    with engine.begin() as conn:
        legacy_metadata().create_all(conn)
    ids = fill_legacy(engine)
    with AuditStore(backend["url"], schema=backend["schema"], create_tables=False) as old:
        old_events = old.notarizations.stage_events(ids)
    assert migrations.current_revision(engine) is None

    with open_store(backend) as store:
        assert store.schema_revision() == HEAD_REVISION
        assert store.notarizations.stage_events(ids) == old_events
        assert store.runs.summary("c")["ledger"] == 1
        assert store.proofs.record_anchors([anchor(3)]) == 1
        assert [p.notarization.stage for p in store.proofs.records()] == ["anchor", "pending"]
        with pytest.raises(IntegrityError), store.engine.begin() as conn:
            conn.execute(text("UPDATE notarizations SET stage = 'bogus'"))
    assert schema_diff(engine) == []
    engine.dispose()


def test_database_made_by_create_all_is_stamped_and_upgraded_to_head(backend: dict) -> None:
    # The current models have the tables and columns of 0004 (0005 changes only an index
    # and a nullability): stamped there, then 0005 runs on a schema that already has its
    # shape, and must leave it as it is.
    engine = raw_engine(backend)
    with engine.begin() as conn:
        AUDIT_METADATA.create_all(conn)
    with engine.connect() as conn:
        assert migrations.detect_unversioned_revision(conn) == BATCHES_REVISION
    with open_store(backend) as store:
        assert store.schema_revision() == HEAD_REVISION
    assert schema_diff(engine) == []
    engine.dispose()


def test_unrecognised_tables_are_refused_not_stamped(backend: dict) -> None:
    engine = raw_engine(backend)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE documents (id INTEGER PRIMARY KEY, name TEXT)"))
    with pytest.raises(MigrationError, match="not an audit store") as partial:
        open_store(backend)
    assert "notarizations" in partial.value.missing
    with engine.begin() as conn:
        legacy = legacy_metadata()
        legacy.remove(legacy.tables["documents"])
        legacy.create_all(conn)
    with pytest.raises(MigrationError, match="lacks columns") as columns:
        open_store(backend)
    assert columns.value.table == "documents" and "sha256" in columns.value.missing
    assert migrations.current_revision(engine) is None
    engine.dispose()


def test_downgrade_and_upgrade_round_trip_keeps_the_older_data(backend: dict) -> None:
    with open_store(backend) as store:
        ids = fill(store)
        store.proofs.record_anchors([anchor(3)])
    engine = raw_engine(backend)
    assert migrations.downgrade(engine, INITIAL_REVISION) == INITIAL_REVISION
    assert tables(engine) == INITIAL_TABLES
    with engine.begin() as conn:  # the stage CHECK is gone with its revision
        conn.execute(text("UPDATE notarizations SET stage = 'bogus' WHERE id = :i"), {"i": ids[1]})
        conn.execute(
            text("UPDATE notarizations SET stage = 'pending' WHERE id = :i"), {"i": ids[1]}
        )
    assert migrations.upgrade(engine) == HEAD_REVISION
    with open_store(backend) as store:
        assert store.proofs.anchors() == {}
        assert [p.notarization.stage for p in store.proofs.records()] == ["anchor", "pending"]
        assert store.proofs.record_anchors([anchor(3)]) == 0  # already at anchor: row refreshed
        assert set(store.proofs.anchors()) == {ids[0]}
    assert migrations.downgrade(engine, "base") is None
    assert tables(engine) == set()
    assert migrations.upgrade(engine) == HEAD_REVISION
    assert schema_diff(engine) == []
    engine.dispose()


def test_concurrent_openers_migrate_once(backend: dict) -> None:
    def open_and_count(_: int) -> str | None:
        with open_store(backend) as store:
            return store.schema_revision()

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert set(pool.map(open_and_count, range(4))) == {HEAD_REVISION}
    engine = raw_engine(backend)
    with engine.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM {VERSION_TABLE}")).scalar_one() == 1
    engine.dispose()


def test_alembic_command_line_environment_migrates_by_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    config = migrations.alembic_config()
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "head")
    engine = create_engine(url)
    assert migrations.current_revision(engine) == HEAD_REVISION
    assert schema_diff(engine) == []
    engine.dispose()


# -- 0003: table_watermarks, which WatermarkStore used to create itself ----------------------


def old_table_watermarks(metadata: MetaData) -> Table:
    """``table_watermarks`` exactly as ``WatermarkStore`` made it before revision 0003."""
    return Table(
        "table_watermarks",
        metadata,
        Column("source", String(1024), primary_key=True),
        Column("collection", String(255), primary_key=True),
        Column("watermark_column", String(255), nullable=False),
        Column("key_columns", JSON, nullable=False),
        Column("position", JSON, nullable=False),
        Column("rows_read", BigInteger, nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False),
    )


OLD_POSITION = Position(datetime(2024, 3, 1, 12, 0, tzinfo=UTC), (7, "b"))
WATERMARK_COLUMNS = {"watermark_column": "updated_at", "key_columns": ("id", "part")}


def test_store_at_0002_with_the_old_watermark_table_keeps_its_positions(backend: dict) -> None:
    engine = raw_engine(backend)
    assert migrations.upgrade(engine, ANCHORS_REVISION) == ANCHORS_REVISION
    old = old_table_watermarks(MetaData())
    with engine.begin() as conn:
        old.create(conn)
        conn.execute(
            old.insert().values(
                source="table:sqlite:///shop.db#orders",
                collection="c",
                watermark_column="updated_at",
                key_columns=["id", "part"],
                position=OLD_POSITION.to_json(),
                rows_read=41,
                updated_at=datetime(2024, 3, 1, tzinfo=UTC),
            )
        )

    with open_store(backend) as store:
        assert store.schema_revision() == HEAD_REVISION
        marks = WatermarkStore(store.engine)
        source = "table:sqlite:///shop.db#orders"
        assert marks.load(source, "c", **WATERMARK_COLUMNS) == OLD_POSITION
        marks.save(
            source,
            "c",
            Position(OLD_POSITION.watermark, (8, "a")),
            rows_read=1,
            **WATERMARK_COLUMNS,
        )
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT rows_read FROM table_watermarks")).scalar_one() == 42
    assert schema_diff(engine) == []
    engine.dispose()


def test_store_at_0002_without_the_watermark_table_gets_it(backend: dict) -> None:
    engine = raw_engine(backend)
    migrations.upgrade(engine, ANCHORS_REVISION)
    assert "table_watermarks" not in tables(engine)
    assert migrations.upgrade(engine) == HEAD_REVISION
    assert "table_watermarks" in tables(engine)
    assert schema_diff(engine) == []
    assert migrations.downgrade(engine, ANCHORS_REVISION) == ANCHORS_REVISION
    assert tables(engine) == INITIAL_TABLES | {"anchors"}
    engine.dispose()


def test_a_watermark_table_with_other_columns_is_refused(backend: dict) -> None:
    engine = raw_engine(backend)
    migrations.upgrade(engine, ANCHORS_REVISION)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE table_watermarks (source VARCHAR(10) PRIMARY KEY)"))
    with pytest.raises(MigrationError, match="lacks columns") as refused:
        migrations.upgrade(engine)
    assert refused.value.table == "table_watermarks" and "position" in refused.value.missing
    assert migrations.current_revision(engine) == ANCHORS_REVISION
    engine.dispose()


def test_unversioned_store_with_the_old_watermark_table_is_stamped_at_0003(
    backend: dict,
) -> None:
    engine = raw_engine(backend)
    legacy = legacy_metadata()
    AUDIT_METADATA.tables["anchors"].to_metadata(legacy)
    old_table_watermarks(legacy)
    with engine.begin() as conn:
        legacy.create_all(conn)
    with engine.connect() as conn:
        assert migrations.detect_unversioned_revision(conn) == WATERMARKS_REVISION
    engine.dispose()


def test_store_at_0003_gets_collections_and_batches_and_keeps_v1_rows(backend: dict) -> None:
    engine = raw_engine(backend)
    migrations.upgrade(engine, WATERMARKS_REVISION)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO documents (source, path, sha256, size_bytes, first_seen_at, "
                "last_seen_at) VALUES ('folder:/d', 'a.txt', :h, 1, :t, :t)"
            ),
            {"h": h("a"), "t": datetime(2024, 1, 1, tzinfo=UTC)},
        )
        conn.execute(
            text(
                "INSERT INTO notarizations (document_id, collection, chain_id, sha256, stage, "
                "attempts, created_at, updated_at) VALUES (1, 'c', :c, :h, 'pending', 0, :t, :t)"
            ),
            {"c": h("chain"), "h": h("a"), "t": datetime(2024, 1, 1, tzinfo=UTC)},
        )
    assert migrations.upgrade(engine) == HEAD_REVISION
    assert {"collections", "batch_members"} <= tables(engine)
    assert schema_diff(engine) == []
    with open_store(backend) as store:
        (row,) = store.notarizations.pending(stage_below="published")
        assert (row.kind, row.batch_size, row.is_member) == ("document", None, False)
    assert migrations.downgrade(engine, WATERMARKS_REVISION) == WATERMARKS_REVISION
    assert not {"collections", "batch_members"} & tables(engine)
    engine.dispose()


def test_0005_downgrade_stores_the_rebuilt_member_paths_and_upgrade_keeps_them(
    backend: dict,
) -> None:
    with open_store(backend) as store:
        record = store.collections.use("c", "aggregate", chain_namer=chain_for)
        labels = [f"doc-{i}" for i in range(7)]
        ids = store.notarizations.upsert_documents(
            "folder:/d", [DocumentIn(f"{x}.txt", h(x), 1) for x in labels]
        )
        docs = list(zip(ids, [h(x) for x in labels], strict=True))
        added = record_aggregate.fn(store, record, docs)
        assert added is not None
        tree = aggregation_tree(record.key, [sha for _id, sha in docs])
        expected = [tuple(x.hex() for x in tree.audit_path(i)) for i in range(len(docs))]
    engine = raw_engine(backend)
    assert migrations.downgrade(engine, BATCHES_REVISION) == BATCHES_REVISION
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT audit_path FROM batch_members ORDER BY leaf_index"))
        stored = [r[0] if isinstance(r[0], list) else json.loads(r[0]) for r in rows]
    assert stored == [list(path) for path in expected]
    indexes = {ix["name"] for ix in inspect(engine).get_indexes("documents")}
    assert {"ix_documents_sha256", "ix_documents_source"} <= indexes
    with open_store(backend) as store:  # upgraded again: stored paths are read as they are
        assert store.schema_revision() == HEAD_REVISION
        read = [p.notarization.audit_path for p in store.proofs.records(collection="c")]
        assert read == expected
    assert schema_diff(engine) == []
    engine.dispose()


def stored_raws(engine: Engine) -> list[dict]:
    """The ``raw`` column of every receipt row, by id, parsed."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT raw FROM receipts ORDER BY id")).all()
    return [r[0] if isinstance(r[0], dict) else json.loads(r[0]) for r in rows]


def test_0006_stores_the_branch_once_and_downgrade_puts_it_back(backend: dict) -> None:
    def node_receipt(entry_hash: str) -> dict:
        branch = [{"left": entry_hash, "right": h(f"r{i}"), "top": h(f"t{i}")} for i in range(3)]
        return {
            "entry": {"entryhash": entry_hash, "timestamp": 1_700_000_060},
            "merklebranch": branch,
            "entryblockkeymr": h("eb"),
            "directoryblockkeymr": h("db7"),
            "directoryblockheight": 7,
        }

    received = [node_receipt(h("ea")), node_receipt(h("eb"))]
    with open_store(backend) as store:
        ids = store.notarizations.add(
            [
                NewNotarization(d, "c", h("chain"), h(x))
                for d, x in zip(
                    store.notarizations.upsert_documents("s", docs_for("a", "b")), "ab", strict=True
                )
            ]
        )
        store.notarizations.mark_published({ids[0]: h("ea"), ids[1]: h("eb")})
        at = datetime(2024, 1, 1, tzinfo=UTC)
        assert store.proofs.record_receipts(
            [ReceiptRecord.from_node(r, verified_at=at) for r in received]
        )
        assert [p.receipt.raw for p in store.proofs.records() if p.receipt] == received
    engine = raw_engine(backend)
    compact = stored_raws(engine)
    assert [r["merklebranch"] for r in compact] == [
        {
            "sha256": hashlib.sha256(
                json.dumps(r["merklebranch"], separators=(",", ":")).encode()
            ).hexdigest()
        }
        for r in received
    ]  # the branch itself is only in merkle_branch
    assert [{k: v for k, v in r.items() if k != "merklebranch"} for r in compact] == [
        {k: v for k, v in r.items() if k != "merklebranch"} for r in received
    ]
    with engine.begin() as conn:  # the second row's column changed after it was stored
        cast = "CAST(:b AS JSONB)" if engine.dialect.name == "postgresql" else ":b"
        forged = json.dumps([{"left": h("eb"), "right": h("x"), "top": h("y")}])
        conn.execute(
            text(f"UPDATE receipts SET merkle_branch = {cast} WHERE id = 2"), {"b": forged}
        )

    assert migrations.downgrade(engine, MEMBER_PATHS_REVISION) == MEMBER_PATHS_REVISION
    restored = stored_raws(engine)
    assert restored[0] == received[0]  # as the node sent it, as 0005 kept it
    assert restored[1] == compact[1]  # no longer its column's: kept as it was

    with open_store(backend) as store:  # upgraded again: whole rows are compacted
        assert store.schema_revision() == HEAD_REVISION
        assert stored_raws(engine) == compact
        raws = [p.receipt.raw for p in store.proofs.records() if p.receipt]
        assert raws[0] == received[0]
        assert raws[1]["merklebranch"] == compact[1]["merklebranch"]  # the report flags it
    assert schema_diff(engine) == []
    engine.dispose()


def docs_for(*labels: str) -> list[DocumentIn]:
    return [DocumentIn(f"{x}.txt", h(x), 1) for x in labels]
