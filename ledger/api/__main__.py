"""Run the publishing API, or manage its accounts.

Usage::

    python -m ledger.api                        # serve on NOTARY_API_HOST:NOTARY_API_PORT
    python -m ledger.api create-account NAME    # print the new account's key (shown once)
    python -m ledger.api revoke-account ID
"""

from __future__ import annotations

import argparse
import sys

from ledger.api.accounts import create_account, revoke_account
from ledger.api.db import Database
from ledger.api.settings import ApiSettings


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m ledger.api")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="run the HTTP server (default)")
    create = commands.add_parser("create-account", help="create an account and print its key")
    create.add_argument("name")
    revoke = commands.add_parser("revoke-account", help="revoke an account's key")
    revoke.add_argument("account_id", type=int)
    args = parser.parse_args(argv)
    settings = ApiSettings()
    if args.command == "create-account":
        return _create(settings, args.name)
    if args.command == "revoke-account":
        return _revoke(settings, args.account_id)
    return _serve(settings)


def _serve(settings: ApiSettings) -> int:
    import uvicorn

    from ledger.api.app import create_app

    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)
    return 0


def _create(settings: ApiSettings, name: str) -> int:
    db = Database(settings.resolved_database_url())
    try:
        db.create_schema()
        with db.write() as session:
            account, key = create_account(session, name)
            account_id = account.id
    finally:
        db.dispose()
    print(f"account {account_id} ({name}) key: {key}")
    return 0


def _revoke(settings: ApiSettings, account_id: int) -> int:
    db = Database(settings.resolved_database_url())
    try:
        with db.write() as session:
            revoke_account(session, account_id)
    except LookupError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    finally:
        db.dispose()
    print(f"account {account_id} revoked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
