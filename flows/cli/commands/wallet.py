"""``notary wallet encrypt``: encrypt the bundled stack's plain wallet at rest, on request.

``notary up`` keeps its wallet encrypted (argon2id + SecretBox) unless started with
``--plain-wallet``, and refuses to open an existing plain wallet otherwise: this command
is the migration, never done silently (``ledger.wallet_at_rest``, docs/security.md). Stop
``notary up`` first. The passphrase is ``--wallet-passphrase-file`` (or
``NOTARY_STACK_WALLET_PASSPHRASE``), else one generated into ``DATA_DIR/wallet-passphrase``
(0600). Exit codes (``ExitCode``): 0 encrypted; 2 not a plain wallet, in use, or an
unreadable passphrase file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import DataDir, console, fail
from flows.cli.exit_codes import ExitCode

__all__ = ["WalletPassphraseFile", "register"]

WalletPassphraseFile = Annotated[
    Path | None,
    typer.Option(
        "--wallet-passphrase-file",
        help="File holding the wallet's passphrase (or NOTARY_STACK_WALLET_PASSPHRASE); "
        "default: one generated into DATA_DIR/wallet-passphrase (owner-only).",
    ),
]


def register(app: typer.Typer) -> None:
    """Add the ``wallet`` command group to ``app``."""
    wallet = typer.Typer(help="The bundled stack's wallet at rest.")
    app.add_typer(wallet, name="wallet")
    wallet.command("encrypt")(encrypt)


def encrypt(
    data_dir: DataDir = Path(".notary"),
    wallet_passphrase_file: WalletPassphraseFile = None,
) -> None:
    """Encrypt the plain wallet of DATA_DIR (its keys are kept); stop `notary up` first."""
    from ledger.stack import Stack, StackSettings
    from ledger.wallet_at_rest import WalletAtRestError

    settings = StackSettings(data_dir=data_dir)
    if wallet_passphrase_file is not None:  # else NOTARY_STACK_WALLET_PASSPHRASE_FILE holds
        settings = settings.model_copy(update={"wallet_passphrase_file": wallet_passphrase_file})
    at_rest = Stack(settings).wallet_at_rest()
    try:
        count = at_rest.encrypt()
    except WalletAtRestError as exc:
        fail(str(exc), ExitCode.USAGE)
    console.print(
        f"wallet {at_rest.wallet_file} encrypted ({count} secrets sealed); passphrase in "
        f"{at_rest.source()}"
    )
