"""``notary report``: the audit report from the command line (``register(app)`` adds it).

Exit codes (``ExitCode``): 0 nothing wrong; 1 documents failed, are overdue, sit in a block without a
receipt, or a stored receipt did not verify again; 2 bad usage (dates, limits, out folder,
a database that is not an audit store); 3 the audit store or the node could not be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from flows.cli.common import console, err
from flows.cli.exit_codes import ExitCode

_STAGES_WITH_LIMITS = ("pending", "published", "multi_az", "ledger")


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app`` (the ``notary`` Typer application)."""
    app.command(name="report")(report)


def report(
    collection: Annotated[
        str | None, typer.Option(help="Only this collection (default: every collection).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only documents queued at or after this date (YYYY-MM-DD), ISO time (UTC unless a zone is given) or time ago (--since=-7d, -12h, -30m)."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Only documents queued before this time; a date alone includes that whole day."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for report.html and the CSV files [default: <data-dir>/reports/<collection>-<time>]."),
    ] = None,
    data_dir: Annotated[
        Path,
        typer.Option("--data-dir", envvar="NOTARY_DATA_DIR", help="Folder of all local data (holds audit.sqlite unless NOTARY_AUDIT_DB_URL is set)."),
    ] = Path(".notary"),
    sample: Annotated[
        int,
        typer.Option(min=0, help="Stored receipts to re-verify against the node (NOTARY_NODE_URL); 0 skips the node."),
    ] = 50,
    max_wait: Annotated[
        list[str] | None,
        typer.Option("--max-wait", metavar="STAGE=SECONDS", help="Overdue limit for rows at STAGE (pending, published, multi_az, ledger); 'none' for no limit. Repeatable."),
    ] = None,
    proofs: Annotated[
        Path | None,
        typer.Option("--proofs", help="Folder written by `notary proof export --html`: report.html links each anchored document to its bundle and the verification page there."),
    ] = None,
) -> None:  # fmt: skip
    """Write the audit report (HTML + CSV) of a collection and period.

    Exit codes: 0 nothing wrong; 1 documents failed, are overdue, lack a receipt or did not verify again; 2 bad usage; 3 the audit store or the node could not be reached.
    """
    from flows.cli.prefect_server import prepare_prefect
    from flows.settings import PipelineSettings
    from tasks.report import parse_moment

    try:
        parse_moment(since)
        parse_moment(until, end_of_day=True)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--since' / '--until'") from exc
    limits = _limits(max_wait or [])
    settings = PipelineSettings(data_dir=data_dir)
    prepare_prefect(settings)
    summary = _run(
        collection, since, until, out, settings, sample=sample, limits=limits, proofs=proofs
    )
    _print(summary)
    raise typer.Exit(exit_code(summary))


def _limits(items: list[str]) -> dict[str, float | None]:
    limits: dict[str, float | None] = {}
    for item in items:
        stage, sep, value = item.partition("=")
        if not sep or stage not in _STAGES_WITH_LIMITS:
            raise typer.BadParameter(
                f"{item!r}: use STAGE=SECONDS with STAGE one of {', '.join(_STAGES_WITH_LIMITS)}",
                param_hint="'--max-wait'",
            )
        try:
            seconds = None if value.strip().lower() == "none" else float(value)
        except ValueError as exc:
            raise typer.BadParameter(
                f"{item!r}: SECONDS must be a number or 'none'", param_hint="'--max-wait'"
            ) from exc
        if seconds is not None and seconds < 0:
            raise typer.BadParameter(f"{item!r}: SECONDS must be >= 0", param_hint="'--max-wait'")
        limits[stage] = seconds
    return limits


def _run(
    collection: str | None,
    since: str | None,
    until: str | None,
    out: Path | None,
    settings: Any,
    *,
    sample: int,
    limits: dict[str, float | None],
    proofs: Path | None = None,
) -> dict[str, Any]:
    from sqlalchemy.exc import OperationalError

    from connectors.audit import MigrationError
    from flows.audit_report import audit_report

    try:
        return audit_report(
            collection,
            since,
            until,
            None if out is None else str(out),
            settings,
            sample,
            limits,
            proofs_dir=None if proofs is None else str(proofs),
        )
    except OperationalError as exc:
        err.print(
            f"[red]error:[/red] the audit store at {settings.audit_url} could not be used: {escape(str(exc.orig))}"
        )
        err.print("Check NOTARY_AUDIT_DB_URL / --data-dir and that the database server is running.")
        raise typer.Exit(ExitCode.UNREACHABLE) from exc
    except MigrationError as exc:
        err.print(
            f"[red]error:[/red] {escape(str(exc))}\nPoint NOTARY_AUDIT_DB_URL / --data-dir at an audit store."
        )
        raise typer.Exit(ExitCode.USAGE) from exc
    except OSError as exc:
        err.print(
            f"[red]error:[/red] cannot write the report: {escape(str(exc))}\nChoose another folder with --out."
        )
        raise typer.Exit(ExitCode.USAGE) from exc


def exit_code(summary: dict[str, Any]) -> ExitCode:
    """3 when receipts could not be re-verified (node unreachable), 1 when anything is
    wrong (failed, overdue, in a block without receipt, rejected on re-verification), else 0."""
    if summary["reverify_unavailable"]:
        return ExitCode.UNREACHABLE
    wrong = ("failed", "overdue", "without_receipt", "reverify_rejected")
    return ExitCode.INCOMPLETE if any(summary[k] for k in wrong) else ExitCode.OK


def _print(s: dict[str, Any]) -> None:
    table = Table(title=f"Audit report: {s['collection'] or 'all collections'}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("documents", str(s["documents"]))
    for stage, count in s["stages"].items():
        table.add_row(f"  at {stage}", str(count))
    rows = [
        ("failed", s["failed"]),
        ("overdue", s["overdue"]),
        ("in a block without a receipt", s["without_receipt"]),
        ("receipts stored / anchors stored", f"{s['receipts_stored']} / {s['anchors_stored']}"),
        ("re-verified: ok / rejected / unavailable", f"{s['reverify_ok']} / {s['reverify_rejected']} / {s['reverify_unavailable']}"),
    ]  # fmt: skip
    for label, value in rows:
        table.add_row(label, str(value))
    console.print(table)
    console.print(f"report: {s['files']['html']}\nCSV and summary.json in {s['out_dir']}")
    if s["reverify_unavailable"]:
        err.print(
            "[yellow]note:[/yellow] the node could not be reached to re-verify receipts; "
            "start it with `notary up`, set NOTARY_NODE_URL, or pass --sample 0."
        )
    if s["failed"] or s["overdue"] or s["reverify_rejected"] or s["without_receipt"]:
        err.print(f"[yellow]note:[/yellow] see the problems in {s['files']['problems']}")
