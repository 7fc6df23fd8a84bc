"""``notary verify FILE --proof BUNDLE``: the offline check of one file against its proof.

The check itself is ``flows.cli.proof_check.verify_command`` (imported when the command
runs, so ``notary --help`` does not load the verifier). Exit codes (``ExitCode``): 0 every
step holds; 1 a step failed; 2 the file or the bundle cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register", "verify"]


def register(app: typer.Typer) -> None:
    """Add the ``verify`` command to ``app``."""
    app.command("verify")(verify)


def verify(
    file: Annotated[Path, typer.Argument(help="The document to check.")],
    proof: Annotated[Path, typer.Option("--proof", help="Its proof bundle (JSON).")],
    tsa_ca: Annotated[
        Path | None,
        typer.Option(
            "--tsa-ca",
            help="PEM file of the CA(s) you trust for RFC 3161 timestamp tokens: each token "
            "of the bundle is checked offline against it (without: listed, not checked).",
        ),
    ] = None,
) -> None:
    """Check FILE against its proof bundle offline, step by step (no service needed).

    Exit code 0 only when every step holds; 1 when a step fails; 2 when a file cannot be read.
    """
    from flows.cli.proof_check import load_tsa_trust, verify_command

    raise typer.Exit(verify_command(file, proof, tsa_trust=load_tsa_trust(tsa_ca)))
