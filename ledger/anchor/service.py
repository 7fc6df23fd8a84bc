"""The anchoring service (anchormaker-like): directory blocks in, signed anchor records out.

One round (``step``):

1. **discover**: ask the node (``heights``, ``dblock-by-height``) for directory blocks not
   anchored yet, in height order (at most ``max_heights_per_round``); check each block's
   KeyMR by hashing its raw bytes; submit one anchor per block (docs/formats.md §7.2) and one window
   commitment (7.3) over the last ``window_blocks`` KeyMRs up to the newest block; save them.
2. **record**: an anchor whose transaction left the best chain for good (``lost``: a
   conflict, a pool that dropped it) is submitted again; for every anchor whose transaction has ``confirmations`` blocks, write a
   signed ``AnchorRecord`` (7.4 v2) into ChainID(["FactomAnchorChain"]); for every confirmed
   window, one into ChainID(["FactomEthereumAnchorChain"]). Both chains are created at the
   first record. The node's ``anchors`` method reads these records. Before the first
   record after a start, the records the node already holds and the state does not list
   are marked recorded (``ledger.anchor.reconcile``: a state restored from a backup is
   older than the node), and the writer skips entries the node already has.

``anchor_proof`` serves the material of a proof bundle's ``anchor`` and ``contract``
sections (docs/proof-bundle.md) from the service's state and the backend.

The backend's calls run in a worker thread (``asyncio.to_thread``): a remote chain's
node answers over the network, and the bundled stack's other services share this
event loop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ledger.anchor.backend import (
    AnchorBackend,
    AnchorBackendError,
    Inclusion,
    InclusionProof,
    NotConfirmed,
)
from ledger.anchor.errors import AnchorError
from ledger.anchor.reconcile import records_on_node
from ledger.anchor.rounds import run_rounds
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchoredBlock, AnchoredWindow, AnchorState
from ledger.anchor.writer import LedgerWriter
from ledger.core.anchor_record import (
    CONTRACT_CHAIN_ID,
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    ContractRef,
    PowRef,
    WindowCommitment,
    anchor_chain_first_entry,
    contract_chain_first_entry,
    window_root,
)
from ledger.core.blocks.directory import (
    ADMIN_CHAIN_ID,
    COIN_CHAIN_ID,
    EC_CHAIN_ID,
    DirectoryBlock,
)
from ledger.core.errors import LedgerFormatError
from ledger.core.keys import SigningKey
from ledger.core.merkle import merkle_branch
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.errors import JsonRpcCallError

__all__ = ["AnchorService", "AnchorServiceError", "RoundReport"]

log = logging.getLogger(__name__)

_RECORD_BATCH = 200
#: The chains no document's proof leads to: the ledger's own (admin, entry credit, coin)
#: and the anchor records'. A block holding only these is anchored, not timestamped.
_OWN_CHAINS = frozenset(
    {ADMIN_CHAIN_ID, EC_CHAIN_ID, COIN_CHAIN_ID, POW_ANCHOR_CHAIN_ID, CONTRACT_CHAIN_ID}
)
#: Most unrecorded blocks (and windows) matched against the node's records at a start.
_RECONCILE_ROWS = 100_000


class AnchorServiceError(AnchorError, RuntimeError):
    """The node answered something the service cannot use (a block that does not hash)."""


@dataclass(frozen=True)
class RoundReport:
    """What one round did: blocks submitted, anchor and window records written."""

    submitted: int = 0
    recorded: int = 0
    windows_recorded: int = 0


class AnchorService:
    """Anchors the node's directory blocks into ``backend`` and records the anchors.

    Args:
        settings: the service's settings (window, confirmations, batch sizes).
        backend: the external chain.
        state: the service's own store.
        node: client of the node's ``/v2``.
        writer: pays for and reveals the records.
        signer: the anchor key (its public key is the node's trusted anchor key).
    """

    def __init__(
        self,
        settings: AnchorSettings,
        *,
        backend: AnchorBackend,
        state: AnchorState,
        node: AsyncJsonRpcClient,
        writer: LedgerWriter,
        signer: SigningKey,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.state = state
        self._node = node
        self._writer = writer
        self._signer = signer
        self._address = settings.contract_address_bytes()
        self._reconciled = False  # the node's records were read back since the start
        #: Why the last round could not use the external chain (None: it could).
        self.fault: AnchorBackendError | None = None

    # -- the loop -------------------------------------------------------------------------

    async def step(self) -> RoundReport:
        """One round: discover and submit new blocks, then record confirmed anchors.

        Raises:
            AnchorBackendError: the external chain failed (``fault`` keeps it until a
                round succeeds; what was submitted before the failure is saved, the rest
                waits for the next round).
        """
        try:
            tip = await self._node_height()
            submitted = await self.discover(tip)
            recorded, windows = await self.record(record_height=tip + 1)
        except AnchorBackendError as exc:
            self.fault = exc
            raise
        self.fault = None
        return RoundReport(submitted, recorded, windows)

    async def run(self, stop: asyncio.Event) -> None:
        """Run rounds every ``poll_interval_s`` until ``stop`` is set; errors are logged."""
        await run_rounds(
            self.step, stop, interval_s=self.settings.poll_interval_s, what="anchoring"
        )

    async def _node_height(self) -> int:
        heights = await self._node.call("heights")
        return int(heights["directoryblockheight"])

    # -- step 1: discover -----------------------------------------------------------------

    async def discover(self, tip: int) -> int:
        """Submit anchors for directory blocks above the last one submitted (up to ``tip``)."""
        start = self.state.last_height() + 1
        end = min(tip, start + self.settings.max_heights_per_round - 1)
        if start > end:
            return 0
        heights = list(range(start, end + 1))
        replies = await self._node.batch([("dblock-by-height", {"height": h}) for h in heights])
        blocks: list[AnchoredBlock] = []
        fault: AnchorBackendError | None = None
        for height, reply in zip(heights, replies, strict=True):
            if isinstance(reply, JsonRpcCallError):
                break
            dblock = _checked_block(reply, height)
            keymr = dblock.key_mr()
            try:
                txid = await asyncio.to_thread(self.backend.submit_anchor, height, keymr)
            except AnchorBackendError as exc:
                fault = exc
                break
            documents = any(e.chain_id not in _OWN_CHAINS for e in dblock.entries)
            blocks.append(AnchoredBlock(height, keymr, txid, holds_documents=documents))
        if blocks:
            window = None
            if fault is None:
                try:
                    window = await self._submit_window(blocks)
                except AnchorBackendError as exc:
                    fault = exc  # the next window covers these blocks too
            self.state.add(blocks, window)
        if fault is not None:
            raise fault
        return len(blocks)

    async def _submit_window(self, blocks: list[AnchoredBlock]) -> AnchoredWindow:
        top = blocks[-1].height
        low = max(0, top - self.settings.window_blocks + 1)
        keymrs = self.state.keymrs(low, blocks[0].height - 1)
        keymrs += [b.keymr for b in blocks if b.height >= low]
        if len(keymrs) != top - low + 1:
            raise AnchorServiceError(f"window {low}..{top} misses directory blocks")
        commitment = WindowCommitment(self._address, low, top, window_root(keymrs))
        txid = await asyncio.to_thread(self.backend.submit_window, commitment)
        return AnchoredWindow(txid, low, top, commitment.window_mr)

    # -- step 2: record -------------------------------------------------------------------

    async def record(self, *, record_height: int) -> tuple[int, int]:
        """Write records of confirmed anchors and windows; returns how many of each.

        The first call after a start marks recorded first what the node already holds
        (``reconcile``)."""
        if not self._reconciled:
            await self.reconcile()
            self._reconciled = True
        need = self.settings.confirmations
        blocks: list[tuple[AnchoredBlock, Inclusion]] = []
        for b in self.state.unrecorded_blocks(_RECORD_BATCH):
            inc = await asyncio.to_thread(self.backend.inclusion, b.anchor_txid)
            if inc is None and await asyncio.to_thread(self.backend.lost, b.anchor_txid):
                await self._reanchor_block(b)
            elif inc is not None and inc.confirmations >= need:
                blocks.append((b, inc))
        windows: list[tuple[AnchoredWindow, Inclusion]] = []
        for w in self.state.unrecorded_windows(_RECORD_BATCH):
            inc = await asyncio.to_thread(self.backend.inclusion, w.txid)
            if inc is None and await asyncio.to_thread(self.backend.lost, w.txid):
                await self._reanchor_window(w)
            elif inc is not None and inc.confirmations >= need:
                windows.append((w, inc))
        recorded = await self._record_blocks(blocks, record_height)
        return recorded, await self._record_windows(windows, record_height)

    async def _reanchor_block(self, block: AnchoredBlock) -> None:
        """Anchor ``block`` again: its transaction was lost (``AnchorBackend.lost``)."""
        txid = await asyncio.to_thread(self.backend.submit_anchor, block.height, block.keymr)
        self.state.replace_anchor(block.height, txid)
        log.warning(
            "anchor of directory block %d lost (%s); anchored again in %s",
            block.height,
            _display(block.anchor_txid),
            _display(txid),
        )

    async def _reanchor_window(self, window: AnchoredWindow) -> None:
        """Submit ``window`` again: its transaction was lost."""
        commitment = WindowCommitment(
            self._address, window.height_min, window.height_max, window.window_mr
        )
        txid = await asyncio.to_thread(self.backend.submit_window, commitment)
        self.state.replace_window(window.txid, txid)
        log.warning("window %d..%d anchored again", window.height_min, window.height_max)

    async def reconcile(self) -> tuple[int, int]:
        """Mark recorded the unrecorded blocks and windows whose record, signed by this
        service's key, the node already holds (``ledger.anchor.reconcile``): a block by
        height and KeyMR, a window by its heights and root. Returns how many of each.

        Raises:
            JsonRpcCallError, JsonRpcTransportError: the node refused a read or was
                unreachable (nothing is marked; the next round tries again).
        """
        blocks = {b.height: b for b in self.state.unrecorded_blocks(_RECONCILE_ROWS)}
        windows = {
            (w.height_min, w.height_max, w.window_mr): w
            for w in self.state.unrecorded_windows(_RECONCILE_ROWS)
        }
        key = self._signer.public_key
        marked_blocks = marked_windows = 0
        if blocks:
            lowest = min(blocks)
            for found in await records_on_node(
                self._node, POW_ANCHOR_CHAIN_ID, public_key=key, lowest_height=lowest
            ):
                block = blocks.pop(found.record.db_height, None)
                if block is not None and block.keymr == found.record.keymr:
                    self.state.mark_block_recorded(block.height, found.entry_hash)
                    marked_blocks += 1
        if windows:
            lowest = min(high for _low, high, _root in windows)  # a record's db_height
            for found in await records_on_node(
                self._node, CONTRACT_CHAIN_ID, public_key=key, lowest_height=lowest
            ):
                w = found.record.window
                window = (
                    None
                    if w is None
                    else windows.pop((w.height_min, w.height_max, w.window_mr), None)
                )
                if window is not None:
                    self.state.mark_window_recorded(window.txid, found.entry_hash)
                    marked_windows += 1
        if marked_blocks or marked_windows:
            log.info(
                "anchor records already on the node: %d blocks and %d windows marked recorded",
                marked_blocks,
                marked_windows,
            )
        return marked_blocks, marked_windows

    async def _record_blocks(self, items: list[tuple[AnchoredBlock, Inclusion]], at: int) -> int:
        if not items:
            return 0
        await self._writer.ensure_chain(anchor_chain_first_entry())
        entries = [self._pow_record(b, inc, at).to_entry(self._signer) for b, inc in items]
        done = await self._writer.write(entries)
        for (block, _inc), entry, ok in zip(items, entries, done, strict=True):
            if ok:
                self.state.mark_block_recorded(block.height, entry.hash())
        return sum(done)

    async def _record_windows(self, items: list[tuple[AnchoredWindow, Inclusion]], at: int) -> int:
        if not items:
            return 0
        await self._writer.ensure_chain(contract_chain_first_entry())
        entries = [self._window_record(w, inc, at).to_entry(self._signer) for w, inc in items]
        done = await self._writer.write(entries)
        for (window, _inc), entry, ok in zip(items, entries, done, strict=True):
            if ok:
                self.state.mark_window_recorded(window.txid, entry.hash())
        return sum(done)

    def _pow_record(self, block: AnchoredBlock, inc: Inclusion, at: int) -> AnchorRecord:
        ref = PowRef(_display(inc.txid), _display(inc.block_hash), inc.block_height, inc.tx_index)
        return AnchorRecord(db_height=block.height, keymr=block.keymr, record_height=at, pow=ref)

    def _window_record(self, window: AnchoredWindow, inc: Inclusion, at: int) -> AnchorRecord:
        commitment = WindowCommitment(
            self._address, window.height_min, window.height_max, window.window_mr
        )
        ref = ContractRef(
            contract_address=commitment.address_hex,
            txid="0x" + _display(inc.txid),
            block_hash="0x" + _display(inc.block_hash),
            block_height=inc.block_height,
            tx_index=inc.tx_index,
        )
        (keymr,) = self.state.keymrs(window.height_max, window.height_max)
        return AnchorRecord(
            db_height=window.height_max,
            keymr=keymr,
            record_height=at,
            contract=ref,
            window=commitment,
        )

    # -- proofs ---------------------------------------------------------------------------

    def anchor_proof(self, height: int, *, depth: int | None = None) -> dict[str, Any]:
        """``{"anchor": ..., "contract": ... | None}`` for directory block ``height``.

        ``depth`` headers (default: ``confirmations``) from the anchor's block; when the
        window covering ``height`` was mined at or after it and is ``depth`` deep too, the
        headers run on to cover it and ``contract`` is filled.

        Raises:
            KeyError: ``height`` was not submitted.
            NotConfirmed: the anchor is not ``depth`` deep yet.
        """
        block = self.state.block(height)
        if block is None:
            raise KeyError(height)
        depth = depth or self.settings.confirmations
        anchor = self.backend.inclusion_proof(block.anchor_txid, depth=depth)
        contract = None
        window = self.state.window_for(height)
        inc = None if window is None else self.backend.inclusion(window.txid)
        if window is not None and inc is not None and inc.block_height >= anchor.block_height:
            offset = inc.block_height - anchor.block_height
            try:
                longer = self.backend.inclusion_proof(block.anchor_txid, depth=offset + depth)
                window_tx = self.backend.inclusion_proof(window.txid, depth=1)
            except NotConfirmed:
                pass
            else:
                anchor = longer
                contract = self._contract_json(window, height, window_tx, offset)
        return {"anchor": anchor.to_json(), "contract": contract}

    def _contract_json(
        self, window: AnchoredWindow, height: int, proof: InclusionProof, header_index: int
    ) -> dict[str, Any]:
        keymrs = self.state.keymrs(window.height_min, window.height_max)
        branch = merkle_branch(keymrs, height - window.height_min)
        return {
            "contractaddress": "0x" + self._address.hex(),
            "dbheightmin": window.height_min,
            "dbheightmax": window.height_max,
            "windowmr": window.window_mr.hex(),
            "merklebranch": [node.to_json() for node in branch],
            **proof.tx_json(),
            "header_index": header_index,
        }


def _checked_block(reply: Any, height: int) -> DirectoryBlock:
    """The directory block of a ``dblock-by-height`` reply, read from its raw bytes, whose
    KeyMR and height are the ones the reply states."""
    try:
        block = DirectoryBlock.unmarshal(bytes.fromhex(reply["rawdata"]))
        stated = str(reply["dblock"]["keymr"])
    except (KeyError, TypeError, ValueError, LedgerFormatError) as exc:
        raise AnchorServiceError(f"directory block {height}: malformed reply ({exc})") from exc
    keymr = block.key_mr()
    if block.height != height or keymr.hex() != stated:
        raise AnchorServiceError(f"directory block {height}: raw bytes do not match its KeyMR")
    return block


def _display(hash32: bytes) -> str:
    return hash32[::-1].hex()
