"""The publishing REST API (spec ``publishing-rest-api.md``): FastAPI on ``/v1``.

Build with ``create_app(settings, gateway=..., clock=...)``; run with ``python -m ledger.api``.
"""

from ledger.api.accounts import create_account, generate_key, hash_key, revoke_account, verify_key
from ledger.api.app import create_app
from ledger.api.callbacks import sign_callback, verify_callback_signature
from ledger.api.db import Database
from ledger.api.gateway import (
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
from ledger.api.memory_gateway import InMemoryLedger
from ledger.api.settings import ApiSettings
from ledger.api.worker import LedgerWorker, PassReport

__all__ = [
    "AnchorInfo",
    "ApiSettings",
    "ComposedCalls",
    "Composition",
    "Database",
    "DirectoryBlockInfo",
    "GatewayUnavailable",
    "InMemoryLedger",
    "JsonRpcLedgerGateway",
    "LedgerGateway",
    "LedgerWorker",
    "PassReport",
    "RpcCall",
    "RpcFailure",
    "create_account",
    "create_app",
    "generate_key",
    "hash_key",
    "revoke_account",
    "sign_callback",
    "verify_callback_signature",
    "verify_key",
]
