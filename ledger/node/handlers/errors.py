"""Rendering of node rule errors as JSON-RPC errors (docs/jsonrpc.md §7; docs/formats.md §9.2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ledger.jsonrpc.errors import (
    InternalError,
    InvalidParams,
    MissingChainHead,
    ObjectNotFound,
    RepeatedCommit,
)
from ledger.node.errors import DuplicateCommit, RuleViolation, UnknownChain, UnknownObject
from ledger.node.store import StoreError


@contextmanager
def node_errors() -> Iterator[None]:
    """Convert ``NodeError`` / ``StoreError`` raised inside the block to JSON-RPC errors."""
    try:
        yield
    except DuplicateCommit as exc:
        raise RepeatedCommit(exc.entry_hash) from exc
    except RuleViolation as exc:
        raise InvalidParams(str(exc)) from exc
    except UnknownChain as exc:
        raise MissingChainHead(str(exc) or None) from exc
    except UnknownObject as exc:
        raise ObjectNotFound(str(exc) or ObjectNotFound.OBJECT) from exc
    except StoreError as exc:
        if exc.disk_full:
            raise InternalError("disk full: the node cannot store writes now; retry later") from exc
        raise InternalError("database error") from exc
