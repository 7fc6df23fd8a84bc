"""Tests of the connector exception tree and of the modules' public names."""

from __future__ import annotations

import importlib

import httpx
import pytest

from connectors.errors import (
    AuthError,
    ConnectorError,
    InvalidResponse,
    NotFound,
    RequestRejected,
    RpcError,
    ServiceUnavailable,
    from_transport_error,
)


def test_tree_and_retryable_flags() -> None:
    for error_type in (ServiceUnavailable, AuthError, RequestRejected, RpcError, InvalidResponse):
        assert issubclass(error_type, ConnectorError)
    assert issubclass(NotFound, RequestRejected)
    assert ServiceUnavailable("down").retryable
    assert not AuthError("no", status_code=403).retryable
    assert not RequestRejected("bad", status_code=400).retryable
    assert not InvalidResponse("junk").retryable
    assert RpcError(-32603, "Internal error").retryable
    assert not RpcError(-32602, "Invalid params").retryable


def test_rpc_error_keeps_evidence_in_message() -> None:
    error = RpcError(-32011, "Repeated Commit", data={"entryhash": "ab"}, method="commit-entry")
    assert (error.code, error.message, error.data, error.method) == (
        -32011,
        "Repeated Commit",
        {"entryhash": "ab"},
        "commit-entry",
    )
    assert (
        str(error) == "commit-entry: JSON-RPC error -32011: Repeated Commit ({'entryhash': 'ab'})"
    )


def test_request_rejected_message_carries_status() -> None:
    error = RequestRejected("content refused", status_code=422, body={"detail": "x"})
    assert str(error) == "HTTP 422: content refused" and error.body == {"detail": "x"}


@pytest.mark.parametrize(
    ("exc", "sent"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow connect"), False),
        (httpx.PoolTimeout("pool"), False),
        (httpx.ReadTimeout("slow read"), True),
        (httpx.RemoteProtocolError("closed"), True),
    ],
)
def test_from_transport_error(exc: Exception, sent: bool) -> None:
    converted = from_transport_error(exc, url="http://x/v2")
    assert isinstance(converted, ServiceUnavailable)
    assert converted.request_sent is sent and converted.url == "http://x/v2"
    assert type(exc).__name__ in str(converted)


@pytest.mark.parametrize(
    "module",
    [
        "connectors.errors",
        "connectors.publishing",
        "connectors.publishing_bulk",
        "connectors.publishing_transport",
        "connectors.node",
        "connectors.folder_source",
        "connectors.audit",
        "connectors.audit.store",
        "tasks.hashing",
    ],
)
def test_public_names_exist(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [name for name in loaded.__all__ if not hasattr(loaded, name)]
    assert missing == []
