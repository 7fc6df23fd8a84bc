"""Table source: new and changed rows of an SQL table (or a SELECT) found by a watermark column.

Rows are read in keyset pages ordered by ``(watermark, key columns)``::

    SELECT ... WHERE wm IS NOT NULL
             AND (wm > :wm OR (wm = :wm AND (k1 > :k1 OR (k1 = :k1 AND k2 > :k2))))
    ORDER BY wm, k1, k2 LIMIT :page

Each page is one short query (memory bounded by the page size, rows streamed from the
server, no transaction held open between pages), and rows that share a watermark value
across a page boundary are neither skipped nor read twice. The watermark is an increasing
id (finds new rows) or an updated-at timestamp (finds new and changed rows). Rows whose
watermark is NULL are never read. A row written later with a watermark *below* the saved
one (a clock running behind, a long transaction committing late) is not seen: choose a
column the writers set at commit order.

The position of the last row (``connectors.table_position.Position``: its watermark and key
values, as the driver returned them, so they bind back exactly) is kept per (source,
collection) in the audit store by ``connectors.watermark_store.WatermarkStore``.

Errors::

    TableSourceError          base
    ├── SourceConfigError     bad URL, unknown driver, table, column or query; no key columns
    └── SourceUnreachable     the database server could not be reached
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    MetaData,
    Table,
    and_,
    column,
    create_engine,
    inspect,
    or_,
    select,
    text,
    type_coerce,
)
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import (
    ArgumentError,
    NoSuchModuleError,
    NoSuchTableError,
    SQLAlchemyError,
)
from sqlalchemy.exc import OperationalError as SAOperationalError
from sqlalchemy.sql.expression import ColumnElement
from sqlalchemy.types import NullType

from connectors.errors import ConnectorPackageError
from connectors.table_position import Position

__all__ = [
    "Position",
    "RowPage",
    "SourceConfigError",
    "SourceUnreachable",
    "TableSource",
    "TableSourceError",
    "public_url",
]

_SUBQUERY = "notary_src"
_RAW_PREFIX = "__notary_raw_"


class TableSourceError(ConnectorPackageError):
    """Base of the table source's errors."""


class SourceConfigError(TableSourceError, ValueError):
    """The URL, table, query or a column name is wrong (a usage error: fix the arguments)."""


class SourceUnreachable(TableSourceError):
    """The database server could not be reached (down, wrong host or port, refused login).

    Attributes:
        url: the URL with its password hidden.
    """

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


# -- the source ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RowPage:
    """One page of rows: ``rows`` are ``(key mapping, row mapping)`` pairs in read order,
    ``last`` the position of the last one (``None`` for an empty page)."""

    rows: list[tuple[dict[str, Any], dict[str, Any]]]
    last: Position | None


def public_url(url: str | URL) -> str:
    """The URL without its password (safe for logs, run records and source names); relative
    SQLite paths are made absolute.

    Raises:
        SourceConfigError: not an SQLAlchemy URL.
    """
    parsed = _parse_url(url)
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and _is_sqlite_file(database):
        parsed = parsed.set(database=str(Path(str(database)).expanduser().resolve()))
    return parsed._replace(password=None).render_as_string(hide_password=False)


def _is_sqlite_file(database: str | None) -> bool:
    """A plain file path (not in-memory, not a ``file:`` URI)."""
    return bool(database) and database != ":memory:" and not str(database).startswith("file:")


class TableSource:
    """Read rows of a table or a SELECT after a ``Position``, one keyset page at a time.

    Build it with ``TableSource.connect(url, ...)`` (which owns the engine and checks the
    table and columns), or pass an engine you own to the constructor. Use as a context
    manager (or call ``close``) to dispose of an engine it created.

    Attributes:
        name: the audit-store source name, ``table:<url without password>#<table>`` or
            ``table:<url>#query:<first 16 hex of the SHA-256 of the query>``.
        watermark_column: the column rows are ordered and continued by.
        key_columns: the columns identifying a row (recorded as its key).
        columns: every column of a row, in select order.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        table: str | None = None,
        query: str | None = None,
        watermark: str | None = None,
        key_columns: Sequence[str] | None = None,
        owns_engine: bool = False,
    ) -> None:
        """Check the table (or query) and the columns.

        Args:
            engine: engine of the source database.
            table: ``name`` or ``schema.name`` (exactly one of ``table`` and ``query``).
            query: a SELECT statement (no trailing clauses needed; it is used as a subquery;
                write a literal colon as ``\\:``).
            watermark: the increasing column; default the single-column primary key.
            key_columns: columns identifying a row; default the primary key (required with
                ``query``).
            owns_engine: dispose of ``engine`` in ``close``.

        Raises:
            SourceConfigError: neither or both of table and query, an unknown table or
                column, a query the database rejects, no key columns, duplicate column names.
            SourceUnreachable: the database could not be reached.
        """
        if (table is None) == (query is None):
            raise SourceConfigError("give exactly one of a table and a query")
        self._engine = engine
        self._owns_engine = owns_engine
        self._label = public_url(engine.url)
        _check_reachable(engine, self._label)
        if table is not None:
            cols, pk = self._table_columns(table)
            self.name = f"table:{self._label}#{table}"
        else:
            assert query is not None
            cols, pk = self._query_columns(query), []
            digest = hashlib.sha256(query.strip().encode("utf-8")).hexdigest()[:16]
            self.name = f"table:{self._label}#query:{digest}"
        self._cols: dict[str, ColumnElement[Any]] = cols
        self.columns: tuple[str, ...] = tuple(cols)
        self._is_query = query is not None
        self.key_columns = self._pick_keys(key_columns, pk)
        self.watermark_column = self._pick_watermark(watermark, pk)

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        table: str | None = None,
        query: str | None = None,
        watermark: str | None = None,
        key_columns: Sequence[str] | None = None,
    ) -> TableSource:
        """Open a source on the database at ``url`` (any SQLAlchemy URL whose driver is
        installed); the source owns and disposes of the engine. A SQLite file must exist.

        Raises:
            SourceConfigError, SourceUnreachable: as for the constructor, plus a malformed
                URL, an uninstalled driver or a missing SQLite file.
        """
        engine = _source_engine(url)
        try:
            return cls(
                engine,
                table=table,
                query=query,
                watermark=watermark,
                key_columns=key_columns,
                owns_engine=True,
            )
        except BaseException:
            engine.dispose()
            raise

    def read_page(self, after: Position | None, *, limit: int) -> RowPage:
        """The next at most ``limit`` rows after ``after`` (from the start when ``None``),
        ordered by watermark then key; values as SQLAlchemy's column types return them.

        Raises:
            TableSourceError: the query failed (``SourceUnreachable`` for a lost server).
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        query = self._page_query(after, limit).execution_options(stream_results=True)
        width = len(self.columns)
        rows: list[tuple[dict[str, Any], dict[str, Any]]] = []
        last: Position | None = None
        try:
            with self._engine.connect() as conn:
                for record in conn.execute(query):
                    values = dict(zip(self.columns, record[:width], strict=True))
                    rows.append(({k: values[k] for k in self.key_columns}, values))
                    last = Position(record[width], tuple(record[width + 1 :]))
        except SAOperationalError as exc:
            raise SourceUnreachable(
                f"reading {self.name} failed: {exc.orig}", url=self._label
            ) from exc
        except SQLAlchemyError as exc:
            raise TableSourceError(f"reading {self.name} failed: {exc}") from exc
        return RowPage(rows, last)

    def pages(self, after: Position | None, *, limit: int) -> Iterator[RowPage]:
        """Every page after ``after`` until a short page (each holds at most ``limit`` rows)."""
        while True:
            page = self.read_page(after, limit=limit)
            if page.rows:
                yield page
            if len(page.rows) < limit:
                return
            after = page.last

    def close(self) -> None:
        """Dispose of the engine if this source created it."""
        if self._owns_engine:
            self._engine.dispose()

    def __enter__(self) -> TableSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _table_columns(self, name: str) -> tuple[dict[str, ColumnElement[Any]], list[str]]:
        schema, _, bare = name.rpartition(".")
        try:
            reflected = Table(bare, MetaData(), schema=schema or None, autoload_with=self._engine)
        except NoSuchTableError as exc:
            raise SourceConfigError(self._unknown_table(name, schema or None)) from exc
        except SQLAlchemyError as exc:
            raise SourceConfigError(f"cannot read the columns of {name!r}: {exc}") from exc
        cols: dict[str, ColumnElement[Any]] = {c.name: c for c in reflected.columns}
        return cols, [c.name for c in reflected.primary_key.columns]

    def _unknown_table(self, name: str, schema: str | None) -> str:
        try:
            names = sorted(inspect(self._engine).get_table_names(schema=schema))
        except SQLAlchemyError:
            names = []
        listed = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        where = f" in schema {schema!r}" if schema else ""
        return f"no table {name!r}{where} in {self._label}; tables: {listed or '(none)'}"

    def _query_columns(self, query: str) -> dict[str, ColumnElement[Any]]:
        body = query.strip().rstrip(";").strip()
        probe = text(f"SELECT * FROM ({body}) AS {_SUBQUERY} WHERE 1 = 0")
        try:
            with self._engine.connect() as conn:
                names = list(conn.execute(probe).keys())
        except SQLAlchemyError as exc:
            raise SourceConfigError(f"the database rejected the query: {exc}") from exc
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SourceConfigError(
                f"the query returns duplicate column names {duplicates}; alias them"
            )
        sub = text(body).columns(*[column(n) for n in names]).subquery(_SUBQUERY)
        return {n: sub.c[n] for n in names}

    def _pick_keys(self, wanted: Sequence[str] | None, pk: list[str]) -> tuple[str, ...]:
        if wanted:
            self._check_columns(wanted, "key column")
            return tuple(dict.fromkeys(wanted))
        if self._is_query:
            raise SourceConfigError("a query has no primary key: give the key columns (--key)")
        if not pk:
            raise SourceConfigError(f"{self.name} has no primary key: give the key columns (--key)")
        return tuple(pk)

    def _pick_watermark(self, wanted: str | None, pk: list[str]) -> str:
        if wanted is not None:
            self._check_columns([wanted], "watermark column")
            return wanted
        if len(pk) != 1:
            what = "a query" if self._is_query else self.name
            raise SourceConfigError(
                f"{what} has no single-column primary key: give the watermark column (--watermark)"
            )
        return pk[0]

    def _check_columns(self, names: Sequence[str], what: str) -> None:
        unknown = [n for n in names if n not in self._cols]
        if unknown:
            raise SourceConfigError(
                f"unknown {what} {', '.join(map(repr, unknown))}; columns: {', '.join(self.columns)}"
            )

    def _raw(self, name: str) -> ColumnElement[Any]:
        return type_coerce(self._cols[name], NullType())

    def _page_query(self, after: Position | None, limit: int) -> Any:
        wm = self._raw(self.watermark_column)
        keys = [self._raw(k) for k in self.key_columns]
        raw = [wm.label(f"{_RAW_PREFIX}wm")] + [
            k.label(f"{_RAW_PREFIX}k{i}") for i, k in enumerate(keys)
        ]
        query = select(*self._cols.values(), *raw).where(wm.is_not(None))
        if after is not None:
            if len(after.key) != len(keys):
                raise ValueError("the position does not match the key columns")
            query = query.where(_after([wm, *keys], [after.watermark, *after.key]))
        return query.order_by(wm, *keys).limit(limit)


def _after(cols: Sequence[ColumnElement[Any]], values: Sequence[Any]) -> ColumnElement[bool]:
    """``(c0, c1, ...) > (v0, v1, ...)`` spelled with AND/OR (portable to every backend)."""
    head, value = cols[0], values[0]
    greater: ColumnElement[bool] = head > value  # the stubs type comparisons of Any columns Any
    if len(cols) == 1:
        return greater
    return or_(greater, and_(head == value, _after(cols[1:], values[1:])))


def _parse_url(url: str | URL) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise SourceConfigError(
            f"not an SQLAlchemy URL: {exc} (examples: sqlite:///data.db, "
            "postgresql+psycopg://user@host:5432/db)"
        ) from None


def _source_engine(url: str) -> Engine:
    parsed = _parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if not database or database == ":memory:":
            raise SourceConfigError("an in-memory SQLite database has no rows to read; give a file")
        if not database.startswith("file:") and not Path(database).expanduser().is_file():
            raise SourceConfigError(f"no SQLite database file at {database}")
    try:
        return create_engine(parsed, pool_pre_ping=True)
    except NoSuchModuleError as exc:
        raise SourceConfigError(f"no SQLAlchemy driver for {parsed.drivername!r}: {exc}") from exc
    except (ArgumentError, ImportError) as exc:
        raise SourceConfigError(f"cannot use {public_url(parsed)}: {exc}") from exc


def _check_reachable(engine: Engine, label: str) -> None:
    try:
        with engine.connect():
            pass
    except SAOperationalError as exc:
        raise SourceUnreachable(f"cannot connect to {label}: {exc.orig}", url=label) from exc
    except SQLAlchemyError as exc:
        raise SourceConfigError(f"cannot use {label}: {exc}") from exc
