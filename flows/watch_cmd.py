"""``notary watch``: notarize files dropped into folders until Ctrl-C.

Registered on the main app by ``flows.cli`` (``register(app)``). Exit codes are those of
``flows.cli``: 0 stopped cleanly with nothing failed; 1 some files failed to hash or publish
(they stay pending in the audit store); 2 bad usage or configuration; 3 the services could
not be reached at startup. The first Ctrl-C (or SIGTERM) stops after the current batch; a
second one aborts at once (exit 130, like every ``notary`` command).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from flows.settings import MissingApiKey, PipelineSettings

__all__ = ["register", "stop_on_signals", "watch"]

# the codes of flows.cli (not imported: flows.cli imports this module)
EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # what flows.cli.main returns on KeyboardInterrupt

console = Console()
err = Console(stderr=True)


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
    data_dir: Annotated[
        Path, typer.Option("--data-dir", envvar="NOTARY_DATA_DIR", help="Folder of all local data.")
    ] = Path(".notary"),
) -> None:
    """Watch FOLDER... and notarize every complete new or changed file until Ctrl-C.

    Files already there are notarized first (known ones are skipped). Hidden files,
    '*.part', '*.swp', '*.tmp' and '~$*' are ignored; symlinks are never followed. The
    ledger stage is left to `notary collect` (or the scheduled collector).
    """
    for folder in folders:
        if not folder.is_dir():
            err.print(f"[red]error:[/red] {folder} is not a folder")
            raise typer.Exit(EXIT_USAGE)
    settings = PipelineSettings(data_dir=data_dir)
    try:
        settings.resolve_api_key()
    except MissingApiKey as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc
    from flows.prefect_server import prepare_prefect

    prepare_prefect(settings)
    totals = _watch(folders, collection, settings, settle_s=settle, done_dir=done_dir)
    _print_totals(totals)
    if totals["interrupted"]:
        raise typer.Exit(EXIT_INTERRUPTED)
    failed = totals["publish_failed"] or totals["hash_errors"]
    raise typer.Exit(EXIT_INCOMPLETE if failed else EXIT_OK)


def _watch(
    folders: list[Path],
    collection: str | None,
    settings: PipelineSettings,
    *,
    settle_s: float,
    done_dir: Path | None,
) -> dict[str, Any]:
    from connectors.errors import ConnectorError
    from flows.watch_folder import watch_folder

    stop = threading.Event()
    shown = ", ".join(str(f) for f in folders)
    console.print(f"watching {shown} (Ctrl-C to stop)")
    try:
        with stop_on_signals(stop):
            return watch_folder(
                folders,
                collection,
                settings,
                settle_s=settle_s,
                done_dir=done_dir,
                stop_event=stop,
                on_batch_result=_print_batch,
            )
    except ConnectorError as exc:
        err.print(
            f"[red]error:[/red] {exc}\nAre the services running? Start them with `notary up`."
        )
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    except ValueError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc


@contextmanager
def stop_on_signals(
    stop: threading.Event, *, also: threading.Event | None = None
) -> Iterator[None]:
    """First SIGINT/SIGTERM sets ``stop`` (and ``also``, to end a wait on it); a second
    SIGINT raises ``KeyboardInterrupt``. Only in the main thread (elsewhere: no effect)."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        if also is not None:
            also.set()
        err.print("stopping after the current step… (Ctrl-C again to abort)")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _print_batch(root: Path, result: dict[str, Any]) -> None:
    moment = time.strftime("%H:%M:%S")
    line = (
        f"{moment}  {root}: {result['documents_seen']} files, {result['published']} published, "
        f"{result['skipped_known']} already notarized"
    )
    failed = result["publish_failed"] + result["hash_errors"]
    console.print(line + (f", [yellow]{failed} failed[/yellow]" if failed else ""))
    for message in result["errors"][:5]:
        err.print(f"[yellow]note:[/yellow] {message}")


def _print_totals(totals: dict[str, Any]) -> None:
    console.print(
        f"stopped: {totals['batches']} batches, {totals['files']} files, "
        f"{totals['published']} published, {totals['skipped_known']} already notarized, "
        f"{totals['moved']} moved, {totals['publish_failed'] + totals['hash_errors']} failed"
    )
    if totals["published"]:
        console.print("Run `notary collect` later to fetch and verify their receipts.")
