"""JSON-RPC 2.0 error codes by name: the protocol's own and the Factom application codes.

The first five are JSON-RPC 2.0's reserved codes (https://www.jsonrpc.org/specification,
docs/formats.md §5.1); the others are factomd's and factom-walletd's (their ``wsapi/errors.go``),
which the node, the wallet and the anchoring service answer with the same meaning.

==========================  ======  ==========================================
name                        code    message (``error.message``)
==========================  ======  ==========================================
PARSE_ERROR                 -32700  Parse error
INVALID_REQUEST             -32600  Invalid Request
METHOD_NOT_FOUND            -32601  Method not found
INVALID_PARAMS              -32602  Invalid params
INTERNAL_ERROR              -32603  Internal error
WALLET_LOCKED               -32001  Wallet is locked (wallet)
INCORRECT_PASSPHRASE        -32003  Incorrect passphrase (wallet)
OBJECT_NOT_FOUND            -32008  Object not found / Entry not found / Block not found
MISSING_CHAIN_HEAD          -32009  Missing Chain Head
RECEIPT_CREATION_ERROR      -32010  Receipt creation error
REPEATED_COMMIT             -32011  Repeated Commit
==========================  ======  ==========================================

Members are ``int``s: ``ErrorCode.REPEATED_COMMIT == -32011``, and a code received from a
server compares equal to its member. This module imports nothing, so clients and servers
alike may use it.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ErrorCode"]


class ErrorCode(IntEnum):
    """A JSON-RPC ``error.code`` (module table)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    WALLET_LOCKED = -32001
    INCORRECT_PASSPHRASE = -32003
    OBJECT_NOT_FOUND = -32008
    MISSING_CHAIN_HEAD = -32009
    RECEIPT_CREATION_ERROR = -32010
    REPEATED_COMMIT = -32011
