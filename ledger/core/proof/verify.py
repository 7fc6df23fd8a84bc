"""Offline verification of a proof bundle: numbered steps, one error.

``verify_bundle`` returns None or raises ``ProofError`` naming the first failing step:

====  =================  ==================================================================
step  name               check
====  =================  ==================================================================
0     bundle format      JSON shape, ``format``/``version``, hex fields, integer fields
1     file hash          SHA-256 of the file equals ``document.sha256`` (skipped w/o file)
2     entry              entry bytes parse, carry the document hash, hash to the receipt's
3     Merkle steps       every receipt node, entry block KeyMR, chain binding, final KeyMR
4     directory block    the block's recomputed KeyMR and height equal the receipt's
5     anchor payload     the transaction parses and has ``OP_RETURN "Fa" height KeyMR``
                         for exactly this directory block
6     anchor inclusion   txid = SHA256d(tx); the Merkle path leads to header 0's root
7     proof of work      every header: 80 bytes, the policy's chain, a target at least as
                         hard as the policy's, a hash that meets it
8     header links       each header names the previous one; at least the policy's
                         confirmations
9     window anchor      (when present) the contract transaction commits to the window,
                         the branch leads from the KeyMR at its position to the window
                         root, and the transaction is in one of the headers
====  =================  ==================================================================

Step 0 is the parser's (``ledger.core.proof.bundle``); steps 1-9 are checked here, each
by its own function, in order. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ledger.core.anchor_record import (
    ANCHOR_PAYLOAD_BYTES,
    ANCHOR_TAG,
    WINDOW_PAYLOAD_BYTES,
    WINDOW_TAG,
    WindowCommitment,
    decode_anchor_payload,
)
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import entry_hash, sha256, sha256d
from ledger.core.merkle import MerkleNode, walk_branch
from ledger.core.pow.header import BlockHeader, bits_to_target
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import PowTransaction
from ledger.core.proof.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    ContractPart,
    ProofBundle,
    TxProof,
)
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.receipt import Receipt, ReceiptError, verify_receipt

__all__ = ["verify_bundle"]


def verify_bundle(
    bundle: ProofBundle | Mapping[str, Any],
    *,
    document_bytes: bytes | None = None,
    document_sha256: bytes | None = None,
    policy: PowParams | None = None,
    on_step: Callable[[StepReport], None] | None = None,
) -> None:
    """Check ``bundle`` (steps 0-9 of the module docstring); None or ``ProofError``.

    Args:
        bundle: a ``ProofBundle`` or its JSON object.
        document_bytes: the file's bytes (step 1); or ``document_sha256`` (raw 32 bytes) for
            a file hashed by the caller. With neither, step 1 is skipped and the bundle only
            proves that *its* document hash was anchored.
        policy: the anchor chain trusted (name, least difficulty, least confirmations);
            ``PowParams()`` (the bundled development chain's defaults) when None.
        on_step: called once per passed or skipped step, in order.

    Raises:
        ProofError: the first step that fails (``.step``, ``.index``).
    """
    report = on_step or (lambda _r: None)
    if not isinstance(bundle, ProofBundle):
        bundle = ProofBundle.from_json(bundle)
    policy = policy or PowParams()
    report(StepReport(Step.FORMAT, f"{BUNDLE_FORMAT} version {BUNDLE_VERSION}"))
    report(_check_file_hash(bundle, document_bytes, document_sha256))
    report(_check_entry(bundle))
    report(_check_receipt(bundle))
    dblock = _check_directory_block(bundle)
    report(_dblock_report(dblock))
    report(_check_anchor_payload(bundle, dblock))
    report(_check_anchor_inclusion(bundle))
    headers = _check_proof_of_work(bundle, policy)
    report(StepReport(Step.PROOF_OF_WORK, _work_detail(headers, policy)))
    report(_check_links(headers, policy))
    report(_check_contract(bundle, dblock, headers, policy))


def _check_file_hash(
    bundle: ProofBundle, document_bytes: bytes | None, document_sha256: bytes | None
) -> StepReport:
    if document_bytes is not None:
        computed = sha256(bytes(document_bytes))
    elif document_sha256 is not None:
        computed = bytes(document_sha256)
    else:
        return StepReport(Step.FILE_HASH, "no file given: not checked", skipped=True)
    if computed != bundle.document_sha256:
        raise ProofError(
            Step.FILE_HASH,
            "the file's SHA-256 is not the bundle's document hash",
            expected=bundle.document_sha256,
            computed=computed,
        )
    return StepReport(Step.FILE_HASH, f"SHA-256 {computed.hex()} matches the bundle")


def _check_entry(bundle: ProofBundle) -> StepReport:
    try:
        entry = Entry.unmarshal(bundle.entry)
    except LedgerFormatError as exc:
        raise ProofError(Step.ENTRY, f"entry bytes do not parse: {exc}") from exc
    if not _carries(entry, bundle.document_sha256):
        raise ProofError(Step.ENTRY, "the entry does not carry the document hash")
    computed = entry_hash(bundle.entry)
    if computed != bundle.receipt.entry_hash:
        raise ProofError(
            Step.ENTRY,
            "the entry does not hash to the receipt's entry hash",
            expected=bundle.receipt.entry_hash,
            computed=computed,
        )
    return StepReport(
        Step.ENTRY, f"entry {computed.hex()} (chain {entry.chain_id.hex()}) carries the hash"
    )


def _carries(entry: Entry, digest: bytes) -> bool:
    """True when an ExtID is the digest (raw or lowercase hex) or the JSON content names it."""
    if digest in entry.external_ids or digest.hex().encode() in entry.external_ids:
        return True
    try:
        content = json.loads(entry.content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(content, dict) and content.get("sha256") == digest.hex()


def _check_receipt(bundle: ProofBundle) -> StepReport:
    r = bundle.receipt
    try:
        receipt = Receipt(
            entry_hash=r.entry_hash,
            merkle_branch=[MerkleNode(*node) for node in r.branch],
            entry_block_keymr=r.entry_block_keymr,
            directory_block_keymr=r.directory_block_keymr,
            directory_block_height=r.directory_block_height,
            timestamp_s=0,
            raw_entry=bundle.entry,
        )
        verify_receipt(receipt)
    except ReceiptError as exc:
        reason = str(exc)
        if exc.expected is not None and exc.computed is not None:
            reason = reason.removesuffix(
                f" (expected {exc.expected.hex()}, computed {exc.computed.hex()})"
            )
        raise ProofError(
            Step.RECEIPT, reason, expected=exc.expected, computed=exc.computed
        ) from exc
    except LedgerFormatError as exc:
        raise ProofError(Step.RECEIPT, f"malformed receipt: {exc}") from exc
    return StepReport(
        Step.RECEIPT,
        f"{len(r.branch)} nodes: entry -> entry block {r.entry_block_keymr.hex()}"
        f" -> directory block KeyMR {r.directory_block_keymr.hex()}",
    )


def _check_directory_block(bundle: ProofBundle) -> DirectoryBlock:
    try:
        dblock = DirectoryBlock.unmarshal(bundle.directory_block)
    except LedgerFormatError as exc:
        raise ProofError(Step.DIRECTORY_BLOCK, f"directory block does not parse: {exc}") from exc
    keymr = dblock.key_mr()
    if keymr != bundle.receipt.directory_block_keymr:
        raise ProofError(
            Step.DIRECTORY_BLOCK,
            "the directory block's KeyMR is not the receipt's",
            expected=bundle.receipt.directory_block_keymr,
            computed=keymr,
        )
    if dblock.height != bundle.receipt.directory_block_height:
        raise ProofError(
            Step.DIRECTORY_BLOCK,
            f"the directory block is at height {dblock.height},"
            f" the receipt says {bundle.receipt.directory_block_height}",
        )
    return dblock


def _dblock_report(dblock: DirectoryBlock) -> StepReport:
    try:
        when = datetime.fromtimestamp(dblock.timestamp_s, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        # The header's minute count (uint32) reaches past year 9999, which datetime cannot
        # show; the proof does not depend on the date, so name the raw value instead.
        when = f"{dblock.timestamp_s} s after the Unix epoch"
    return StepReport(
        Step.DIRECTORY_BLOCK,
        f"height {dblock.height}, KeyMR {dblock.key_mr().hex()}, started {when}",
    )


def _parse_tx(raw: bytes, step: Step) -> PowTransaction:
    try:
        return PowTransaction.unmarshal(raw)
    except LedgerFormatError as exc:
        raise ProofError(step, f"transaction does not parse: {exc}") from exc


def _check_anchor_payload(bundle: ProofBundle, dblock: DirectoryBlock) -> StepReport:
    tx = _parse_tx(bundle.anchor.tx.transaction, Step.ANCHOR_PAYLOAD)
    anchors = [
        decode_anchor_payload(p)
        for p in tx.op_return_payloads()
        if len(p) == ANCHOR_PAYLOAD_BYTES and p[:2] == ANCHOR_TAG
    ]
    wanted = (dblock.height, dblock.key_mr())
    if wanted in anchors:
        return StepReport(Step.ANCHOR_PAYLOAD, f'"Fa" height {wanted[0]} KeyMR {wanted[1].hex()}')
    if not anchors:
        raise ProofError(Step.ANCHOR_PAYLOAD, 'the transaction has no "Fa" anchor output')
    height, keymr = anchors[0]
    if height != wanted[0]:
        raise ProofError(Step.ANCHOR_PAYLOAD, f"the anchor is for height {height}, not {wanted[0]}")
    raise ProofError(
        Step.ANCHOR_PAYLOAD,
        "the anchor names another directory block KeyMR",
        expected=wanted[1],
        computed=keymr,
    )


def _check_inclusion(tx: TxProof, header_raw: bytes, step: Step, index: int) -> BlockHeader:
    """Shared by steps 6 and 9: txid, Merkle path, the header's Merkle root."""
    if len(tx.transaction) == 64:
        raise ProofError(step, "a 64-byte transaction could pass for a Merkle node")
    txid = sha256d(tx.transaction)
    if txid != tx.txid:
        raise ProofError(
            step, "the stated txid is not SHA256d(transaction)", expected=tx.txid, computed=txid
        )
    try:
        header = BlockHeader.unmarshal(header_raw)
        root = root_from_path(txid, tx.tx_index, tx.merkle_path)
    except LedgerFormatError as exc:
        raise ProofError(step, f"header {index}: {exc}", index=index) from exc
    if root != header.merkle_root:
        raise ProofError(
            step,
            f"the Merkle path does not lead to the root of header {index}",
            index=index,
            expected=header.merkle_root,
            computed=root,
        )
    return header


def _check_anchor_inclusion(bundle: ProofBundle) -> StepReport:
    anchor = bundle.anchor
    if not anchor.headers:
        raise ProofError(Step.ANCHOR_INCLUSION, "the bundle has no anchor block header")
    header = _check_inclusion(anchor.tx, anchor.headers[0], Step.ANCHOR_INCLUSION, 0)
    return StepReport(
        Step.ANCHOR_INCLUSION,
        f"transaction {anchor.tx.txid[::-1].hex()} is #{anchor.tx.tx_index}"
        f" in block {header.hash()[::-1].hex()}",
    )


def _check_proof_of_work(bundle: ProofBundle, policy: PowParams) -> list[BlockHeader]:
    if bundle.anchor.chain != policy.chain:
        raise ProofError(
            Step.PROOF_OF_WORK,
            f"anchored in chain {bundle.anchor.chain!r}; the policy trusts {policy.chain!r}",
        )
    headers = []
    for i, raw in enumerate(bundle.anchor.headers):
        try:
            header = BlockHeader.unmarshal(raw)
            target = bits_to_target(header.bits)
        except LedgerFormatError as exc:
            raise ProofError(Step.PROOF_OF_WORK, f"header {i}: {exc}", index=i) from exc
        if target > policy.target:
            raise ProofError(
                Step.PROOF_OF_WORK,
                f"header {i}: work is short (bits {header.bits:#010x} are easier than"
                f" {policy.difficulty_bits} bits)",
                index=i,
            )
        if not header.meets_target():
            raise ProofError(
                Step.PROOF_OF_WORK, f"header {i}: hash does not meet its target", index=i
            )
        headers.append(header)
    return headers


def _work_detail(headers: Sequence[BlockHeader], policy: PowParams) -> str:
    return (
        f"{len(headers)} headers of chain {policy.chain!r}, each >= {policy.difficulty_bits} bits"
    )


def _check_links(headers: Sequence[BlockHeader], policy: PowParams) -> StepReport:
    for i in range(1, len(headers)):
        previous = headers[i - 1].hash()
        if headers[i].prev_hash != previous:
            raise ProofError(
                Step.HEADER_LINKS,
                f"header {i} does not link to header {i - 1}",
                index=i,
                expected=previous,
                computed=headers[i].prev_hash,
            )
    if len(headers) < policy.confirmations:
        raise ProofError(
            Step.HEADER_LINKS,
            f"{len(headers)} confirmations, the policy needs {policy.confirmations}",
        )
    return StepReport(
        Step.HEADER_LINKS,
        f"{len(headers)} linked headers = {len(headers)} confirmations"
        f" ({policy.confirmations} required)",
    )


def _check_contract(
    bundle: ProofBundle, dblock: DirectoryBlock, headers: Sequence[BlockHeader], policy: PowParams
) -> StepReport:
    c = bundle.contract
    if c is None:
        return StepReport(Step.CONTRACT, "no window anchor in this bundle", skipped=True)
    _check_window_commitment(c, dblock)
    _check_window_branch(c, dblock)
    if c.header_index >= len(headers):
        raise ProofError(Step.CONTRACT, f"header_index {c.header_index} is not in the bundle")
    _check_inclusion(c.tx, bundle.anchor.headers[c.header_index], Step.CONTRACT, c.header_index)
    if len(headers) - c.header_index < policy.confirmations:
        raise ProofError(Step.CONTRACT, "the contract block lacks confirmations")
    return StepReport(
        Step.CONTRACT,
        f"window {c.height_min}..{c.height_max} root {c.window_mr.hex()}"
        f" in header {c.header_index}",
    )


def _check_window_commitment(c: ContractPart, dblock: DirectoryBlock) -> None:
    tx = _parse_tx(c.tx.transaction, Step.CONTRACT)
    try:
        stated = WindowCommitment(c.contract_address, c.height_min, c.height_max, c.window_mr)
    except LedgerFormatError as exc:
        raise ProofError(Step.CONTRACT, f"malformed window: {exc}") from exc
    committed = [
        p for p in tx.op_return_payloads() if len(p) == WINDOW_PAYLOAD_BYTES and p[:2] == WINDOW_TAG
    ]
    if stated.payload() not in committed:
        raise ProofError(Step.CONTRACT, "the contract transaction does not commit to this window")
    if not c.height_min <= dblock.height <= c.height_max:
        raise ProofError(
            Step.CONTRACT, f"height {dblock.height} is outside {c.height_min}..{c.height_max}"
        )


def _check_window_branch(c: ContractPart, dblock: DirectoryBlock) -> None:
    keymr = dblock.key_mr()
    try:
        nodes = [MerkleNode(*node) for node in c.branch]
        top = walk_branch(keymr, nodes)
    except LedgerFormatError as exc:
        raise ProofError(Step.CONTRACT, f"window branch: {exc}") from exc
    if top != c.window_mr:
        raise ProofError(
            Step.CONTRACT,
            "the branch does not end at the window root",
            expected=c.window_mr,
            computed=top,
        )
    depth = (c.height_max - c.height_min).bit_length()
    position = _branch_index(keymr, nodes)
    if len(nodes) != depth or position != dblock.height - c.height_min:
        raise ProofError(
            Step.CONTRACT,
            f"the branch proves position {position} of {len(nodes)} levels; height"
            f" {dblock.height} is position {dblock.height - c.height_min} of {depth}",
        )


def _branch_index(start: bytes, nodes: Sequence[MerkleNode]) -> int:
    """The leaf position a full-detail branch walks from (bit set: running hash on the right)."""
    index, current = 0, start
    for level, node in enumerate(nodes):
        if current == node.right and current != node.left:
            index |= 1 << level
        current = node.top
    return index
