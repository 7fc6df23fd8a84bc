"""The publishing REST API (docs/rest-api.md): FastAPI on ``/v1``.

Build with ``create_app(settings, gateway=..., clock=...)``; run with ``python -m ledger.api``
(``--sandbox`` for the sandbox); manage accounts with ``ledger.api.accounts_cli``.
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
