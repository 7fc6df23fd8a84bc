"""JSON-RPC 2.0 machinery shared by the ledger node and the wallet service.

- :mod:`ledger.jsonrpc.errors`: the error tree (codes of formats section 9.2).
- :mod:`ledger.jsonrpc.registry`: :class:`MethodRegistry` of typed handlers.
- :mod:`ledger.jsonrpc.server`: :func:`create_jsonrpc_app` (Starlette) implementing the wire rules.
- :mod:`ledger.jsonrpc.client`: :class:`JsonRpcClient` / :class:`AsyncJsonRpcClient` (httpx).
"""

from ledger.jsonrpc.client import (
    AsyncJsonRpcClient,
    JsonRpcCallError,
    JsonRpcClient,
    JsonRpcProtocolError,
    JsonRpcTransportError,
)
from ledger.jsonrpc.errors import (
    REPEATED_COMMIT_INFO,
    IncorrectPassphrase,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcError,
    MethodNotFound,
    MissingChainHead,
    NotFound,
    ParseError,
    ReceiptError,
    RepeatedCommit,
    WalletLocked,
)
from ledger.jsonrpc.registry import MethodRegistry, RegisteredMethod, format_validation_error
from ledger.jsonrpc.server import JsonRpcEndpoint, create_jsonrpc_app, encode_json

__all__ = [
    "REPEATED_COMMIT_INFO",
    "AsyncJsonRpcClient",
    "IncorrectPassphrase",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcCallError",
    "JsonRpcClient",
    "JsonRpcEndpoint",
    "JsonRpcError",
    "JsonRpcProtocolError",
    "JsonRpcTransportError",
    "MethodNotFound",
    "MethodRegistry",
    "MissingChainHead",
    "NotFound",
    "ParseError",
    "ReceiptError",
    "RegisteredMethod",
    "RepeatedCommit",
    "WalletLocked",
    "create_jsonrpc_app",
    "encode_json",
    "format_validation_error",
]
