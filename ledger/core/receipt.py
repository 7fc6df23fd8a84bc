"""Entry receipts: Merkle proof from an entry hash to a directory block KeyMR (docs/formats.md §6).

Construction (factomd ``receipts/receipts.go`` ``CreateReceipt``):

1. branch of the entry hash inside the EBlock body tree (markers included; first
   occurrence of the hash);
2. node {left = EBlock header hash, right = EBlock BodyMR, top = EBlock KeyMR};
3. branch of the EBlock KeyMR inside the DBlock's flat [chain ID, KeyMR, ...] tree (its
   first node has the chain ID as ``left``);
4. node {left = DBlock header hash, right = DBlock BodyMR, top = DBlock KeyMR}.

Verification (``verify_receipt``) returns None or raises ``ReceiptError`` naming the
failing step (see the function's docstring). The entry ``timestamp`` of the receipt is
informational: the Merkle proof does not bind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import check_hash, json_field, json_uint
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.errors import DecodeError, LedgerFormatError, MerkleProofError, NotInBlockError
from ledger.core.hashing import entry_hash as hash_entry
from ledger.core.hexbytes import from_hex, hash32_from_hex
from ledger.core.merkle import MerkleNode, branch_from_levels, hash_pair

__all__ = [
    "NodeMemo",
    "Receipt",
    "ReceiptError",
    "build_receipt",
    "directory_branch",
    "verify_receipt",
]

#: Parsed branch nodes by their ``(left, right, top)`` hex text (``Receipt.from_json``).
NodeMemo = dict[tuple[str, str, str], MerkleNode]

_ENTRY_CHAIN_ID = slice(1, 33)  # chain ID bytes inside a marshalled entry (section 1.1)


class ReceiptError(MerkleProofError):
    """A receipt that fails verification; ``step`` is the number of the failed check."""

    def __init__(
        self,
        message: str,
        *,
        step: int,
        expected: bytes | None = None,
        computed: bytes | None = None,
    ) -> None:
        super().__init__(f"receipt step {step}: {message}", expected=expected, computed=computed)
        self.step = step


@dataclass
class Receipt:
    """Proof that an entry is in an EBlock listed by a DBlock. Hashes are raw 32 bytes.

    Attributes:
        entry_hash: the proven entry hash.
        merkle_branch: nodes from the entry hash up to the DBlock KeyMR.
        entry_block_keymr / directory_block_keymr: the two block KeyMRs on the path.
        directory_block_height: DBlock height.
        timestamp_s: entry timestamp, Unix seconds (DBlock start + 60 x minute marker).
        raw_entry: the marshalled entry, when requested.
    """

    entry_hash: bytes
    merkle_branch: list[MerkleNode]
    entry_block_keymr: bytes
    directory_block_keymr: bytes
    directory_block_height: int
    timestamp_s: int
    raw_entry: bytes | None = None

    def __post_init__(self) -> None:
        for name in ("entry_hash", "entry_block_keymr", "directory_block_keymr"):
            setattr(self, name, check_hash(getattr(self, name), name))
        self.merkle_branch = list(self.merkle_branch)
        if not all(isinstance(node, MerkleNode) for node in self.merkle_branch):
            raise DecodeError("merkle_branch must hold MerkleNode values")
        json_uint(self.directory_block_height, "directory_block_height", bits=32)
        json_uint(self.timestamp_s, "timestamp_s")
        if self.raw_entry is not None:
            if not isinstance(self.raw_entry, bytes | bytearray):
                raise DecodeError("raw_entry must be bytes or None")
            self.raw_entry = bytes(self.raw_entry)

    def to_json(self) -> dict[str, Any]:
        """The object under ``result.receipt`` of the node's ``receipt`` call:
        ``{"entry": {"entryhash", "raw"?, "timestamp"}, "merklebranch": [{left, right,
        top}], "entryblockkeymr", "directoryblockkeymr", "directoryblockheight"}``."""
        entry: dict[str, Any] = {"entryhash": self.entry_hash.hex()}
        if self.raw_entry is not None:
            entry["raw"] = self.raw_entry.hex()
        entry["timestamp"] = self.timestamp_s
        return {
            "entry": entry,
            "merklebranch": [node.to_json() for node in self.merkle_branch],
            "entryblockkeymr": self.entry_block_keymr.hex(),
            "directoryblockkeymr": self.directory_block_keymr.hex(),
            "directoryblockheight": self.directory_block_height,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], *, nodes: NodeMemo | None = None) -> Receipt:
        """Parse ``to_json`` output (or ``{"receipt": {...}}`` around it).

        Strict on what it reads: hashes must be 64 hex characters, ``raw`` valid hex,
        numbers non-negative integers. ``timestamp`` and ``directoryblockheight`` default
        to 0 when absent (factomd omits zero values); unknown keys (e.g. the legacy
        ``bitcoin*`` fields) are ignored.

        Args:
            nodes: branch nodes already parsed, by their ``(left, right, top)`` text, added
                to as nodes are parsed; give the same dict for the receipts of one entry
                block: they share most of their nodes (the upper levels of the block's
                tree and every node above it), and parsing them was most of a sweep's
                verification time. Nodes are immutable, so sharing them is safe; keep the
                dict for a page of receipts, not longer (its size grows with the blocks).

        Raises:
            DecodeError: missing keys, wrong types, bad hex or wrong lengths.
        """
        if isinstance(obj, Mapping) and "receipt" in obj and "entry" not in obj:
            obj = obj["receipt"]
        entry = json_field(obj, "entry", "receipt")
        branch = json_field(obj, "merklebranch", "receipt")
        if not isinstance(branch, list):
            raise DecodeError("receipt merklebranch must be a list")
        raw = entry.get("raw") if isinstance(entry, Mapping) else None
        return cls(
            entry_hash=hash32_from_hex(
                json_field(entry, "entryhash", "receipt entry"), "entryhash"
            ),
            merkle_branch=[_branch_node(node, nodes) for node in branch],
            entry_block_keymr=hash32_from_hex(
                json_field(obj, "entryblockkeymr", "receipt"), "keymr"
            ),
            directory_block_keymr=hash32_from_hex(
                json_field(obj, "directoryblockkeymr", "receipt"), "directoryblockkeymr"
            ),
            directory_block_height=json_uint(obj.get("directoryblockheight", 0), "height", bits=32),
            timestamp_s=json_uint(entry.get("timestamp", 0), "timestamp"),
            raw_entry=None if raw is None else from_hex(raw, "raw entry"),
        )


def _branch_node(obj: Any, nodes: NodeMemo | None) -> MerkleNode:
    """``MerkleNode.from_json(obj)``, looked up in / added to ``nodes`` when given."""
    if nodes is None or type(obj) is not dict:
        return MerkleNode.from_json(obj)
    key = (obj.get("left"), obj.get("right"), obj.get("top"))
    try:
        node = nodes.get(key)  # type: ignore[arg-type]  # checked: unhashable -> TypeError
    except TypeError:  # not strings: from_json says what is wrong
        return MerkleNode.from_json(obj)
    if node is None:
        node = MerkleNode.from_json(obj)
        nodes[key] = node  # type: ignore[index]  # the three are strings: from_json took them
    return node


def build_receipt(
    entry_hash: bytes,
    entry_block: EntryBlock,
    directory_block: DirectoryBlock,
    *,
    raw_entry: bytes | None = None,
) -> Receipt:
    """Receipt for ``entry_hash`` (construction steps 1-4 of section 6).

    Args:
        entry_hash: raw 32 bytes.
        entry_block: the EBlock holding the entry.
        directory_block: the DBlock listing ``entry_block`` under its chain ID.
        raw_entry: marshalled entry to embed (``includerawentry``); must hash to entry_hash.

    Raises:
        NotInBlockError: the entry is not in the EBlock, or the EBlock (chain ID + KeyMR)
            is not in the DBlock.
        LedgerFormatError: ``raw_entry`` does not hash to ``entry_hash``.
    """
    entry_hash = bytes(entry_hash)
    if raw_entry is not None and hash_entry(raw_entry) != entry_hash:
        raise LedgerFormatError("raw_entry does not hash to entry_hash")
    eblock_keymr = entry_block.key_mr()
    position = entry_block.entry_position(entry_hash)
    if position is None:
        raise NotInBlockError(
            "entry is not in the entry block", item=entry_hash, block_key_mr=eblock_keymr
        )
    branch = branch_from_levels(entry_block.merkle_levels, position)
    branch.append(MerkleNode(entry_block.header_hash(), entry_block.body_mr(), eblock_keymr))
    branch += directory_branch(entry_block.chain_id, eblock_keymr, directory_block)
    return Receipt(
        entry_hash=entry_hash,
        merkle_branch=branch,
        entry_block_keymr=eblock_keymr,
        directory_block_keymr=directory_block.key_mr(),
        directory_block_height=directory_block.height,
        timestamp_s=entry_block.entry_timestamp_s(entry_hash, directory_block.timestamp_s),
        raw_entry=None if raw_entry is None else bytes(raw_entry),
    )


def directory_branch(
    chain_id: bytes, eblock_keymr: bytes, directory_block: DirectoryBlock
) -> list[MerkleNode]:
    """Construction steps 3-4: the branch of ``eblock_keymr`` in ``directory_block``'s
    tree, then the directory block's own node (top = its KeyMR).

    Raises:
        NotInBlockError: the entry block (chain ID + KeyMR) is not listed in the block.
    """
    dblock_keymr = directory_block.key_mr()
    listed = directory_block.entry_for_chain(chain_id)
    if listed is None or listed.key_mr != eblock_keymr:
        raise NotInBlockError(
            "entry block is not listed in the directory block",
            item=eblock_keymr,
            block_key_mr=dblock_keymr,
        )
    position = directory_block.entries.index(listed)
    branch = branch_from_levels(directory_block.branch_levels, 2 * position + 1)
    header_node = MerkleNode(directory_block.header_hash(), directory_block.body_mr(), dblock_keymr)
    return [*branch, header_node]


def verify_receipt(
    receipt: Receipt,
    *,
    trusted_directory_block_keymr: bytes | None = None,
    trusted_directory_block_height: int | None = None,
) -> None:
    """Verify ``receipt``; returns None or raises ``ReceiptError`` (a MerkleProofError).

    Steps (``ReceiptError.step``):

    1. ``raw_entry`` (when present) hashes to ``entry_hash``.
    2. Every branch node holds the running hash (starting at ``entry_hash``) as ``left``
       or ``right``, and its ``top`` equals SHA256(left || right); the top becomes the
       running hash.
    3. The entry block KeyMR is one of the tops.
    4. When ``raw_entry`` is present, the node above the entry block KeyMR pairs the
       entry's chain ID (``left``) with that KeyMR (``right``), as in the DBlock body.
    5. The last top equals ``directory_block_keymr``.
    6. ``directory_block_keymr`` equals ``trusted_directory_block_keymr`` (when given,
       e.g. from an anchor).
    7. ``directory_block_height`` equals ``trusted_directory_block_height`` (when given).
    """
    _check_raw_entry(receipt)
    tops = _walk(receipt)
    _check_entry_block(receipt, tops)
    _check_chain_binding(receipt, tops)
    final = tops[-1] if tops else receipt.entry_hash
    if final != receipt.directory_block_keymr:
        raise ReceiptError(
            "branch does not end at the directory block KeyMR",
            step=5,
            expected=receipt.directory_block_keymr,
            computed=final,
        )
    trusted = trusted_directory_block_keymr
    if trusted is not None and bytes(trusted) != receipt.directory_block_keymr:
        raise ReceiptError(
            "directory block KeyMR is not the trusted one",
            step=6,
            expected=bytes(trusted),
            computed=receipt.directory_block_keymr,
        )
    height = trusted_directory_block_height
    if height is not None and height != receipt.directory_block_height:
        raise ReceiptError(
            f"directory block height {receipt.directory_block_height} is not {height}", step=7
        )


def _check_raw_entry(receipt: Receipt) -> None:
    if receipt.raw_entry is None:
        return
    computed = hash_entry(receipt.raw_entry)
    if computed != receipt.entry_hash:
        raise ReceiptError(
            "raw entry does not hash to the entry hash",
            step=1,
            expected=receipt.entry_hash,
            computed=computed,
        )


def _walk(receipt: Receipt) -> list[bytes]:
    """Step 2; returns the tops in order."""
    current = receipt.entry_hash
    tops: list[bytes] = []
    for position, node in enumerate(receipt.merkle_branch):
        if current not in (node.left, node.right):
            raise ReceiptError(
                f"node {position} does not contain the running hash", step=2, expected=current
            )
        computed = hash_pair(node.left, node.right)
        if computed != node.top:
            raise ReceiptError(
                f"node {position} top is not SHA256(left || right)",
                step=2,
                expected=node.top,
                computed=computed,
            )
        current = node.top
        tops.append(current)
    return tops


def _check_entry_block(receipt: Receipt, tops: list[bytes]) -> None:
    if receipt.entry_block_keymr not in tops:
        raise ReceiptError(
            "entry block KeyMR is not on the branch", step=3, expected=receipt.entry_block_keymr
        )


def _check_chain_binding(receipt: Receipt, tops: list[bytes]) -> None:
    if receipt.raw_entry is None:
        return
    chain_id = receipt.raw_entry[_ENTRY_CHAIN_ID]
    position = tops.index(receipt.entry_block_keymr) + 1
    if position >= len(receipt.merkle_branch):
        raise ReceiptError("no directory block node above the entry block KeyMR", step=4)
    node = receipt.merkle_branch[position]
    if node.right != receipt.entry_block_keymr or node.left != chain_id:
        raise ReceiptError(
            "entry block is not paired with the entry's chain ID",
            step=4,
            expected=chain_id,
            computed=node.left,
        )
