"""``notary verify FILE --proof BUNDLE [--policy NAME|FILE]``: the offline check of one
file against its proof, under a named trust policy.

The check itself is ``flows.cli.proof_check.verify_command`` (imported when the command
runs, so ``notary --help`` does not load the verifier). Exit codes (``ExitCode``): 0 every
step holds; 1 a step failed (or a token or an OpenTimestamps proof did); 2 the file or
the bundle cannot be read.
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
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="Trust policy: a shipped name (bitcoin-mainnet, bitcoin-testnet,"
            " bitcoin-signet, bitcoin-regtest, litecoin-mainnet, litecoin-regtest, devnet) or"
            " a policy file (JSON). Default: the shipped policy the bundle's chain names,"
            " printed as assumed.",
        ),
    ] = None,
    tsa_ca: Annotated[
        Path | None,
        typer.Option(
            "--tsa-ca",
            help="PEM file of the CA(s) you trust for RFC 3161 timestamp tokens: each token "
            "of the bundle is checked offline against it (without: listed, not checked).",
        ),
    ] = None,
) -> None:
    """Check FILE against its proof bundle offline, step by step (no service needed), then
    list every anchor (the chain, RFC 3161 tokens, OpenTimestamps proofs) with the time it
    bounds and the overall date.

    Exit code 0 only when every step holds; 1 when a step fails, a token fails under
    --tsa-ca or an OpenTimestamps proof is invalid; 2 when a file, the bundle or the
    policy cannot be read.
    """
    from flows.cli.exit_codes import ExitCode
    from flows.cli.proof_check import load_tsa_trust, read_policy, verify_command
    from ledger.core.proof.policy import PolicyError

    try:
        trusted = None if policy is None else read_policy(policy)
    except PolicyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.USAGE) from exc
    tsa_trust = load_tsa_trust(tsa_ca)
    raise typer.Exit(verify_command(file, proof, policy=trusted, tsa_trust=tsa_trust))
