"""The public names of ledger.jsonrpc: ``__all__`` must list exactly what the package exports."""

from __future__ import annotations

import types

import ledger.jsonrpc as jsonrpc

EXPECTED = {
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
}


def test_all_matches_the_public_members() -> None:
    # The clients load on first use (they bring httpx); naming them loads them.
    assert jsonrpc.JsonRpcClient.__name__ == "JsonRpcClient"
    assert jsonrpc.AsyncJsonRpcClient.__name__ == "AsyncJsonRpcClient"
    public = {
        name
        for name, value in vars(jsonrpc).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(jsonrpc.__all__) == public == EXPECTED
    assert len(jsonrpc.__all__) == len(set(jsonrpc.__all__))
