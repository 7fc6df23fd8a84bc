"""``notary notarize FOLDER``: one batch through running services.

Exit codes (``ExitCode``): 0 every file notarized (and, unless ``--no-wait``, in a
directory block with its receipt verified); 1 files failed or still wait (``notary
collect`` finishes those); 2 bad usage (not a folder, no API key, task runner missing);
3 the services could not be reached.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

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
from flows.cli.run_output import print_refused_note, print_run_summary, run_exit_code
from flows.settings import PipelineSettings

__all__ = ["notarize", "register", "run_folder_flow"]


def register(app: typer.Typer) -> None:
    """Add the ``notarize`` command to ``app``."""
    app.command("notarize")(notarize)


def notarize(
    folder: Annotated[Path, typer.Argument(help="Folder to notarize (recursive).")],
    collection: Annotated[
        str | None, typer.Option(help="Collection (one chain); default: the folder's path.")
    ] = None,
    data_dir: DataDir = Path(".notary"),
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Do not wait for the ledger stage.")
    ] = False,
    mode: ModeOption = None,
) -> None:
    """Notarize FOLDER through running services (start them with `notary up`)."""
    settings = pipeline_settings(data_dir, mode=mode)
    summary = run_folder_flow(folder, collection, settings, wait=not no_wait)
    raise typer.Exit(run_exit_code(summary))


def run_folder_flow(
    folder: Path, collection: str | None, settings: PipelineSettings, *, wait: bool
) -> dict[str, Any]:
    """Check the arguments, run ``notarize_folder`` with progress bars, print the summary.

    Returns:
        the run summary (``RunSummary.as_dict()`` plus ``wall_seconds``).

    Raises:
        typer.Exit: ``USAGE`` (not a folder, no API key, task runner missing) or
            ``UNREACHABLE`` (a service could not be reached).
    """
    if not folder.is_dir():
        fail(f"{folder} is not a folder", ExitCode.USAGE)
    check_api_key(settings)
    check_task_runner(settings)
    from flows.cli.prefect_server import prepare_prefect

    prepare_prefect(settings)
    from connectors.audit import CollectionModeError
    from connectors.errors import ConnectorError
    from flows.cli.progress import watch_collection
    from flows.notarize_folder import notarize_folder

    name = collection or str(folder.resolve())
    start = time.perf_counter()
    try:
        with watch_collection(settings.audit_url, name, console=console):
            summary = notarize_folder(str(folder), name, settings, wait)
    except ConnectorError as exc:
        fail_unreachable(exc)
    except CollectionModeError as exc:
        fail(str(exc), ExitCode.USAGE)
    summary["wall_seconds"] = round(time.perf_counter() - start, 2)
    _print_summary(summary)
    return summary


def _print_summary(s: dict[str, Any]) -> None:
    print_run_summary(s, console, seen_label="files seen", unit="files")
    if s["queued"] == 0 and s["documents_seen"]:
        if s["published_for_other_runs"]:
            console.print(
                f"No new files; finished publishing {s['published_for_other_runs']} that an "
                "earlier, interrupted run (or one running now) had left pending."
            )
        else:
            console.print(
                "Nothing new to publish: every file is already notarized in this collection."
            )
    for message in s["errors"][:10]:
        err.print(f"[yellow]note:[/yellow] {escape(message)}")
    print_refused_note(s, err)
