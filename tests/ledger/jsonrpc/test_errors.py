"""The error tree: codes, messages, rendering, pickling."""

from __future__ import annotations

import pickle

import pytest

from ledger.jsonrpc import (
    IncorrectPassphrase,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcCallError,
    JsonRpcError,
    MethodNotFound,
    MissingChainHead,
    ObjectNotFound,
    ParseError,
    ReceiptCreationError,
    RepeatedCommit,
    WalletLocked,
)


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (ParseError(), -32700, "Parse error"),
        (InvalidRequest(), -32600, "Invalid Request"),
        (MethodNotFound(), -32601, "Method not found"),
        (InvalidParams(), -32602, "Invalid params"),
        (InternalError(), -32603, "Internal error"),
        (ObjectNotFound(), -32008, "Object not found"),
        (ObjectNotFound(ObjectNotFound.ENTRY), -32008, "Entry not found"),
        (ObjectNotFound(ObjectNotFound.BLOCK), -32008, "Block not found"),
        (MissingChainHead(), -32009, "Missing Chain Head"),
        (ReceiptCreationError(), -32010, "Receipt creation error"),
        (WalletLocked(), -32001, "Wallet is locked"),
        (IncorrectPassphrase(), -32003, "Incorrect passphrase"),
    ],
)
def test_codes_and_messages(error: JsonRpcError, code: int, message: str) -> None:
    assert isinstance(error, JsonRpcError)
    assert (error.code, error.message, error.data) == (code, message, None)
    assert error.to_dict() == {"code": code, "message": message}


def test_data_is_rendered_only_when_present() -> None:
    assert InvalidParams("Invalid Hash").to_dict() == {
        "code": -32602,
        "message": "Invalid params",
        "data": "Invalid Hash",
    }
    assert InternalError(message="Internal failure").to_dict()["message"] == "Internal failure"
    assert ObjectNotFound(data={"hash": "ab"}).to_dict()["data"] == {"hash": "ab"}
    assert str(InvalidParams("Invalid Hash")) == "Invalid params: Invalid Hash"


def test_repeated_commit_carries_info_and_hex_entry_hash() -> None:
    entry_hash = bytes(range(32))
    error = RepeatedCommit(entry_hash)
    assert error.entry_hash == entry_hash
    assert error.to_dict() == {
        "code": -32011,
        "message": "Repeated Commit",
        "data": {
            "info": "A commit with equal or greater payment already exists",
            "entryhash": entry_hash.hex(),
        },
    }
    assert RepeatedCommit(entry_hash, info="other").data["info"] == "other"


def test_generic_error_with_any_code() -> None:
    error = JsonRpcError(-32099, "Custom", {"k": 1})
    assert error.to_dict() == {"code": -32099, "message": "Custom", "data": {"k": 1}}


@pytest.mark.parametrize(
    "error",
    [
        InvalidParams("Invalid Hash"),
        ObjectNotFound(ObjectNotFound.BLOCK),
        RepeatedCommit(b"\x01" * 32),
        JsonRpcError(-1, "m", [1]),
        JsonRpcCallError(-32008, "Entry not found", None, method="entry"),
    ],
)
def test_errors_survive_pickling(error: JsonRpcError) -> None:
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is type(error)
    assert restored.to_dict() == error.to_dict()
    assert str(restored) == str(error)
    assert vars(restored) == vars(error)
