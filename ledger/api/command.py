"""The publishing API's command line (``python -m ledger.api``): serve, or manage accounts.

Usage::

    python -m ledger.api [serve] [--sandbox]      # serve on NOTARY_API_HOST:NOTARY_API_PORT
                                                  # (HTTPS with NOTARY_API_TLS_CERT_FILE and
                                                  # NOTARY_API_TLS_KEY_FILE, else HTTP), as
                                                  # every service (ledger.serving.run_service)
    python -m ledger.api accounts create NAME     # print the new key (shown once)
    python -m ledger.api accounts list [--json]
    python -m ledger.api accounts revoke ID

``create-account NAME`` and ``revoke-account ID`` remain as older spellings. The account
commands are thin printers around ``ledger.api.accounts_cli``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ledger.api.accounts_cli import (
    AccountNotFound,
    accounts_create,
    accounts_list,
    accounts_revoke,
)
from ledger.api.settings import ApiSettings
from ledger.secret_file import OWNER_ONLY_UMASK


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command; the exit status: 0 done,
    1 no such account, 2 a refused name (argparse exits 2 itself on bad usage)."""
    args = _parser().parse_args(argv)
    os.umask(OWNER_ONLY_UMASK)  # its files owner-only (docs/security.md)
    settings = ApiSettings()
    command = args.command or "serve"
    if command == "serve":
        return _serve(settings.model_copy(update={"sandbox": settings.sandbox or args.sandbox}))
    if command == "create-account" or (command == "accounts" and args.action == "create"):
        return _create(settings, args.name)
    if command == "revoke-account" or (command == "accounts" and args.action == "revoke"):
        return _revoke(settings, args.account_id)
    return _list(settings, as_json=args.json)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ledger.api")
    parser.add_argument("--sandbox", action="store_true", help="serve the sandbox")
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the HTTP server (default)")
    serve.add_argument(
        "--sandbox", action="store_true", default=argparse.SUPPRESS, help="serve the sandbox"
    )
    accounts = commands.add_parser("accounts", help="create, list or revoke accounts")
    actions = accounts.add_subparsers(dest="action", required=True)
    actions.add_parser("create", help="create an account and print its key").add_argument("name")
    listing = actions.add_parser("list", help="list the accounts")
    listing.add_argument("--json", action="store_true", help="print JSON")
    actions.add_parser("revoke", help="revoke an account's key").add_argument(
        "account_id", type=int
    )
    create = commands.add_parser("create-account", help="same as: accounts create")
    create.add_argument("name")
    revoke = commands.add_parser("revoke-account", help="same as: accounts revoke")
    revoke.add_argument("account_id", type=int)
    return parser


def _serve(settings: ApiSettings) -> int:
    from ledger.api.app import create_app
    from ledger.serving import run_service

    run_service(lambda: settings, create_app)
    return 0


def _create(settings: ApiSettings, name: str) -> int:
    try:
        created = accounts_create(settings, name)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"account {created.account.id} ({created.account.name}) key: {created.key}")
    return 0


def _revoke(settings: ApiSettings, account_id: int) -> int:
    try:
        accounts_revoke(settings, account_id)
    except AccountNotFound as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"account {account_id} revoked")
    return 0


def _list(settings: ApiSettings, *, as_json: bool) -> int:
    infos = accounts_list(settings)
    if as_json:
        print(json.dumps([i.to_json() for i in infos], indent=2))
        return 0
    for info in infos:
        row = info.to_json()
        state = f"revoked {row['revoked_at']}" if info.revoked else "live"
        print(f"{info.id:>5}  {info.name:<30}  created {row['created_at']}  {state}")
    return 0
