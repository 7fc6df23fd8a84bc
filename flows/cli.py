"""The ``notary`` command line.

Exit codes scripts can rely on: 0 success; 1 the run finished with documents that failed
or are still waiting; 2 bad usage or configuration; 3 a service could not be reached.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from flows.run_output import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    print_run_summary,
    run_exit_code,
)
from flows.settings import (
    MissingApiKey,
    MissingCallbackSecret,
    PipelineSettings,
    TaskRunnerUnavailable,
)

if TYPE_CHECKING:
    from flows.prefect_server import PrefectServer
    from ledger.stack import Stack

app = typer.Typer(
    name="notary",
    help="Notarize files on a Factom-compatible ledger and keep verified receipts in an SQL audit store.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err = Console(stderr=True)


DataDir = Annotated[
    Path, typer.Option("--data-dir", envvar="NOTARY_DATA_DIR", help="Folder of all local data.")
]
BlockTime = Annotated[
    float,
    typer.Option(
        "--block-time", min=0.1, help="Directory block period of the bundled network, seconds."
    ),
]


def _stack(data_dir: Path, block_time: float, host: str = "127.0.0.1") -> Stack:
    from ledger.stack import Stack, StackSettings

    return Stack(StackSettings(data_dir=data_dir, block_time_s=block_time, host=host))


@app.command()
def up(
    data_dir: DataDir = Path(".notary"),
    block_time: BlockTime = 2.0,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    prefect: Annotated[
        bool,
        typer.Option(
            "--prefect/--no-prefect",
            help="Also run a Prefect server that `notary notarize`, `collect`, `table` and "
            "`watch` use instead of starting a temporary one each time.",
        ),
    ] = True,
    prefect_port: Annotated[int, typer.Option(help="Port of that Prefect server.")] = 4200,
) -> None:
    """Run the bundled node (8088), wallet (8089), publishing API (8090) and anchoring
    service (8091), and a Prefect server (4200), until Ctrl-C."""
    from flows.prefect_server import PrefectServer

    stack = _stack(data_dir, block_time, host)
    stack.prepare()
    secret_file = export_callback_secret(stack)
    s = stack.settings
    console.print(
        f"node    {s.node_url}\nwallet  {s.wallet_url}\napi     {s.api_url}\nanchor  {s.anchor_url}"
    )
    console.print(f"API key in {stack.api_key_file}; callback secret in {secret_file}")
    console.print(f"block time {block_time} s. Ctrl-C stops the services.")
    server = None
    if prefect:
        settings = PipelineSettings(data_dir=data_dir)
        server = PrefectServer(
            data_dir, settings.prefect_api_url_file, host=host, port=prefect_port
        )
        try:
            server.launch()
        except RuntimeError as exc:
            err.print(f"[yellow]note:[/yellow] no Prefect server started: {exc}")
            server = None
    try:
        asyncio.run(_serve_stack(stack, server))
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    finally:
        if server is not None:
            server.stop()
    console.print("stopped")


async def _serve_stack(stack: Stack, prefect_server: PrefectServer | None) -> None:
    """Serve the stack until SIGINT/SIGTERM; report the Prefect server once it answers."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if prefect_server is not None:
        # A daemon thread, not the loop's executor: stopping must not wait for it.
        threading.Thread(target=_announce_prefect, args=(prefect_server,), daemon=True).start()
    await stack.serve(stop)


def _announce_prefect(server: PrefectServer) -> None:
    try:
        url = server.wait_ready()
    except RuntimeError as exc:
        if server.launched:
            err.print(f"[yellow]note:[/yellow] {exc}; commands will use temporary servers")
        return
    console.print(f"prefect {url} (UI {url.removesuffix('/api')}), used by the other commands")


def export_callback_secret(stack: Stack) -> Path:
    """Write the bundled API's callback HMAC key to ``<data_dir>/callback-secret`` (mode
    0600), where the callback receiver of ``notary collect --listen`` reads it."""
    import os

    from ledger.api.db import Database
    from ledger.api.services import load_callback_secret

    api = stack.api_settings()
    db = Database(api.resolved_database_url())
    try:
        secret = load_callback_secret(db, api)
    finally:
        db.dispose()
    path = PipelineSettings(data_dir=stack.settings.data_dir).callback_secret_file
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(secret + b"\n")
    return path


@app.command()
def notarize(
    folder: Annotated[Path, typer.Argument(help="Folder to notarize (recursive).")],
    collection: Annotated[
        str | None, typer.Option(help="Collection (one chain); default: the folder's path.")
    ] = None,
    data_dir: DataDir = Path(".notary"),
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Do not wait for the ledger stage.")
    ] = False,
) -> None:
    """Notarize FOLDER through running services (start them with `notary up`)."""
    settings = PipelineSettings(data_dir=data_dir)
    summary = _run_flow(folder, collection, settings, wait=not no_wait)
    raise typer.Exit(run_exit_code(summary))


@app.command()
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
) -> None:
    """Move pending notarizations forward: fetch, verify and store receipts and anchors."""
    settings = PipelineSettings(data_dir=data_dir)
    _check_key(settings)
    _prepare_prefect(settings)
    if listen:
        raise typer.Exit(_collect_listening(settings, collection))
    from connectors.errors import ConnectorError
    from flows.collect_proofs import collect_proofs

    try:
        result = collect_proofs(settings, collection)
    except ConnectorError as exc:
        err.print(
            f"[red]error:[/red] {exc}\nAre the services running? Start them with `notary up`."
        )
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    table = Table(title="Stages after the sweep", show_header=False)
    for stage, count in result["stages"].items():
        table.add_row(stage, str(count))
    console.print(
        f"recorded {result['ledger_recorded']} receipts; {result['ledger_waiting']} still waiting"
    )
    console.print(table)
    waiting = result["ledger_waiting"] or result["receipts_rejected"]
    raise typer.Exit(EXIT_INCOMPLETE if waiting else EXIT_OK)


def _collect_listening(settings: PipelineSettings, collection: str | None) -> int:
    """``collect --listen``: the receiver plus the sweep loop until Ctrl-C; exit code."""
    from connectors.callback_receiver import ReceiverStartError
    from flows.collect_proofs import collect_until_stopped, receive_callbacks
    from flows.watch_cmd import stop_on_signals

    if not settings.callback_enabled:
        err.print(
            "[yellow]note:[/yellow] NOTARY_CALLBACK_ENABLED is off: entries published now "
            "carry no callback URL, so sweeps follow the back-off schedule only"
        )
    stop, wake = threading.Event(), threading.Event()
    try:
        with (
            receive_callbacks(settings, lambda _event: wake.set()),
            stop_on_signals(stop, also=wake),
        ):
            console.print(f"receiving callbacks at {settings.callback_url} (Ctrl-C to stop)")
            totals = collect_until_stopped(
                settings, collection, stop=stop, wake=wake, on_sweep=_print_sweep
            )
    except (MissingCallbackSecret, ReceiverStartError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return EXIT_USAGE
    console.print(
        f"stopped: {totals.sweeps} sweeps ({totals.woken_by_callback} woken by callbacks), "
        f"{totals.ledger_recorded} receipts verified, {totals.anchored} anchored, "
        f"{totals.failed_sweeps} sweeps failed"
    )
    return EXIT_INCOMPLETE if totals.receipts_rejected else EXIT_OK


def _print_sweep(result: dict[str, Any], woken: bool) -> None:
    if not (result["ledger_recorded"] or result["anchored"] or result["errors"] or woken):
        return
    cause = "callback" if woken else "tick"
    console.print(
        f"{time.strftime('%H:%M:%S')}  sweep ({cause}): {result['ledger_recorded']} receipts "
        f"verified, {result['ledger_waiting']} waiting; {result['anchored']} anchored"
    )
    for message in result["errors"][:5]:
        err.print(f"[yellow]note:[/yellow] {message}")


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="The document to check.")],
    proof: Annotated[Path, typer.Option("--proof", help="Its proof bundle (JSON).")],
) -> None:
    """Check FILE against its proof bundle offline, step by step (no service needed).

    Exit code 0 only when every step holds; 1 when a step fails; 2 when a file cannot be read.
    """
    from flows.verify_cmd import verify_command

    raise typer.Exit(verify_command(file, proof))


proof_app = typer.Typer(help="Proof bundles: one JSON file per document, verifiable offline.")
app.add_typer(proof_app, name="proof")


@proof_app.command("export")
def proof_export(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the bundles to.")] = Path(
        "proofs"
    ),
    collection: Annotated[str | None, typer.Option(help="Only this collection.")] = None,
    data_dir: DataDir = Path(".notary"),
) -> None:
    """Write a verified proof bundle for every anchored document of the audit store."""
    settings = PipelineSettings(data_dir=data_dir)
    _check_key(settings)
    from connectors.errors import ConnectorError
    from flows.pipeline import open_services
    from flows.proof_export import export_bundles

    try:
        with open_services(settings) as services:
            outcome = export_bundles(services, out, collection=collection)
    except ConnectorError as exc:
        err.print(
            f"[red]error:[/red] {exc}\nAre the services running? Start them with `notary up`."
        )
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    console.print(f"wrote {len(outcome.written)} bundles to {out}")
    if outcome.not_anchored:
        console.print(
            f"{outcome.not_anchored} documents are not anchored yet (run `notary collect`)"
        )
    for message in outcome.failed[:10]:
        err.print(f"[red]failed:[/red] {message}")
    raise typer.Exit(EXIT_INCOMPLETE if outcome.failed or outcome.not_anchored else EXIT_OK)


@app.command()
def demo(
    folder: Annotated[Path, typer.Argument(help="Folder to notarize.")] = Path("/usr/share/doc"),
    data_dir: DataDir = Path(".notary"),
    block_time: BlockTime = 2.0,
) -> None:
    """Start the bundled stack, notarize FOLDER end to end, print a summary, stop."""
    from ledger.stack import StackThread

    stack = _stack(data_dir, block_time)
    stack.prepare()
    thread = StackThread(stack)
    console.print(f"starting node, wallet and publishing API (block time {block_time} s)…")
    try:
        thread.start()
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    try:
        s = stack.settings
        settings = PipelineSettings(
            data_dir=data_dir, api_url=s.api_url, node_url=s.node_url, anchor_url=s.anchor_url
        )
        summary = _run_flow(folder, None, settings, wait=True)
    finally:
        thread.stop()
    raise typer.Exit(run_exit_code(summary))


def _run_flow(
    folder: Path, collection: str | None, settings: PipelineSettings, *, wait: bool
) -> dict[str, Any]:
    if not folder.is_dir():
        err.print(f"[red]error:[/red] {folder} is not a folder")
        raise typer.Exit(EXIT_USAGE)
    _check_key(settings)
    _check_task_runner(settings)
    _prepare_prefect(settings)
    from connectors.errors import ConnectorError
    from flows.notarize_folder import notarize_folder
    from flows.progress import watch_collection

    name = collection or str(folder.resolve())
    start = time.perf_counter()
    try:
        with watch_collection(settings.audit_url, name, console=console):
            summary = notarize_folder(str(folder), name, settings, wait)
    except ConnectorError as exc:
        err.print(
            f"[red]error:[/red] {exc}\nAre the services running? Start them with `notary up`."
        )
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    summary["wall_seconds"] = round(time.perf_counter() - start, 2)
    _print_summary(summary)
    return summary


def _check_key(settings: PipelineSettings) -> None:
    try:
        settings.resolve_api_key()
    except MissingApiKey as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc


def _check_task_runner(settings: PipelineSettings) -> None:
    try:
        settings.check_task_runner()
    except TaskRunnerUnavailable as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc


def _prepare_prefect(settings: PipelineSettings) -> None:
    from flows.prefect_server import prepare_prefect

    prepare_prefect(settings)


def _print_summary(s: dict[str, Any]) -> None:
    print_run_summary(s, console, seen_label="files seen")
    if s["queued"] == 0 and s["documents_seen"]:
        if s["published"]:
            console.print(
                f"No new files; finished publishing {s['published']} that an earlier, "
                "interrupted run had left pending."
            )
        else:
            console.print(
                "Nothing new to publish: every file is already notarized in this collection."
            )
    for message in s["errors"][:10]:
        err.print(f"[yellow]note:[/yellow] {message}")


def _register_sources() -> None:
    from flows.accounts_cmd import register as register_accounts
    from flows.report_cmd import register as register_report
    from flows.table_cmd import register as register_table
    from flows.watch_cmd import register as register_watch

    register_watch(app)
    register_table(app)
    register_report(app)
    register_accounts(app)


_register_sources()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
