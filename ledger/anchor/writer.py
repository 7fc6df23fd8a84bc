"""Writing anchor records into the ledger: commit + reveal through the node's JSON-RPC.

Commits are composed here (``ledger.core.commit``) and paid with the configured entry
credit key; the wallet is not needed. A commit answered with Repeated Commit (-32011) is
treated as paid (the reveal follows), as the sequence rules of docs/jsonrpc.md §4.3 say.

Before paying, ``write`` asks the node (``ack``) about each entry: one it already holds
(``TransactionACK``, ``DBlockConfirmed``) is not paid for again, and one whose reveal it
holds waiting for a commit (``NotConfirmed``) gets its commit only. A commit with a new
timestamp is a new transaction, so without this an entry whose reveal was accepted but
whose answer was lost (or a state older than the node's) would be recorded twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ledger.core.clock import Clock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import JsonRpcCallError

__all__ = ["LedgerWriter"]

log = logging.getLogger(__name__)


class LedgerWriter:
    """Pays for and reveals entries on the node.

    Args:
        node: client of the node's ``/v2``.
        ec_key: the entry credit key that pays.
        clock: commit timestamps.
    """

    def __init__(self, node: AsyncJsonRpcClient, *, ec_key: SigningKey, clock: Clock) -> None:
        self._node = node
        self._ec_key = ec_key
        self._clock = clock
        self._ready: set[bytes] = set()

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    async def ensure_chain(self, first: Entry) -> None:
        """Create the chain of ``first`` (its first entry) unless the node knows it.

        Raises:
            JsonRpcCallError, JsonRpcTransportError: the node refused or was unreachable.
        """
        chain_id = first.chain_id
        if chain_id in self._ready:
            return
        try:
            await self._node.call("chain-head", {"chainid": chain_id.hex()})
        except JsonRpcCallError as exc:
            if exc.code != ErrorCode.MISSING_CHAIN_HEAD:
                raise
            commit = CommitChain.create(self._ec_key, first, timestamp_ms=self._now_ms())
            await self._paid("commit-chain", commit.marshal())
            await self._node.call("reveal-chain", {"entry": first.marshal().hex()})
            log.info("created anchor chain %s", chain_id.hex())
        self._ready.add(chain_id)

    async def _paid(self, method: str, message: bytes) -> None:
        try:
            await self._node.call(method, {"message": message.hex()})
        except JsonRpcCallError as exc:
            if exc.code != ErrorCode.REPEATED_COMMIT:
                raise

    async def write(self, entries: Sequence[Entry]) -> list[bool]:
        """Commit then reveal each entry the node does not hold yet (module docstring;
        three batches: ``ack``, commits, reveals); True where the entry is now recorded
        (or its held reveal released by the commit).

        Raises:
            JsonRpcTransportError: the node was unreachable (nothing is known written).
        """
        if not entries:
            return []
        statuses = [_status(r) for r in await self._node.batch([_ack(e) for e in entries])]
        todo = [(e, s) for e, s in zip(entries, statuses, strict=True) if s not in _RECORDED]
        now = self._now_ms()
        commits = [
            (
                "commit-entry",
                {"message": CommitEntry.create(self._ec_key, e, timestamp_ms=now).to_hex()},
            )
            for e, _ in todo
        ]
        paid = [_accepted(r) for r in await self._node.batch(commits)]
        reveals = [
            ("reveal-entry", {"entry": e.marshal().hex()})
            for (e, status), ok in zip(todo, paid, strict=True)
            if ok and status != _HELD
        ]
        answers = iter(await self._node.batch(reveals))
        written = {
            e.hash(): ok and (status == _HELD or _accepted(next(answers), repeat_ok=False))
            for (e, status), ok in zip(todo, paid, strict=True)
        }
        return [written.get(e.hash(), True) for e in entries]


#: ``ack`` statuses of an entry the node has recorded, and of a reveal held for its commit.
_RECORDED = frozenset({"TransactionACK", "DBlockConfirmed"})
_HELD = "NotConfirmed"


def _ack(entry: Entry) -> tuple[str, dict[str, str]]:
    return "ack", {"hash": entry.hash().hex(), "chainid": entry.chain_id.hex()}


def _status(reply: object) -> str:
    """``entrydata.status`` of an ``ack`` answer; ``Unknown`` for an error or odd shape."""
    if isinstance(reply, dict):
        data = reply.get("entrydata")
        if isinstance(data, dict) and isinstance(data.get("status"), str):
            return str(data["status"])
    return "Unknown"


def _accepted(reply: object, *, repeat_ok: bool = True) -> bool:
    if not isinstance(reply, JsonRpcCallError):
        return True
    if repeat_ok and reply.code == ErrorCode.REPEATED_COMMIT:
        return True
    log.warning("node refused an anchor record: %s", reply)
    return False
