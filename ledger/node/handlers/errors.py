"""Rendering of node rule errors as JSON-RPC errors (docs/jsonrpc.md §7; docs/formats.md §9.2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ledger.jsonrpc.errors import (
    InternalError,
    InvalidParams,
    JsonRpcError,
    MissingChainHead,
    ObjectNotFound,
    RepeatedCommit,
)
from ledger.node.errors import (
    DuplicateCommit,
    NodeError,
    RuleViolation,
    UnknownChain,
    UnknownObject,
)
from ledger.node.store import StoreError

#: What ``rpc_error`` may render: catch these around a node call (``except NODE_FAILURES``).
NODE_FAILURES = (NodeError, StoreError)


def rpc_error(exc: NodeError | StoreError) -> JsonRpcError | None:
    """The JSON-RPC error ``exc`` is answered as; ``None`` for a ``NodeError`` without one
    (re-raise it: the registry answers Internal error).

    The write handlers call it from a plain ``except`` rather than entering ``node_errors``:
    a generator context manager per commit and per reveal was ~1.5 % of the bundled stack's
    CPU in the entry mode.
    """
    if isinstance(exc, DuplicateCommit):
        return RepeatedCommit(exc.entry_hash)
    if isinstance(exc, RuleViolation):
        return InvalidParams(str(exc))
    if isinstance(exc, UnknownChain):
        return MissingChainHead(str(exc) or None)
    if isinstance(exc, UnknownObject):
        return ObjectNotFound(str(exc) or ObjectNotFound.OBJECT)
    if isinstance(exc, StoreError):
        if exc.disk_full:
            return InternalError("disk full: the node cannot store writes now; retry later")
        return InternalError("database error")
    return None


@contextmanager
def node_errors() -> Iterator[None]:
    """Convert ``NodeError`` / ``StoreError`` raised inside the block to JSON-RPC errors
    (``rpc_error``)."""
    try:
        yield
    except NODE_FAILURES as exc:
        error = rpc_error(exc)
        if error is None:
            raise
        raise error from exc
