"""``notary watch``: notarize files dropped into folders until Ctrl-C.

Registered on the ``notary`` app by ``flows.cli.application`` (``register(app)``). Exit codes
(``ExitCode``): 0 stopped cleanly with nothing failed; 1 some files failed to hash or
publish (they stay pending in the audit store); 2 bad usage or configuration; 3 the services
could not be reached at startup. The first Ctrl-C (or SIGTERM) stops after the current
batch; a second one aborts at once (exit 130, like every ``notary`` command).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from flows.cli.common import (
    DataDir,
    MetricsPort,
    ModeOption,
    check_api_key,
    console,
    err,
    fail,
    fail_unreachable,
    pipeline_settings,
)
from flows.cli.exit_codes import ExitCode
from flows.cli.signals import stop_on_signals
from flows.settings import PipelineSettings

__all__ = ["register", "watch"]


def register(app: typer.Typer) -> None:
    """Add the ``watch`` command to the ``notary`` app."""
    app.command("watch")(watch)


def watch(
    folders: Annotated[
        list[Path],
        typer.Argument(
            metavar="FOLDER", help="Drop folders to watch (recursive).", show_default=False
        ),
    ],
    collection: Annotated[
        str | None,
        typer.Option(help="Collection (one chain) for all folders; default: each folder's path."),
    ] = None,
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            min=0.0,
            help="Seconds a file's size and time must stay unchanged before it counts as "
            "complete (when no close-after-write event is seen).",
        ),
    ] = 2.0,
    done_dir: Annotated[
        Path | None,
        typer.Option(
            "--done-dir",
            help="Move each file here once its notarization is published (relative: inside "
            "each folder, e.g. 'done'). Default: leave files in place.",
        ),
    ] = None,
    data_dir: DataDir = Path(".notary"),
    metrics_port: MetricsPort = None,
    mode: ModeOption = None,
) -> None:
    """Watch FOLDER... and notarize every complete new or changed file until Ctrl-C.

    Files already there are notarized first (known ones are skipped). Hidden files,
    '*.part', '*.swp', '*.tmp' and '~$*' are ignored; symlinks are never followed. The
    ledger stage is left to `notary collect` (or the scheduled collector).
    """
    for folder in folders:
        if not folder.is_dir():
            fail(f"{folder} is not a folder", ExitCode.USAGE)
    settings = pipeline_settings(data_dir, metrics_port=metrics_port, mode=mode)
    check_api_key(settings)
    from flows.cli.prefect_server import prepare_prefect

    prepare_prefect(settings)
    totals = _watch(folders, collection, settings, settle_s=settle, done_dir=done_dir)
    _print_totals(totals)
    if totals["interrupted"]:
        raise typer.Exit(ExitCode.INTERRUPTED)
    failed = totals["publish_failed"] or totals["hash_errors"]
    raise typer.Exit(ExitCode.INCOMPLETE if failed else ExitCode.OK)


def _watch(
    folders: list[Path],
    collection: str | None,
    settings: PipelineSettings,
    *,
    settle_s: float,
    done_dir: Path | None,
) -> dict[str, Any]:
    from connectors.errors import ConnectorError
    from connectors.served_app import ServerStartError
    from flows.observability import pipeline_metrics
    from flows.watch_folder import watch_folder

    stop = threading.Event()
    shown = ", ".join(str(f) for f in folders)
    console.print(f"watching {shown} (Ctrl-C to stop)")
    try:
        with pipeline_metrics(settings, role="watch") as metrics, stop_on_signals(stop):

            def on_batch(root: Path, result: dict[str, Any]) -> None:
                metrics.record_batch(result)
                _print_batch(root, result)

            return watch_folder(
                folders,
                collection,
                settings,
                settle_s=settle_s,
                done_dir=done_dir,
                stop_event=stop,
                on_batch_result=on_batch,
            )
    except ConnectorError as exc:
        fail_unreachable(exc)
    except ServerStartError as exc:
        fail(str(exc), ExitCode.USAGE)
    except ValueError as exc:
        fail(str(exc), ExitCode.USAGE)


def _print_batch(root: Path, result: dict[str, Any]) -> None:
    moment = time.strftime("%H:%M:%S")
    line = (
        f"{moment}  {root}: {result['documents_seen']} files, {result['published']} published, "
        f"{result['skipped_known']} already notarized, {_spent(result)}"
        + _for_others(result["published_for_other_runs"])
    )
    failed = result["publish_failed"] + result["hash_errors"]
    console.print(line + (f", [yellow]{failed} failed[/yellow]" if failed else ""))
    for message in result["errors"][:5]:
        err.print(f"[yellow]note:[/yellow] {escape(message)}")


def _print_totals(totals: dict[str, Any]) -> None:
    console.print(
        f"stopped: {totals['batches']} batches, {totals['files']} files, "
        f"{totals['published']} published, {totals['skipped_known']} already notarized, "
        f"{totals['moved']} moved, {totals['publish_failed'] + totals['hash_errors']} failed, "
        f"{_spent(totals)}" + _for_others(totals["published_for_other_runs"])
    )
    if totals["published"] or totals["published_for_other_runs"]:
        console.print("Run `notary collect` later to fetch and verify their receipts.")


def _spent(counts: dict[str, Any]) -> str:
    """The ledger entries written and the entry credits they cost, as words."""
    return f"ledger entries written: {counts['entries_written']} ({counts['entry_credits']} EC)"


def _for_others(published: int) -> str:
    """The part of a line about notarizations finished for earlier batches or other runs."""
    return f", {published} left pending earlier now published" if published else ""
