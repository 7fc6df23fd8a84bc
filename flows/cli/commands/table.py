"""The ``notary table`` command: notarize the new and changed rows of an SQL table.

Registered on the ``notary`` app by ``flows.cli.application`` (``register(app)``). Exit codes
(``ExitCode``) as for ``notary notarize``: 0 success; 1 rows failed or are still waiting for the ledger; 2 bad
usage (URL, table, query, column, missing API key); 3 a database or service could not be
reached. Prefect, SQLAlchemy and the flow are imported only when the command runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.common import (
    DataDir,
    ModeOption,
    check_api_key,
    check_task_runner,
    console,
    err,
    fail,
    fail_unreachable,
    pipeline_settings,
)
from flows.cli.exit_codes import ExitCode
from flows.cli.run_output import print_run_summary, run_exit_code
from flows.settings import PipelineSettings

__all__ = ["register", "table"]


def register(app: typer.Typer) -> None:
    """Add the ``table`` command to ``app``."""
    app.command("table")(table)


def table(
    url: Annotated[
        str,
        typer.Argument(
            envvar="NOTARY_TABLE_URL",
            metavar="URL",
            show_default=False,
            help="SQLAlchemy URL of the database, e.g. sqlite:///shop.db or "
            "postgresql+psycopg://user@host:5432/db (or set NOTARY_TABLE_URL, which keeps "
            "a password out of the process list).",
        ),
    ],
    table_name: Annotated[
        str | None, typer.Option("--table", help="Table to read: NAME or SCHEMA.NAME.")
    ] = None,
    query: Annotated[
        str | None,
        typer.Option("--query", help="A SELECT to read instead of a table (needs --key)."),
    ] = None,
    watermark: Annotated[
        str | None,
        typer.Option(
            "--watermark",
            help="Increasing column: an id (new rows) or an updated-at timestamp (new and "
            "changed rows). Default: the single-column primary key.",
        ),
    ] = None,
    key: Annotated[
        list[str] | None,
        typer.Option(
            "--key",
            help="Key column recorded for each row (repeat or comma-separate for several). "
            "Default: the primary key.",
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(help="Collection (one chain); default: table:<url without password>#<table>."),
    ] = None,
    data_dir: DataDir = Path(".notary"),
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Do not wait for the ledger stage.")
    ] = False,
    mode: ModeOption = None,
) -> None:
    """Notarize the rows of a table added or changed since the last run.

    Each row is hashed as canonical JSON (RFC 8785); only its key, hash and size are recorded, and only a commitment to them goes to the ledger (in --mode clear: the key, hash and size themselves). The position reached is kept in the audit store, so the next run continues after it. Start the services first with `notary up`.
    """
    if (table_name is None) == (query is None):
        fail("give exactly one of --table and --query", ExitCode.USAGE)
    key_columns = [k.strip() for item in key or [] for k in item.split(",") if k.strip()]
    settings = pipeline_settings(data_dir, mode=mode)
    check_api_key(settings)
    check_task_runner(settings)
    from flows.cli.prefect_server import prepare_prefect

    prepare_prefect(settings)
    source = dict(
        table=table_name, query=query, watermark=watermark, key_columns=key_columns or None
    )
    name = collection or _check_source(url, source)
    summary = _run_flow(url, source, name, settings, wait=not no_wait)
    _print_summary(summary)
    raise typer.Exit(run_exit_code(summary))


def _check_source(url: str, source: dict[str, Any]) -> str:
    """Open the source once to report a bad URL, table or column before Prefect starts;
    returns the default collection name."""
    from connectors.table_source import SourceConfigError, SourceUnreachable, TableSource

    try:
        with TableSource.connect(url, **source) as checked:
            return checked.name
    except SourceUnreachable as exc:
        fail_unreachable(exc, "Is the database server running and the URL right?")
    except SourceConfigError as exc:
        fail(str(exc), ExitCode.USAGE)


def _run_flow(
    url: str, source: dict[str, Any], name: str, settings: PipelineSettings, *, wait: bool
) -> dict[str, Any]:
    from pydantic import SecretStr

    from connectors.audit import CollectionModeError
    from connectors.errors import ConnectorError
    from connectors.table_source import SourceUnreachable, TableSourceError
    from flows.cli.progress import watch_collection
    from flows.notarize_table import notarize_table
    from tasks.row_hashing import UnsupportedValue

    start = time.perf_counter()
    try:
        with watch_collection(settings.audit_url, name, console=console):
            summary = notarize_table(
                SecretStr(url),
                collection=name,
                settings=settings,
                wait_for_ledger_stage=wait,
                **source,
            )
    except (ConnectorError, SourceUnreachable) as exc:
        fail_unreachable(exc)
    except UnsupportedValue as exc:
        fail(
            f"{exc}; read the table through --query, casting or leaving out the column",
            ExitCode.USAGE,
        )
    except (TableSourceError, CollectionModeError) as exc:
        fail(str(exc), ExitCode.USAGE)
    summary["wall_seconds"] = round(time.perf_counter() - start, 2)
    return summary


def _print_summary(s: dict[str, Any]) -> None:
    print_run_summary(
        s,
        console,
        seen_label="rows read (new or changed)",
        bytes_label="canonical JSON bytes hashed",
        unit="rows",
    )
    if s["documents_seen"] == 0:
        console.print("No new or changed rows since the last run.")
    for message in s["errors"][:10]:
        err.print(f"[yellow]note:[/yellow] {message}")
