"""JSON-RPC 2.0 error objects shared by the ledger node and the wallet service.

Codes and messages follow factomd / factom-walletd (``/work/shared/factom-formats.md`` section 9.2,
spec ``node-wallet-jsonrpc.md`` "Errors"). Handlers raise these; the server renders them as
``{"jsonrpc": "2.0", "id": ..., "error": {"code", "message", "data"?}}``.

Exception tree::

    JsonRpcError (Exception)       any error object: .code (int), .message (str), .data (JSON or None)
    ├── ParseError                 -32700  body is not valid UTF-8 JSON
    ├── InvalidRequest             -32600  not a JSON-RPC 2.0 request object (also: body too large)
    ├── MethodNotFound             -32601  unknown method name
    ├── InvalidParams              -32602  params do not fit the method; data = human string ("Invalid Hash")
    ├── InternalError              -32603  handler failure; data never carries internals
    ├── NotFound                   -32008  "Entry not found" / "Block not found" / "Object not found"
    ├── MissingChainHead           -32009  "Missing Chain Head"
    ├── ReceiptError               -32010  "Receipt creation error"
    ├── RepeatedCommit             -32011  data {"info": str, "entryhash": hex}
    ├── WalletLocked               -32001  "Wallet is locked" (wallet)
    ├── IncorrectPassphrase        -32003  "Incorrect passphrase" (wallet)
    └── (client) JsonRpcCallError  an error object received from a remote server
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "REPEATED_COMMIT_INFO",
    "IncorrectPassphrase",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcError",
    "MethodNotFound",
    "MissingChainHead",
    "NotFound",
    "ParseError",
    "ReceiptError",
    "RepeatedCommit",
    "WalletLocked",
]

REPEATED_COMMIT_INFO = "A commit with equal or greater payment already exists"


class JsonRpcError(Exception):
    """A JSON-RPC error object with any code.

    Args:
        code: the integer error code.
        message: the short error message (``error.message``).
        data: optional JSON-serialisable detail (``error.data``); ``None`` means "omit".
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message if data is None else f"{message}: {data}")
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """Render the ``error`` member: ``{"code", "message"}`` plus ``"data"`` when not None."""
        rendered: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            rendered["data"] = self.data
        return rendered

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses have different constructors; restore by state so errors survive pickling
        # (Prefect persists task exceptions).
        return (_restore_error, (type(self), self.args, dict(self.__dict__)))


def _restore_error(cls: type[JsonRpcError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class _FixedCodeError(JsonRpcError):
    """An error whose code and default message are fixed by the class.

    Args:
        data: optional detail (``error.data``), e.g. ``"Invalid Hash"``.
        message: override of the class's default message.
    """

    CODE: ClassVar[int]
    MESSAGE: ClassVar[str]

    def __init__(self, data: Any = None, *, message: str | None = None) -> None:
        super().__init__(self.CODE, self.MESSAGE if message is None else message, data)


class ParseError(_FixedCodeError):
    """-32700: the body is not valid JSON (or not valid UTF-8); the response id is null."""

    CODE = -32700
    MESSAGE = "Parse error"


class InvalidRequest(_FixedCodeError):
    """-32600: the JSON is not a valid JSON-RPC 2.0 request object (or the body is too large)."""

    CODE = -32600
    MESSAGE = "Invalid Request"


class MethodNotFound(_FixedCodeError):
    """-32601: no method of that name is registered."""

    CODE = -32601
    MESSAGE = "Method not found"


class InvalidParams(_FixedCodeError):
    """-32602: params do not match the method; ``data`` is a human string such as ``"Invalid Hash"``."""

    CODE = -32602
    MESSAGE = "Invalid params"


class InternalError(_FixedCodeError):
    """-32603: internal processing error; ``data`` (if any) must not reveal internals or secrets."""

    CODE = -32603
    MESSAGE = "Internal error"


class NotFound(JsonRpcError):
    """-32008: the entry, block or object does not exist.

    Args:
        message: ``"Entry not found"``, ``"Block not found"`` or ``"Object not found"`` (default).
        data: optional detail.
    """

    CODE: ClassVar[int] = -32008
    ENTRY: ClassVar[str] = "Entry not found"
    BLOCK: ClassVar[str] = "Block not found"
    OBJECT: ClassVar[str] = "Object not found"

    def __init__(self, message: str = OBJECT, *, data: Any = None) -> None:
        super().__init__(self.CODE, message, data)


class MissingChainHead(_FixedCodeError):
    """-32009: the chain has no head (unknown chain id)."""

    CODE = -32009
    MESSAGE = "Missing Chain Head"


class ReceiptError(_FixedCodeError):
    """-32010: a receipt could not be built (entry not yet in a directory block, ...)."""

    CODE = -32010
    MESSAGE = "Receipt creation error"


class RepeatedCommit(JsonRpcError):
    """-32011: a commit with equal or greater payment already exists (formats section 2.4).

    Args:
        entry_hash: the committed entry hash, raw 32 bytes; rendered as hex in ``data``.
        info: the human explanation placed in ``data["info"]``.

    Attributes:
        entry_hash: the raw entry hash given.
    """

    CODE: ClassVar[int] = -32011
    MESSAGE: ClassVar[str] = "Repeated Commit"

    def __init__(self, entry_hash: bytes, *, info: str = REPEATED_COMMIT_INFO) -> None:
        super().__init__(self.CODE, self.MESSAGE, {"info": info, "entryhash": entry_hash.hex()})
        self.entry_hash = entry_hash


class WalletLocked(_FixedCodeError):
    """-32001 (wallet): the wallet is encrypted and locked."""

    CODE = -32001
    MESSAGE = "Wallet is locked"


class IncorrectPassphrase(_FixedCodeError):
    """-32003 (wallet): the passphrase given does not unlock the wallet."""

    CODE = -32003
    MESSAGE = "Incorrect passphrase"
