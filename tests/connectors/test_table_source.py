"""Table source, watermark store and row hashing, on SQLite and the machine's PostgreSQL."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import rfc8785
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from connectors.audit import AuditStore
from connectors.table_source import (
    Position,
    SourceConfigError,
    SourceUnreachable,
    TableSource,
    public_url,
)
from connectors.watermark_store import WatermarkStore
from ledger.core.clock import ManualClock
from tasks.row_hashing import canonical_row, hash_row, key_text
from tests.harness.ports import free_port
from tests.harness.postgres import PG_URL, fresh_schema

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class Database:
    """A fresh database for one test: ``url``, an ``engine`` and a ``schema`` (PostgreSQL)."""

    url: str
    engine: sa.Engine
    schema: str | None

    def qualified(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.schema else name

    def audit_store(self) -> AuditStore:
        if self.schema is None:
            return AuditStore(self.url.replace("source.db", "audit.db"))
        return AuditStore(self.url, schema=self.schema)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    url = f"sqlite:///{tmp_path / 'source.db'}"
    engine = sa.create_engine(url)
    yield Database(url, engine, None)
    engine.dispose()


@pytest.fixture
def postgresql_db(postgres_url: str) -> Iterator[Database]:
    engine = sa.create_engine(PG_URL)
    try:
        with fresh_schema(prefix="test_table", create=True) as schema:
            yield Database(PG_URL, engine, schema)
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest) -> Database:
    return request.getfixturevalue(f"{request.param}_db")


def orders_table(db: Database, name: str = "orders") -> sa.Table:
    table = sa.Table(
        name,
        sa.MetaData(schema=db.schema),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("customer", sa.String(50), nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True)),
    )
    table.create(db.engine)
    return table


def order(i: int, *, at: datetime | None = None, amount: str | None = None) -> dict[str, Any]:
    return {
        "id": i,
        "customer": f"customer-{i % 4}",
        "amount": Decimal(amount or f"{i}.50"),
        "updated_at": at or T0 + timedelta(seconds=i // 4),  # four rows share each time
    }


def insert(db: Database, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    with db.engine.begin() as conn:
        conn.execute(table.insert(), rows)


def read_all(source: TableSource, after: Position | None, limit: int) -> list[list[int]]:
    return [[key["id"] for key, _ in page.rows] for page in source.pages(after, limit=limit)]


# -- reading by watermark --------------------------------------------------------------------


def test_pages_cover_every_row_once_in_watermark_then_key_order(db: Database) -> None:
    table = orders_table(db)
    rows = [order(i) for i in range(23)]
    random.Random(7).shuffle(rows)
    insert(db, table, rows)

    with TableSource.connect(
        db.url, table=db.qualified("orders"), watermark="updated_at"
    ) as source:
        assert source.key_columns == ("id",)
        assert source.columns == ("id", "customer", "amount", "updated_at")
        pages = read_all(source, None, 5)

    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]  # page edges fall inside equal times
    assert [i for page in pages for i in page] == list(range(23))


def test_row_values_come_back_typed_with_the_key(db: Database) -> None:
    table = orders_table(db)
    insert(db, table, [order(5)])
    with TableSource.connect(db.url, table=db.qualified("orders"), watermark="updated_at") as src:
        ((key, row),) = src.read_page(None, limit=10).rows
    assert key == {"id": 5}
    assert row["amount"] == Decimal("5.50") and row["customer"] == "customer-1"
    assert row["updated_at"].replace(tzinfo=row["updated_at"].tzinfo or UTC) == T0 + timedelta(
        seconds=1
    )


def test_default_watermark_is_the_single_column_primary_key(db: Database) -> None:
    table = orders_table(db)
    insert(db, table, [order(i, at=T0 - timedelta(seconds=i)) for i in range(6)])
    with TableSource.connect(db.url, table=db.qualified("orders")) as source:
        assert source.watermark_column == "id"
        assert read_all(source, None, 4) == [[0, 1, 2, 3], [4, 5]]


def test_saved_position_continues_with_new_and_changed_rows_only(db: Database) -> None:
    table = orders_table(db)
    insert(db, table, [order(i) for i in range(10)])
    with (
        db.audit_store() as audit,
        TableSource.connect(db.url, table=db.qualified("orders"), watermark="updated_at") as source,
    ):
        marks = WatermarkStore(audit.engine, clock=ManualClock(1_700_000_000.0))
        cols = {"watermark_column": "updated_at", "key_columns": ("id",)}
        assert marks.load(source.name, "c", **cols) is None
        first = source.read_page(None, limit=6)
        marks.save(source.name, "c", first.last, rows_read=6, **cols)

        after = WatermarkStore(audit.engine).load(source.name, "c", **cols)  # a later run
        assert after == first.last
        assert read_all(source, after, 100) == [[6, 7, 8, 9]]

        everything = source.read_page(after, limit=100)
        marks.save(source.name, "c", everything.last, rows_read=4, **cols)
        later = T0 + timedelta(hours=1)
        insert(db, table, [order(10, at=later)])
        with db.engine.begin() as conn:
            conn.execute(table.update().where(table.c.id == 2).values(amount=9, updated_at=later))
        resumed = marks.load(source.name, "c", **cols)
        assert read_all(source, resumed, 100) == [[2, 10]]

        assert marks.load(source.name, "other collection", **cols) is None
        assert marks.load(source.name, "c", watermark_column="id", key_columns=("id",)) is None
        with audit.engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT rows_read FROM table_watermarks")).scalar_one()
        assert stored == 10
        assert marks.reset(source.name, "c") is True
        assert marks.load(source.name, "c", **cols) is None


def test_composite_key_pages_through_rows_sharing_a_watermark(db: Database) -> None:
    table = sa.Table(
        "lines",
        sa.MetaData(schema=db.schema),
        sa.Column("order_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("line", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("sku", sa.String(20)),
        sa.Column("batch", sa.Integer),
    )
    table.create(db.engine)
    rows = [
        {"order_id": o, "line": n, "sku": f"s{o}{n}", "batch": 1}
        for o in range(4)
        for n in range(3)
    ]
    insert(db, table, rows)
    with TableSource.connect(db.url, table=db.qualified("lines"), watermark="batch") as source:
        assert source.key_columns == ("order_id", "line")
        keys = [key for page in source.pages(None, limit=5) for key, _ in page.rows]
    assert [(k["order_id"], k["line"]) for k in keys] == [
        (o, n) for o in range(4) for n in range(3)
    ]
    assert key_text(keys[4]) == '{"line":1,"order_id":1}'


def test_query_source_reads_a_select_with_given_key(db: Database) -> None:
    table = orders_table(db)
    insert(db, table, [order(i) for i in range(12)])
    name = db.qualified("orders")
    query = f"SELECT id, customer, amount * 2 AS doubled, updated_at FROM {name} WHERE id >= 3;"
    with TableSource.connect(db.url, query=query, key_columns=["id"], watermark="id") as source:
        assert source.columns == ("id", "customer", "doubled", "updated_at")
        assert source.name.startswith("table:") and "#query:" in source.name
        pages = read_all(source, None, 4)
        first_key, first_row = source.read_page(None, limit=1).rows[0]
    assert pages == [[3, 4, 5, 6], [7, 8, 9, 10], [11]]
    assert first_key == {"id": 3} and Decimal(str(first_row["doubled"])) == Decimal("7")


# -- errors ----------------------------------------------------------------------------------


def test_configuration_errors_say_what_is_wrong(sqlite_db: Database, tmp_path: Path) -> None:
    orders_table(sqlite_db)
    sa.Table("nokey", sa.MetaData(), sa.Column("x", sa.Integer)).create(sqlite_db.engine)
    url = sqlite_db.url
    cases = [
        ({"table": "nope"}, "no table 'nope'.*tables: nokey, orders"),
        (
            {"table": "orders", "watermark": "changed"},
            "unknown watermark column 'changed'; columns: id, customer",
        ),
        ({"table": "orders", "key_columns": ["id", "zz"]}, "unknown key column 'zz'"),
        ({"table": "nokey"}, "no primary key.*--key"),
        ({"table": "nokey", "key_columns": ["x"]}, "no single-column primary key.*--watermark"),
        ({"query": "SELECT id FROM orders"}, "query has no primary key.*--key"),
        ({"query": "SELEKT 1", "key_columns": ["id"]}, "rejected the query"),
        (
            {"query": "SELECT id FROM orders", "key_columns": ["id"]},
            "query has no single-column.*--watermark",
        ),
        ({"table": "orders", "query": "SELECT 1"}, "exactly one of"),
        ({}, "exactly one of"),
    ]
    for kwargs, message in cases:
        with pytest.raises(SourceConfigError, match=message):
            TableSource.connect(url, **kwargs)

    missing = tmp_path / "missing.db"
    with pytest.raises(SourceConfigError, match="no SQLite database file"):
        TableSource.connect(f"sqlite:///{missing}", table="orders")
    assert not missing.exists()
    with pytest.raises(SourceConfigError, match="not an SQLAlchemy URL"):
        TableSource.connect("just some words", table="orders")
    with pytest.raises(SourceConfigError, match="no SQLAlchemy driver"):
        TableSource.connect("nosuchdb://host/db", table="orders")


def test_unreachable_server_is_reported_without_the_password() -> None:
    port = free_port()  # nothing listens on it
    url = f"postgresql+psycopg://alice:s3cret@127.0.0.1:{port}/db?connect_timeout=2"
    with pytest.raises(SourceUnreachable) as caught:
        TableSource.connect(url, table="orders")
    assert "s3cret" not in str(caught.value) and "s3cret" not in caught.value.url
    assert public_url(url) == f"postgresql+psycopg://alice@127.0.0.1:{port}/db?connect_timeout=2"


# -- positions -------------------------------------------------------------------------------

POSITION_VALUES = [
    None,
    True,
    0,
    -(2**70),
    1.25,
    Decimal("1.50"),
    "2024-01-01 10:00:00.000000",
    datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=-5))),
    date(2024, 2, 29),
    time(23, 59, 59, 999999),
    uuid.UUID(int=42),
    b"\x00\xff",
]


@pytest.mark.parametrize("value", POSITION_VALUES, ids=repr)
def test_position_round_trips_through_json_exactly(value: Any) -> None:
    position = Position(value, (value, 7))
    back = Position.from_json(json.loads(json.dumps(position.to_json())))
    assert back == position
    assert type(back.watermark) is type(value)
    if isinstance(value, datetime):
        assert back.watermark.utcoffset() == value.utcoffset()


@given(st.one_of(st.integers(), st.text(), st.datetimes(), st.decimals(allow_nan=False)))
def test_position_round_trip_property(value: Any) -> None:
    back = Position.from_json(json.loads(json.dumps(Position(value, ()).to_json())))
    assert back.watermark == value and type(back.watermark) is type(value)


def test_malformed_position_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown watermark value tag"):
        Position.from_json({"watermark": ["pickle", "x"], "key": []})
    with pytest.raises(ValueError, match="malformed"):
        Position.from_json({"key": []})


# -- row hashing of what the source reads (the pure rules: tests/tasks/test_row_hashing.py)


def test_changed_row_has_a_new_hash_under_the_same_key(db: Database) -> None:
    table = orders_table(db)
    insert(db, table, [order(1)])
    with TableSource.connect(db.url, table=db.qualified("orders"), watermark="updated_at") as src:
        before = hash_row(*src.read_page(None, limit=1).rows[0])
        with db.engine.begin() as conn:
            conn.execute(table.update().values(amount=Decimal("2.00")))
        after = hash_row(*src.read_page(None, limit=1).rows[0])
        again = hash_row(*src.read_page(None, limit=1).rows[0])
    assert before.path == after.path == "id=1"
    assert before.sha256 != after.sha256 and after == again


ALL_TYPES_ROW = {
    "id": 7,
    "big": 2**62 + 1,
    "stamp": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    "local_stamp": datetime(2024, 5, 6, 7, 8, 9),
    "day": date(2024, 2, 29),
    "clock": time(13, 14, 15, 16),
    "price": Decimal("1234.50"),
    "ratio": 0.1,
    "flag": True,
    "label": 'naïve ☃ "quoted"\n',
    "payload": b"\x00\x01\xfe\xff",
    "doc": {"tags": ["a", "b"], "n": 1.5, "none": None},
    "note": None,
}

ALL_TYPES_JSON = {
    "big": str(2**62 + 1),
    "clock": "13:14:15.000016",
    "day": "2024-02-29",
    "doc": {"n": 1.5, "none": None, "tags": ["a", "b"]},
    "flag": True,
    "id": 7,
    "label": 'naïve ☃ "quoted"\n',
    "local_stamp": "2024-05-06T07:08:09.000000Z",
    "note": None,
    "payload": base64.b64encode(b"\x00\x01\xfe\xff").decode(),
    "price": "1234.5",
    "ratio": 0.1,
    "stamp": "2024-05-06T07:08:09.123456Z",
}


def all_types_table(db: Database) -> sa.Table:
    table = sa.Table(
        "all_types",
        sa.MetaData(schema=db.schema),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("big", sa.BigInteger),
        sa.Column("stamp", sa.DateTime(timezone=True)),
        sa.Column("local_stamp", sa.DateTime()),
        sa.Column("day", sa.Date),
        sa.Column("clock", sa.Time),
        sa.Column("price", sa.Numeric(12, 2)),
        sa.Column("ratio", sa.Float),
        sa.Column("flag", sa.Boolean),
        sa.Column("label", sa.Text),
        sa.Column("payload", sa.LargeBinary),
        sa.Column("doc", sa.JSON),
        sa.Column("note", sa.String(10)),
    )
    table.create(db.engine)
    insert(db, table, [ALL_TYPES_ROW])
    return table


@pytest.mark.postgres
def test_same_values_hash_the_same_on_sqlite_and_postgresql(
    sqlite_db: Database, postgresql_db: Database
) -> None:
    expected = rfc8785.dumps(ALL_TYPES_JSON)
    docs = []
    for db in (sqlite_db, postgresql_db):
        all_types_table(db)
        with TableSource.connect(db.url, table=db.qualified("all_types"), watermark="id") as src:
            ((key, row),) = src.read_page(None, limit=10).rows
        assert canonical_row(row) == expected, db.url
        docs.append(hash_row(key, row))
    assert docs[0] == docs[1]
    assert docs[0].path == "id=7" and docs[0].sha256 == hashlib.sha256(expected).hexdigest()
