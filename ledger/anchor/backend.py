"""The anchor backend: where directory block KeyMRs get anchored.

``AnchorBackend`` is the interface the anchoring service needs from an external chain:
submit an anchor (docs/formats.md §7.2) or a window commitment (7.3), then ask whether and where it
was included, with how many confirmations, and for the proof (transaction, Merkle path,
headers) that a proof bundle carries. ``EmbeddedPowBackend`` implements it over the
bundled proof-of-work chain and also mines it; another chain (a Bitcoin node, say) can be
plugged in by implementing the same members (``ledger.anchor.bitcoin_rpc.BitcoinRpcBackend``
anchors in a Bitcoin Core or Litecoin Core node). A backend that cannot act (its node is
down, its wallet locked or empty) raises ``AnchorBackendError`` naming the ``reason``.

Hashes are raw 32 bytes in internal order inside; ``InclusionProof.to_json`` renders the
``anchor`` section of a proof bundle (``docs/proof-bundle.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from ledger.anchor.chain import PowChain
from ledger.anchor.errors import AnchorError
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import anchor_transaction, op_return_script

__all__ = [
    "AnchorBackend",
    "AnchorBackendError",
    "EmbeddedPowBackend",
    "Inclusion",
    "InclusionProof",
    "NotConfirmed",
]

log = logging.getLogger(__name__)


class AnchorBackendError(AnchorError, RuntimeError):
    """The external chain cannot take or answer for anchors now; nothing was lost.

    Attributes:
        reason: a short code for health checks and metrics: ``node-unreachable``,
            ``rpc-refused`` (credentials), ``wallet-missing``, ``wallet-locked``,
            ``wallet-empty``, ``fee-too-low`` (an anchor waits longer than allowed),
            ``rejected`` (the node refused the transaction), ``rpc-error``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


class NotConfirmed(AnchorError, LookupError):
    """The transaction is unknown, not mined, or has fewer confirmations than asked."""


@dataclass(frozen=True)
class Inclusion:
    """Where a transaction was mined and how deep it is (confirmations: its block counts)."""

    txid: bytes
    block_hash: bytes
    block_height: int
    tx_index: int
    confirmations: int


@dataclass(frozen=True)
class InclusionProof:
    """A mined transaction with its Merkle path and the headers from its block on.

    Attributes:
        chain: the chain's name.
        transaction: raw transaction bytes.
        tx_index: position in the block; ``merkle_path``: sibling hashes (internal order).
        headers: raw 80-byte headers, the transaction's block first.
        block_height: height of the first header.
    """

    chain: str
    transaction: bytes
    txid: bytes
    tx_index: int
    merkle_path: tuple[bytes, ...]
    headers: tuple[bytes, ...]
    block_height: int

    def tx_json(self) -> dict[str, Any]:
        """``transaction``, ``txid`` (display), ``tx_index``, ``merkle_path`` (bundle v1)."""
        return {
            "transaction": self.transaction.hex(),
            "txid": self.txid[::-1].hex(),
            "tx_index": self.tx_index,
            "merkle_path": [h.hex() for h in self.merkle_path],
        }

    def to_json(self) -> dict[str, Any]:
        """The ``anchor`` section of a proof bundle."""
        return {"chain": self.chain, **self.tx_json(), "headers": [h.hex() for h in self.headers]}


class AnchorBackend(Protocol):
    """An external chain that holds anchors."""

    @property
    def chain(self) -> str:
        """Name of the chain (written into proof bundles)."""
        ...

    def submit_anchor(self, height: int, keymr: bytes) -> bytes:
        """Anchor directory block ``height`` / ``keymr``; returns the txid (idempotent)."""
        ...

    def submit_window(self, window: WindowCommitment) -> bytes:
        """Record a window commitment; returns the txid (idempotent)."""
        ...

    def inclusion(self, txid: bytes) -> Inclusion | None:
        """Where ``txid`` was mined, or None while unknown or unmined."""
        ...

    def inclusion_proof(self, txid: bytes, *, depth: int) -> InclusionProof:
        """Proof of ``txid`` with ``depth`` headers; NotConfirmed when not that deep yet."""
        ...

    def lost(self, txid: bytes) -> bool:
        """True when ``txid`` will not be mined as it stands (conflicted, dropped from the
        node's pool, unknown): its anchor must be submitted again."""
        ...


class EmbeddedPowBackend:
    """``AnchorBackend`` over the bundled ``PowChain``; ``run_miner`` mines it."""

    def __init__(self, chain: PowChain) -> None:
        self._chain = chain

    @property
    def chain(self) -> str:
        return self._chain.params.chain

    @property
    def params(self) -> PowParams:
        return self._chain.params

    @property
    def pow_chain(self) -> PowChain:
        return self._chain

    def submit_anchor(self, height: int, keymr: bytes) -> bytes:
        script = op_return_script(encode_anchor_payload(height, keymr))
        return self._chain.submit(anchor_transaction([script]))

    def submit_window(self, window: WindowCommitment) -> bytes:
        script = op_return_script(window.payload())
        return self._chain.submit(anchor_transaction([script]))

    def inclusion(self, txid: bytes) -> Inclusion | None:
        found = self._chain.transaction(txid)
        if found is None or found.block_height is None or found.tx_index is None:
            return None
        block = self._chain.block_at(found.block_height)
        if block is None:
            return None
        confirmations = self._chain.confirmations(found.block_height)
        return Inclusion(txid, block.hash, found.block_height, found.tx_index, confirmations)

    def inclusion_proof(self, txid: bytes, *, depth: int) -> InclusionProof:
        found = self._chain.transaction(txid)
        located = self._chain.merkle_path(txid)
        if found is None or located is None or found.block_height is None:
            raise NotConfirmed(f"transaction {txid[::-1].hex()} is not mined")
        headers = self._chain.headers(found.block_height, depth)
        if len(headers) < depth:
            raise NotConfirmed(
                f"transaction {txid[::-1].hex()} has {len(headers)} of {depth} confirmations"
            )
        index, path = located
        return InclusionProof(
            self.chain, found.raw, txid, index, tuple(path), tuple(headers), found.block_height
        )

    def lost(self, txid: bytes) -> bool:
        """True only for a txid the bundled chain does not hold (it keeps every submitted
        transaction until it is mined, and never reorganizes)."""
        return self._chain.transaction(txid) is None

    async def run_miner(
        self,
        stop: asyncio.Event,
        *,
        interval_s: float,
        depth: int = 1,
        idle_interval_s: float | None = None,
    ) -> None:
        """Mine (in a worker thread) until ``stop`` is set: a block every ``interval_s``
        seconds while one does work (``PowChain.awaits_block(depth)``: a transaction to
        include, or an anchor short of ``depth`` confirmations), otherwise one only when
        the tip is ``idle_interval_s`` seconds old (``None``: every ``interval_s``, as a
        chain that never idles).

        Why: the nonce search is pure Python holding the interpreter lock, and the bundled
        stack runs the node, wallet and publishing API in the same interpreter; empty
        blocks mined every second took a quarter of its time under load, for nothing.
        """
        while not stop.is_set():
            idle_due = idle_interval_s is None or self._chain.tip_age_s() >= idle_interval_s
            try:
                if idle_due or self._chain.awaits_block(depth):
                    await asyncio.to_thread(self._chain.mine_block)
            except Exception:  # keep mining: one failed block must not stop the chain
                log.exception("mining a proof-of-work block failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval_s)
