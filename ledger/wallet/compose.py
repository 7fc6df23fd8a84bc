"""Pure composition of the node calls that publish entries (docs/formats.md §2.6, §9.4).

``compose_chain`` and ``compose_entry`` sign a commit with an entry credit key and return
``{"commit": request, "reveal": request}`` where each request is a ready JSON-RPC object for
the node, keys in walletd's order::

    {"jsonrpc": "2.0", "id": 0, "params": {"message": hex, "chainid": hex},
     "method": "commit-chain"}
    {"jsonrpc": "2.0", "id": 0, "params": {"entry": hex},   "method": "reveal-chain"}

A composed commit-chain also carries the new chain's ``chainid`` (walletd sends only
``message``): the node checks it against the commit and names the chain in its result,
which it cannot do from the commit alone (that holds only the chain ID's hash).

No I/O: the caller supplies the key and the commit timestamp (Unix milliseconds).
"""

from __future__ import annotations

from typing import Any

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey

__all__ = ["compose_chain", "compose_entry", "rpc_request"]


def rpc_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC 2.0 request object with id 0: ``{"jsonrpc","id","params","method"}``."""
    return {"jsonrpc": "2.0", "id": 0, "params": params, "method": method}


def compose_chain(key: SigningKey, first_entry: Entry, *, timestamp_ms: int) -> dict[str, Any]:
    """Commit-chain (first-entry cost + 10 EC) and reveal-chain calls for ``first_entry``.

    Raises:
        DecodeError: ``first_entry.chain_id`` is not the chain ID of its ExtIDs.
        LimitError: timestamp outside 48 bits.
    """
    commit = CommitChain.create(key, first_entry, timestamp_ms=timestamp_ms)
    return {
        "commit": rpc_request(
            "commit-chain",
            {"message": commit.marshal().hex(), "chainid": first_entry.chain_id.hex()},
        ),
        "reveal": rpc_request("reveal-chain", {"entry": first_entry.marshal().hex()}),
    }


def compose_entry(key: SigningKey, entry: Entry, *, timestamp_ms: int) -> dict[str, Any]:
    """Commit-entry (cost 1..10 EC) and reveal-entry calls for ``entry``.

    Raises:
        LimitError: timestamp outside 48 bits.
    """
    commit = CommitEntry.create(key, entry, timestamp_ms=timestamp_ms)
    return {
        "commit": rpc_request("commit-entry", {"message": commit.marshal().hex()}),
        "reveal": rpc_request("reveal-entry", {"entry": entry.marshal().hex()}),
    }
