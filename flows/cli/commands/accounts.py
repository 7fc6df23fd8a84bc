"""``notary accounts create|list|revoke``: accounts of the bundled publishing API.

Keys are shown once, at creation; the API keeps only their SHA-256. The commands work on
the API database of ``--data-dir`` (the one ``notary up`` uses) or on
``NOTARY_API_DATABASE_URL`` when set. Exit codes (``ExitCode``): 0 done; 2 a name the API
refuses or an unknown account number.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from flows.cli.common import DataDir, console, fail
from flows.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from ledger.api.settings import ApiSettings

__all__ = ["register"]


def _api_settings(data_dir: Path) -> ApiSettings:
    from ledger.stack import Stack, StackSettings

    return Stack(StackSettings(data_dir=data_dir)).api_settings()


def register(app: typer.Typer) -> None:
    """Add the ``accounts`` command group to ``app``."""
    accounts = typer.Typer(help="Accounts of the publishing API (keys are stored hashed).")
    app.add_typer(accounts, name="accounts")

    @accounts.command("create")
    def create(
        name: Annotated[str, typer.Argument(help="Display name of the account.")],
        data_dir: DataDir = Path(".notary"),
    ) -> None:
        """Create an account and print its key (shown only this once)."""
        from ledger.api.accounts_cli import accounts_create

        try:
            created = accounts_create(_api_settings(data_dir), name)
        except ValueError as exc:
            fail(str(exc), ExitCode.USAGE)
        console.print(f"account {created.account.id} ({created.account.name}) created")
        console.print("key (store it now; it cannot be shown again):")
        console.print(created.key, soft_wrap=True, highlight=False)

    @accounts.command("list")
    def list_(data_dir: DataDir = Path(".notary")) -> None:
        """List accounts (never their keys)."""
        from ledger.api.accounts_cli import accounts_list

        table = Table("id", "name", "created", "revoked")
        for info in accounts_list(_api_settings(data_dir)):
            data = info.to_json()
            table.add_row(
                str(info.id), info.name, str(data["created_at"]), str(data["revoked_at"] or "")
            )
        console.print(table)

    @accounts.command("revoke")
    def revoke(
        account_id: Annotated[int, typer.Argument(help="Account number (see `accounts list`).")],
        data_dir: DataDir = Path(".notary"),
    ) -> None:
        """Revoke an account: its key stops working at once for writes, within a second for reads."""
        from ledger.api.accounts_cli import AccountNotFound, accounts_revoke

        try:
            info = accounts_revoke(_api_settings(data_dir), account_id)
        except AccountNotFound:
            fail(f"no account {account_id}", ExitCode.USAGE)
        console.print(f"account {info.id} ({info.name}) revoked")
