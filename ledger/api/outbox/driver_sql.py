"""Driver-level SQL for the publishing API's hot statements: one template, both drivers.

SQLAlchemy Core costs tens of microseconds of CPU per row in an ``executemany`` (parameter
processing, JSON serialisation through the column type); the statements the API runs for
every accepted write go to the driver directly instead, written once with ``?``
placeholders and turned into the driver's style here.
"""

from __future__ import annotations

from sqlalchemy import Connection

__all__ = ["driver_sql", "marks"]


def driver_sql(connection: Connection, template: str) -> str:
    """``template`` in the driver's parameter style (``?`` for sqlite3, ``%s`` for psycopg).

    ``{json}`` marks a JSON parameter (sent as text; cast on PostgreSQL).
    """
    if connection.dialect.paramstyle == "qmark":
        return template.replace("{json}", "?")
    return template.replace("?", "%s").replace("{json}", "CAST(%s AS JSON)")


def marks(count: int) -> str:
    """``count`` placeholders separated by commas (an ``IN (...)`` list), ``count`` >= 1."""
    return ", ".join("?" * count)
