"""The ``notary`` command line.

Exit codes scripts can rely on: 0 success; 1 the run finished with documents that failed
or are still waiting; 2 bad usage or configuration; 3 a service could not be reached.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.run_output import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    print_run_summary,
    run_exit_code,
)
from flows.settings import MissingApiKey, PipelineSettings, quiet_prefect_defaults

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


def _stack(data_dir: Path, block_time: float, host: str = "127.0.0.1") -> Any:
    from ledger.stack import Stack, StackSettings

    return Stack(StackSettings(data_dir=data_dir, block_time_s=block_time, host=host))


@app.command()
def up(
    data_dir: DataDir = Path(".notary"),
    block_time: BlockTime = 2.0,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
) -> None:
    """Run the bundled node (8088), wallet (8089), publishing API (8090) and anchoring
    service (8091) until Ctrl-C."""
    stack = _stack(data_dir, block_time, host)
    stack.prepare()
    s = stack.settings
    console.print(
        f"node    {s.node_url}\nwallet  {s.wallet_url}\napi     {s.api_url}\nanchor  {s.anchor_url}"
    )
    console.print(f"API key in {stack.api_key_file}; block time {block_time} s")
    console.print("Ctrl-C stops the services.")

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stack.serve(stop)

    try:
        asyncio.run(run())
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    console.print("stopped")


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
) -> None:
    """Move pending notarizations forward once: fetch, verify and store receipts."""
    settings = PipelineSettings(data_dir=data_dir)
    _check_key(settings)
    quiet_prefect_defaults(settings.data_dir)
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
        err.print(f"[red]error:[/red] {exc}")
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
    quiet_prefect_defaults(settings.data_dir)
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
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc


def _print_summary(s: dict[str, Any]) -> None:
    print_run_summary(s, console)
    if s["queued"] == 0 and s["files_seen"]:
        console.print("Nothing new to publish: every file is already notarized in this collection.")
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
