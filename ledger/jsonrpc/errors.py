"""JSON-RPC 2.0 errors: those a server renders and those a client receives.

Codes and messages follow factomd / factom-walletd (``ledger.jsonrpc.codes``; JSON-RPC 2.0
section 5.1). Handlers raise the server-side classes; the server renders them as
``{"jsonrpc": "2.0", "id": ..., "error": {"code", "message", "data"?}}``. A client raises
``JsonRpcCallError`` for an error object it received, and the transport errors when no
JSON-RPC answer came back.

Exception tree::

    JsonRpcLayerError (Exception)  root of every error the ``ledger.jsonrpc`` package defines
    CredentialsError (JsonRpcLayerError, ValueError)  ``ledger.jsonrpc.credentials``: bad user/password
    JsonRpcError (JsonRpcLayerError)  any error object: .code (int), .message (str), .data (JSON or None)
    ├── ParseError                 -32700  body is not valid UTF-8 JSON
    ├── InvalidRequest             -32600  not a JSON-RPC 2.0 request object (also: body too large)
    ├── MethodNotFound             -32601  unknown method name
    ├── InvalidParams              -32602  params do not fit the method; data = human string ("Invalid Hash")
    ├── InternalError              -32603  handler failure; data never carries internals
    ├── ObjectNotFound             -32008  "Object not found" / "Entry not found" / "Block not found"
    ├── MissingChainHead           -32009  "Missing Chain Head"
    ├── ReceiptCreationError       -32010  "Receipt creation error" (entry not in a directory block yet)
    ├── RepeatedCommit             -32011  data {"info": str, "entryhash": hex}
    ├── WalletLocked               -32001  "Wallet is locked" (wallet)
    ├── IncorrectPassphrase        -32003  "Incorrect passphrase" (wallet)
    └── JsonRpcCallError           (client) an error object received from a server; .method
    JsonRpcTransportError (JsonRpcLayerError)  (client) the HTTP exchange failed; __cause__ is httpx's error
    └── JsonRpcProtocolError       (client) the reply is not a JSON-RPC response (.status_code, .body)

The server-side classes are the spec's names; a client never raises them (what it received
is a ``JsonRpcCallError`` whatever its code: compare ``.code`` with ``ErrorCode``). Nothing
here imports a server or HTTP library.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ledger.jsonrpc.codes import ErrorCode

__all__ = [
    "REPEATED_COMMIT_INFO",
    "IncorrectPassphrase",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcCallError",
    "JsonRpcError",
    "JsonRpcLayerError",
    "JsonRpcProtocolError",
    "JsonRpcTransportError",
    "MethodNotFound",
    "MissingChainHead",
    "ObjectNotFound",
    "ParseError",
    "ReceiptCreationError",
    "RepeatedCommit",
    "WalletLocked",
]

REPEATED_COMMIT_INFO = "A commit with equal or greater payment already exists"
_MAX_BODY_CHARS = 1000


class JsonRpcLayerError(Exception):
    """Root of the ``ledger.jsonrpc`` package's errors (tree in the module docstring)."""


class JsonRpcError(JsonRpcLayerError):
    """A JSON-RPC error object with any code.

    Args:
        code: the integer error code (an ``ErrorCode`` or any other int; kept as a plain int).
        message: the short error message (``error.message``).
        data: optional JSON-serialisable detail (``error.data``); ``None`` means "omit".
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message if data is None else f"{message}: {data}")
        self.code = int(code)
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

    CODE: ClassVar[ErrorCode]
    MESSAGE: ClassVar[str]

    def __init__(self, data: Any = None, *, message: str | None = None) -> None:
        super().__init__(self.CODE, self.MESSAGE if message is None else message, data)


class ParseError(_FixedCodeError):
    """-32700: the body is not valid JSON (or not valid UTF-8); the response id is null."""

    CODE = ErrorCode.PARSE_ERROR
    MESSAGE = "Parse error"


class InvalidRequest(_FixedCodeError):
    """-32600: the JSON is not a valid JSON-RPC 2.0 request object (or the body is too large)."""

    CODE = ErrorCode.INVALID_REQUEST
    MESSAGE = "Invalid Request"


class MethodNotFound(_FixedCodeError):
    """-32601: no method of that name is registered."""

    CODE = ErrorCode.METHOD_NOT_FOUND
    MESSAGE = "Method not found"


class InvalidParams(_FixedCodeError):
    """-32602: params do not match the method; ``data`` is a human string such as ``"Invalid Hash"``."""

    CODE = ErrorCode.INVALID_PARAMS
    MESSAGE = "Invalid params"


class InternalError(_FixedCodeError):
    """-32603: internal processing error; ``data`` (if any) must not reveal internals or secrets."""

    CODE = ErrorCode.INTERNAL_ERROR
    MESSAGE = "Internal error"


class ObjectNotFound(JsonRpcError):
    """-32008: the entry, block or object does not exist.

    Args:
        message: ``"Entry not found"``, ``"Block not found"`` or ``"Object not found"`` (default).
        data: optional detail.
    """

    CODE: ClassVar[ErrorCode] = ErrorCode.OBJECT_NOT_FOUND
    ENTRY: ClassVar[str] = "Entry not found"
    BLOCK: ClassVar[str] = "Block not found"
    OBJECT: ClassVar[str] = "Object not found"

    def __init__(self, message: str = OBJECT, *, data: Any = None) -> None:
        super().__init__(self.CODE, message, data)


class MissingChainHead(_FixedCodeError):
    """-32009: the chain has no head (unknown chain id)."""

    CODE = ErrorCode.MISSING_CHAIN_HEAD
    MESSAGE = "Missing Chain Head"


class ReceiptCreationError(_FixedCodeError):
    """-32010: a receipt could not be built (entry not yet in a directory block, ...).

    Not to be confused with ``ledger.core.receipt.ReceiptError``, a receipt that does not
    verify.
    """

    CODE = ErrorCode.RECEIPT_CREATION_ERROR
    MESSAGE = "Receipt creation error"


class RepeatedCommit(JsonRpcError):
    """-32011: a commit with equal or greater payment already exists (docs/formats.md §2.4).

    Args:
        entry_hash: the committed entry hash, raw 32 bytes; rendered as hex in ``data``.
        info: the human explanation placed in ``data["info"]``.

    Attributes:
        entry_hash: the raw entry hash given.
    """

    CODE: ClassVar[ErrorCode] = ErrorCode.REPEATED_COMMIT
    MESSAGE: ClassVar[str] = "Repeated Commit"

    def __init__(self, entry_hash: bytes, *, info: str = REPEATED_COMMIT_INFO) -> None:
        super().__init__(self.CODE, self.MESSAGE, {"info": info, "entryhash": entry_hash.hex()})
        self.entry_hash = entry_hash


class WalletLocked(_FixedCodeError):
    """-32001 (wallet): the wallet is encrypted and locked."""

    CODE = ErrorCode.WALLET_LOCKED
    MESSAGE = "Wallet is locked"


class IncorrectPassphrase(_FixedCodeError):
    """-32003 (wallet): the passphrase given does not unlock the wallet."""

    CODE = ErrorCode.INCORRECT_PASSPHRASE
    MESSAGE = "Incorrect passphrase"


class JsonRpcCallError(JsonRpcError):
    """(client) An error object returned by the server.

    Args:
        code, message, data: the ``error`` member's fields.
        method: the method called; ``None`` when a whole batch was refused.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None):
        super().__init__(code, message, data)
        self.method = method


class JsonRpcTransportError(JsonRpcLayerError):
    """(client) The HTTP exchange with ``url`` failed; the httpx error is chained as ``__cause__``.

    Attributes:
        url: the endpoint, without user info.
    """

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class JsonRpcProtocolError(JsonRpcTransportError):
    """(client) The server replied with something that is not a JSON-RPC response.

    Attributes:
        status_code: the HTTP status of the reply (None if not applicable).
        body: the reply's body as text (undecodable bytes replaced), at most 1000 characters.
    """

    def __init__(
        self, message: str, *, url: str, status_code: int | None = None, body: str = ""
    ) -> None:
        super().__init__(message, url=url)
        self.status_code = status_code
        self.body = body[:_MAX_BODY_CHARS]
