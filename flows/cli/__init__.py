"""The ``notary`` command line (``notary = "flows.cli:main"``; also ``python -m flows.cli``).

Layout::

    application.py   the Typer application: every command registered in one place, main()
    commands/        one module per command or command group (``register(app)`` each)
    common.py        consoles, shared options, start-up checks, ``fail``
    exit_codes.py    ``ExitCode``, the exit codes of every command
    run_output.py    the summary table and exit code of a notarization run
    progress.py      progress bars read from the audit store
    signals.py       Ctrl-C: a clean stop first, an abort the second time
    prefect_server.py  the Prefect server ``notary up`` runs, and how commands find it
    proof_check.py   the step-by-step check of ``notary verify``
    proof_export.py  building and writing the proof bundles of ``notary proof export``
    demo_ending.py   the end of ``notary demo``: anchors awaited, proofs exported, a check shown

Only Typer and Rich are imported up front; Prefect, SQLAlchemy and the flows are imported
when a command runs, so ``notary --help`` stays fast.
"""

from __future__ import annotations

from flows.cli.application import app, main

__all__ = ["app", "main"]
