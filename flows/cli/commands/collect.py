"""``notary collect [--listen]``: move pending notarizations to ``ledger`` and ``anchor``.

Without ``--listen``: one sweep (fetch, verify and store receipts and anchors), then a
table of the stages. With ``--listen``: the callback receiver and the sweep loop until
Ctrl-C; a callback from the publishing API starts a sweep at once.

Exit codes (``ExitCode``): 0 nothing waits and no receipt was rejected; 1 entries still
wait or a receipt was rejected; 2 bad usage (no API key; ``--listen`` without the API's
callback secret or with the receiver's port taken); 3 the services could not be reached.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from flows.cli.commands.watch import stop_on_signals
from flows.cli.common import (
    DataDir,
    MetricsPort,
    check_api_key,
    console,
    err,
    fail_unreachable,
    pipeline_settings,
)
from flows.cli.exit_codes import ExitCode
from flows.settings import MissingCallbackSecret, PipelineSettings

__all__ = ["collect", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``collect`` command to ``app``."""
    app.command("collect")(collect)


def collect(
    collection: Annotated[str | None, typer.Option(help="Only this collection.")] = None,
    data_dir: DataDir = Path(".notary"),
    listen: Annotated[
        bool,
        typer.Option(
            "--listen",
            help="Keep collecting until Ctrl-C: receive the publishing API's callbacks on "
            "NOTARY_CALLBACK_HOST:NOTARY_CALLBACK_PORT (127.0.0.1:8092) and sweep as soon as "
            "one arrives, else with back-off up to NOTARY_COLLECT_INTERVAL_S.",
        ),
    ] = False,
    metrics_port: MetricsPort = None,
) -> None:
    """Move pending notarizations forward: fetch, verify and store receipts and anchors."""
    settings = pipeline_settings(data_dir, metrics_port=metrics_port)
    check_api_key(settings)
    from flows.cli.prefect_server import prepare_prefect

    prepare_prefect(settings)
    if listen:
        raise typer.Exit(_collect_listening(settings, collection))
    from connectors.errors import ConnectorError
    from flows.collect_proofs import collect_proofs

    try:
        result = collect_proofs(settings, collection)
    except ConnectorError as exc:
        fail_unreachable(exc)
    table = Table(title="Stages after the sweep", show_header=False)
    for stage, count in result["stages"].items():
        table.add_row(stage, str(count))
    if result["published"] or result["publish_failed"]:
        console.print(
            f"published {result['published']} documents earlier runs left pending"
            + (f"; {result['publish_failed']} could not be" if result["publish_failed"] else "")
        )
    console.print(
        f"recorded {result['ledger_recorded']} receipts; {result['ledger_waiting']} still waiting"
    )
    if result["failed_writes"]:
        console.print(
            f"{result['failed_writes']} writes given up by the publishing API: now failed, "
            "with the reason (`notary report` lists them)"
        )
    console.print(table)
    waiting = result["ledger_waiting"] or result["receipts_rejected"] or result["publish_failed"]
    raise typer.Exit(ExitCode.INCOMPLETE if waiting else ExitCode.OK)


def _collect_listening(settings: PipelineSettings, collection: str | None) -> ExitCode:
    """``collect --listen``: the receiver plus the sweep loop until Ctrl-C; exit code."""
    from connectors.served_app import ServerStartError
    from flows.collect_proofs import collect_until_stopped, receive_callbacks
    from flows.observability import pipeline_metrics

    if not settings.callback_enabled:
        err.print(
            "[yellow]note:[/yellow] NOTARY_CALLBACK_ENABLED is off: entries published now "
            "carry no callback URL, so sweeps follow the back-off schedule only"
        )
    stop, wake = threading.Event(), threading.Event()
    try:
        with (
            receive_callbacks(settings, lambda _event: wake.set()),
            pipeline_metrics(settings, role="collect") as metrics,
            stop_on_signals(stop, also=wake),
        ):
            console.print(f"receiving callbacks at {settings.callback_url} (Ctrl-C to stop)")

            def on_sweep(result: dict[str, Any], woken: bool) -> None:
                metrics.record_sweep(result, woken)
                _print_sweep(result, woken)

            totals = collect_until_stopped(
                settings, collection, stop=stop, wake=wake, on_sweep=on_sweep
            )
    except (MissingCallbackSecret, ServerStartError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return ExitCode.USAGE
    console.print(
        f"stopped: {totals.sweeps} sweeps ({totals.woken_by_callback} woken by callbacks), "
        f"{totals.ledger_recorded} receipts verified, {totals.anchored} anchored, "
        f"{totals.failed_sweeps} sweeps failed"
    )
    return ExitCode.INCOMPLETE if totals.receipts_rejected else ExitCode.OK


def _print_sweep(result: dict[str, Any], woken: bool) -> None:
    if not (result["ledger_recorded"] or result["anchored"] or result["errors"] or woken):
        return
    cause = "callback" if woken else "tick"
    console.print(
        f"{time.strftime('%H:%M:%S')}  sweep ({cause}): {result['ledger_recorded']} receipts "
        f"verified, {result['ledger_waiting']} waiting; {result['anchored']} anchored"
    )
    for message in result["errors"][:5]:
        err.print(f"[yellow]note:[/yellow] {escape(message)}")
