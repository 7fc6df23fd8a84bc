"""``notary accounts create|list|revoke``: accounts of the bundled publishing API.

Keys are shown once, at creation; the API keeps only their SHA-256. The commands work on
the API database of ``--data-dir`` (the one ``notary up`` uses) or on
``NOTARY_API_DATABASE_URL`` when set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

DataDir = Annotated[
    Path, typer.Option("--data-dir", envvar="NOTARY_DATA_DIR", help="Folder of all local data.")
]
console = Console()
err = Console(stderr=True)


def _api_settings(data_dir: Path):  # type: ignore[no-untyped-def]
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
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from exc
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
        except AccountNotFound as exc:
            err.print(f"[red]error:[/red] no account {account_id}")
            raise typer.Exit(2) from exc
        console.print(f"account {info.id} ({info.name}) revoked")
