"""What every ``notary`` command shares: the consoles, common options and start-up checks.

Each check prints one ``error:`` line on standard error and ends the command with its
``ExitCode`` (``typer.Exit``), so commands read as a list of checks, then the work.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from connectors.audit import PublishMode
from flows.cli.exit_codes import ExitCode
from flows.settings import MissingApiKey, PipelineSettings, TaskRunnerUnavailable

__all__ = [
    "BlockTime",
    "DataDir",
    "MetricsPort",
    "ModeOption",
    "check_api_key",
    "check_task_runner",
    "console",
    "err",
    "fail",
    "fail_unreachable",
    "pipeline_settings",
]

#: Width of the consoles when their output is not a terminal and ``COLUMNS`` is not set
#: (a log file, a pipe, cron): rich's 80 columns would wrap the paths, hashes and table
#: rows that scripts read back. Tables stay only as wide as their content.
PIPED_WIDTH = 240


class CliConsole(Console):
    """A rich console that is ``PIPED_WIDTH`` columns wide when neither its output is a
    terminal nor ``COLUMNS`` gives a width; otherwise rich decides, at each print (so a
    test runner's ``COLUMNS`` and captured streams still count)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or shutil.get_terminal_size(fallback=(0, 0)).columns:
            return size
        return ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self.width, self.height = new_size  # as rich's own setter does


#: Rich consoles: results on standard output, errors and notes on standard error. They
#: look up ``sys.stdout`` / ``sys.stderr`` when printing, so test runners capture them.
console = CliConsole()
err = CliConsole(stderr=True)

_SERVICES_HINT = "Are the services running? Start them with `notary up`."

DataDir = Annotated[
    Path, typer.Option("--data-dir", envvar="NOTARY_DATA_DIR", help="Folder of all local data.")
]
MetricsPort = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        min=0,
        max=65535,
        help="Serve /metrics, /health/live and /health/ready on NOTARY_METRICS_HOST "
        "(127.0.0.1) at this port; default NOTARY_METRICS_PORT, else no such server.",
        show_default=False,
    ),
]
ModeOption = Annotated[
    PublishMode | None,
    typer.Option(
        "--mode",
        help="How a new collection publishes: aggregate (one entry per batch of documents), "
        "entry (one commitment entry per document) or clear (path, size and hash in clear, "
        "public). Default NOTARY_PUBLISH_MODE, else aggregate.",
        show_default=False,
    ),
]
BlockTime = Annotated[
    float,
    typer.Option(
        "--block-time", min=0.1, help="Directory block period of the bundled network, seconds."
    ),
]


def pipeline_settings(
    data_dir: Path, *, metrics_port: int | None = None, mode: PublishMode | None = None
) -> PipelineSettings:
    """The pipeline's settings with the command's ``--data-dir`` and, when given,
    ``--metrics-port`` and ``--mode`` (else ``NOTARY_METRICS_PORT`` and
    ``NOTARY_PUBLISH_MODE`` stay in force)."""
    settings = PipelineSettings(data_dir=data_dir)
    given: dict[str, object] = {}
    if metrics_port is not None:
        given["metrics_port"] = metrics_port
    if mode is not None:  # a Literal checked by the command line
        given["publish_mode"] = mode
    return settings.model_copy(update=given) if given else settings


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print ``error: <message>`` (markup escaped) on standard error and exit with ``code``.

    Raises:
        typer.Exit: always, with ``code``.
    """
    err.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code)


def fail_unreachable(exc: Exception, hint: str = _SERVICES_HINT) -> NoReturn:
    """``fail`` with ``UNREACHABLE``: the error of ``exc``, then ``hint`` on a second line
    (by default: start the services with ``notary up``).

    Raises:
        typer.Exit: always, with ``ExitCode.UNREACHABLE``.
    """
    fail(f"{exc}\n{hint}", ExitCode.UNREACHABLE)


def check_api_key(settings: PipelineSettings) -> None:
    """Exit with ``USAGE`` when no publishing API key is configured (or in ``data_dir``)."""
    try:
        settings.resolve_api_key()
    except MissingApiKey as exc:
        fail(str(exc), ExitCode.USAGE)


def check_task_runner(settings: PipelineSettings) -> None:
    """Exit with ``USAGE`` when the configured task runner's package is not installed."""
    try:
        settings.check_task_runner()
    except TaskRunnerUnavailable as exc:
        fail(str(exc), ExitCode.USAGE)
