"""The audit store's SQLAlchemy engine: SQLite or PostgreSQL, set up for the pipeline.

Kept apart from ``connectors.audit.store`` (what is stored) because it is about how the
database is reached: connection settings per backend, and riding through a PostgreSQL
restart.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from ledger.dbjson import json_text
from ledger.sqlite import create_sqlite_engine

__all__ = ["WAL_AUTOCHECKPOINT_PAGES", "build_engine"]

_log = logging.getLogger(__name__)


#: The audit store's WAL checkpoint threshold, in 4 KiB pages (200 MB; SQLite's default is
#: 1,000). Recording an archive changes the pages of random-key indexes (members by
#: document hash) again and again; each checkpoint copied them back, so at 1,000,000
#: documents the commits spent much of their time rewriting the same pages. A million
#: documents aggregated: 1,000 pages ~105 s, 10,000 ~72-76 s, 50,000 66 s, 150,000 68 s
#: (the WAL file keeps its largest size on disk: 200 MB here; not memory).
WAL_AUTOCHECKPOINT_PAGES = 50_000


def build_engine(url: str, *, schema: str | None, connect_retry_s: float) -> Engine:
    """The audit store's engine for ``url`` (see ``AuditStore``'s arguments).

    SQLite (``ledger.sqlite.create_sqlite_engine``): the parent folder is created, WAL
    mode (switched safely when several processes open a new file at once),
    ``synchronous=NORMAL``, a checkpoint every ``WAL_AUTOCHECKPOINT_PAGES``, foreign keys
    on, a 30 s busy timeout. PostgreSQL: a ping
    before each pooled connection is used, the schema set as ``search_path``, and
    connections refused while the server restarts tried again for up to
    ``connect_retry_s`` seconds.

    Raises:
        ValueError: a backend other than SQLite or PostgreSQL, ``schema`` on SQLite, or an
            invalid schema name.
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ValueError(f"unsupported audit store backend {backend!r} (sqlite or postgresql)")
    if backend == "sqlite":
        if schema is not None:
            raise ValueError("schema is only supported on PostgreSQL")
        return create_sqlite_engine(
            parsed,
            synchronous="NORMAL",
            json_serializer=json_text,
            wal_autocheckpoint_pages=WAL_AUTOCHECKPOINT_PAGES,
        )
    if schema is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
        raise ValueError(f"invalid schema name {schema!r}")
    connect_args = {"options": f"-csearch_path={schema}"} if schema is not None else {}
    engine = create_engine(
        url, pool_pre_ping=True, connect_args=connect_args, json_serializer=json_text
    )
    if connect_retry_s > 0:
        event.listen(engine, "do_connect", _RetryingConnect(connect_retry_s))
    return engine


#: What a PostgreSQL server says while it restarts: refused connections, "the database
#: system is starting up / shutting down" (SQLSTATE 57P03, cannot_connect_now).
_RESTARTING_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
_RESTARTING_WORDS = ("connection refused", "starting up", "shutting down", "recovery mode")


class _RetryingConnect:
    """``do_connect`` hook: while the server refuses connections because it is restarting,
    connect again with back-off for up to ``retry_s`` seconds; other errors (wrong
    password, missing database) are raised at once."""

    def __init__(self, retry_s: float) -> None:
        self.retry_s = retry_s

    def __call__(self, dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        deadline = time.monotonic() + self.retry_s
        delay_s = 0.1
        while True:
            try:
                return dialect.connect(*cargs, **cparams)
            except dialect.loaded_dbapi.OperationalError as exc:
                if not _restarting(exc) or time.monotonic() + delay_s > deadline:
                    raise
                _log.warning("audit store unreachable (%s); connecting again", _first_line(exc))
            time.sleep(delay_s)
            delay_s = min(2 * delay_s, 2.0)


def _restarting(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in _RESTARTING_SQLSTATES:
        return True
    text_ = str(exc).lower()
    return any(word in text_ for word in _RESTARTING_WORDS)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
