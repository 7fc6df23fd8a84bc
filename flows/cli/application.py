"""The ``notary`` Typer application: every command, registered in one place.

Each command lives in its own module of ``flows.cli.commands`` and adds itself with
``register(app)``; this module only composes them and runs the application. Exit codes are
``flows.cli.exit_codes.ExitCode`` (0 success; 1 documents failed or still waiting; 2 bad
usage or configuration; 3 a service could not be reached; 130 Ctrl-C).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from flows.cli.commands import (
    accounts,
    backup,
    collect,
    demo,
    notarize,
    proof,
    report,
    stack,
    table,
    verify,
    wallet,
    watch,
)
from flows.cli.common import err, fail
from flows.cli.exit_codes import ExitCode
from ledger.secret_file import OWNER_ONLY_UMASK

__all__ = ["app", "build_app", "main"]


def build_app() -> typer.Typer:
    """A ``notary`` application with every command (``notary --help`` lists them in this
    order: the stack, the runs, offline checks, the sources, then the command groups)."""
    application = typer.Typer(
        name="notary",
        help="Notarize files on a Factom-compatible ledger and keep verified receipts in an SQL audit store.",
        no_args_is_help=True,
        add_completion=False,
    )
    application.callback()(log_options)
    commands = (
        stack,
        demo,
        notarize,
        collect,
        verify,
        watch,
        table,
        report,
        backup,
        proof,
        accounts,
        wallet,
    )
    for module in commands:
        module.register(application)
    return application


def log_options(
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            help="Log lines as 'text' (people) or 'json' (log collectors), one line per "
            "event; default NOTARY_LOG_FORMAT, else text.",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            help="Least level logged (debug, info, warning, error); default "
            "NOTARY_LOG_LEVEL, else warning.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Options before the command: how log lines are written (``flows.cli.logs``).

    Every command creates its files owner-only (umask 077: files 0600, folders 0700,
    docs/security.md): the data folder's databases with SQLite's ``-wal`` and ``-shm``
    files, Prefect's database and logs, the proofs.
    """
    from flows.cli.logs import configure_cli_logging

    os.umask(OWNER_ONLY_UMASK)
    try:
        configure_cli_logging(log_format, log_level)
    except ValueError as exc:
        fail(str(exc), ExitCode.USAGE)


app = build_app()


def main() -> None:
    """Console-script entry point (``notary = "flows.cli:main"``); Ctrl-C exits with 130."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
