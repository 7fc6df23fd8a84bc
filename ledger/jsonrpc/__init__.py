"""JSON-RPC 2.0: the one wire codec and client, and the server shared by the ledger services.

Client side (importing the package loads only these; no server library; the clients,
and with them httpx, load when first named: a process that only needs the error tree,
such as the pipeline's hashing child through ``connectors.errors``, never loads them):

- :mod:`ledger.jsonrpc.codes`: :class:`ErrorCode`, the error codes by name.
- :mod:`ledger.jsonrpc.errors`: the error tree (server-rendered errors, client errors).
- :mod:`ledger.jsonrpc.wire`: :class:`JsonRpcCodec`, request/response objects, reply rules.
- :mod:`ledger.jsonrpc.client`: :class:`JsonRpcClient` / :class:`AsyncJsonRpcClient` (httpx).
- :mod:`ledger.jsonrpc.credentials`: ``BasicCredentials`` and ``RpcAccess``, what reaches a
  locked service (docs/jsonrpc.md §1.1).

Server side, imported from their modules (they load Starlette and anyio):

- :mod:`ledger.jsonrpc.registry`: ``MethodRegistry`` of typed handlers.
- :mod:`ledger.jsonrpc.server`: ``create_jsonrpc_app`` (Starlette) implementing the wire rules.
- :mod:`ledger.jsonrpc.auth`: the HTTP basic authentication gate of a locked service.
"""

import typing

from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import (
    REPEATED_COMMIT_INFO,
    IncorrectPassphrase,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcCallError,
    JsonRpcError,
    JsonRpcProtocolError,
    JsonRpcTransportError,
    MethodNotFound,
    MissingChainHead,
    ObjectNotFound,
    ParseError,
    ReceiptCreationError,
    RepeatedCommit,
    WalletLocked,
)
from ledger.jsonrpc.wire import JsonRpcCodec, encode_json, request_object

if typing.TYPE_CHECKING:
    from ledger.jsonrpc.client import AsyncJsonRpcClient, JsonRpcClient

__all__ = [
    "REPEATED_COMMIT_INFO",
    "AsyncJsonRpcClient",
    "ErrorCode",
    "IncorrectPassphrase",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcCallError",
    "JsonRpcClient",
    "JsonRpcCodec",
    "JsonRpcError",
    "JsonRpcProtocolError",
    "JsonRpcTransportError",
    "MethodNotFound",
    "MissingChainHead",
    "ObjectNotFound",
    "ParseError",
    "ReceiptCreationError",
    "RepeatedCommit",
    "WalletLocked",
    "encode_json",
    "request_object",
]


def __getattr__(name: str) -> typing.Any:
    """``AsyncJsonRpcClient`` and ``JsonRpcClient``, imported on first use (PEP 562) and
    kept as the package's attributes from then on."""
    if name in ("AsyncJsonRpcClient", "JsonRpcClient"):
        from ledger.jsonrpc import client

        value = getattr(client, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
