"""The publishing REST API (docs/rest-api.md): FastAPI on ``/v1``.

Build with ``create_app(settings, gateway=..., clock=...)``; run with ``python -m ledger.api``
(``--sandbox`` for the sandbox); manage accounts with ``ledger.api.accounts_cli``.

Where to look:

* ``http/``: what a request meets: the routes, their dependencies, request and response
  bodies, the write path (ordinary and fast), error rendering, the OpenAPI document, the
  verify page.
* ``outbox/``: what happens after a 202: group commit, the worker that composes, commits
  and reveals through the ``gateway``, follows blocks and anchors, gives writes up, holds
  them while credits are short, and delivers callbacks.
* ``connect/``: the Harmony Connect shapes of the same chains and entries (docs/interop.md).
* ``sandbox/``: sandbox mode and its built-in in-memory ledger.
* At the top, what all of them share: ``settings``, ``db`` (engine, transactions),
  ``models`` (tables), ``store`` (one write at a time, for tools), ``entry_reads`` (the
  chain and entry reads both ``http`` and ``connect`` answer from), ``errors`` (the
  exception tree and its JSON body), ``encoding``, ``accounts``/``auth`` (keys, rate
  limits), ``accounts_cli`` (account management as plain functions), ``command`` (the
  command line of ``python -m ledger.api``), ``services``
  (the objects one process shares), ``observability`` (health and metrics) and ``app``
  (the composition root).
"""

from ledger.api.accounts import create_account, generate_key, hash_key, revoke_account, verify_key
from ledger.api.accounts_cli import (
    AccountInfo,
    NewAccount,
    accounts_create,
    accounts_list,
    accounts_revoke,
)
from ledger.api.app import create_app
from ledger.api.auth import KeyCache, Principal, RateLimiter
from ledger.api.db import Database
from ledger.api.outbox.credit_gate import CreditGate
from ledger.api.outbox.credit_status import CreditStatus
from ledger.api.outbox.gateway import (
    AnchorInfo,
    ComposedCalls,
    Composition,
    DirectoryBlockInfo,
    GatewayUnavailable,
    JsonRpcLedgerGateway,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.outbox.intake import WriteOutcome, WriteRequest, accept_batch
from ledger.api.outbox.worker import LedgerWorker, PassReport
from ledger.api.outbox.writer import GroupCommitWriter
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.sandbox.mode import Sandbox
from ledger.api.settings import ApiSettings
from ledger.core.callback_signature import sign_callback, verify_callback_signature

__all__ = [
    "AccountInfo",
    "AnchorInfo",
    "ApiSettings",
    "ComposedCalls",
    "Composition",
    "CreditGate",
    "CreditStatus",
    "Database",
    "DirectoryBlockInfo",
    "GatewayUnavailable",
    "GroupCommitWriter",
    "InMemoryLedger",
    "JsonRpcLedgerGateway",
    "KeyCache",
    "LedgerGateway",
    "LedgerWorker",
    "NewAccount",
    "PassReport",
    "Principal",
    "RateLimiter",
    "RpcCall",
    "RpcFailure",
    "Sandbox",
    "WriteOutcome",
    "WriteRequest",
    "accept_batch",
    "accounts_create",
    "accounts_list",
    "accounts_revoke",
    "create_account",
    "create_app",
    "generate_key",
    "hash_key",
    "revoke_account",
    "sign_callback",
    "verify_callback_signature",
    "verify_key",
]
