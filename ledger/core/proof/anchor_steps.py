"""Steps 7-11 of ``verify_bundle``: the directory block's anchor, down to the work.

7. anchor payload: the anchor transaction parses exactly and has an ``OP_RETURN "Fa"
   height KeyMR`` output for exactly this directory block (docs/formats.md section 7.2).
8. anchor transaction: not 64 bytes; SHA256d(transaction) is ``txid``; the Merkle path
   leads from ``tx_index`` to the root of ``headers[0]`` (``ledger.core.pow.merkle``, which
   refuses positions that exist only through Bitcoin's duplicated last node).
9. proof of work: the bundle names the policy's chain; every header is 80 bytes, with
   valid ``bits``, a target at most the policy's ``max_target``, and a proof-of-work hash
   (the policy's function: SHA256d or scrypt) that meets it; a genesis header (previous
   hash zero) is the policy's genesis block.
10. header links: each header names the previous one; at least the policy's confirmations.
    Only headers that passed step 9 are counted, so a header without the policy's work
    is never a confirmation (it fails step 9).
11. window anchor: refused when absent and the policy requires one; when present, the
    contract transaction commits to exactly this window, the height lies in it, the branch
    leads from the KeyMR at its position to the window root, and the transaction sits in
    ``headers[header_index]`` with the confirmations.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.core.anchor_record import (
    ANCHOR_PAYLOAD_BYTES,
    ANCHOR_TAG,
    WINDOW_PAYLOAD_BYTES,
    WINDOW_TAG,
    WindowCommitment,
    decode_anchor_payload,
)
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import sha256d
from ledger.core.merkle import MerkleNode, walk_branch
from ledger.core.pow.header import BlockHeader, bits_to_target
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.tx import PowTransaction
from ledger.core.pow.work import block_work, meets_target
from ledger.core.proof.bundle import ContractPart, ProofBundle, TxProof
from ledger.core.proof.policy import TrustPolicy
from ledger.core.proof.steps import ProofError, Step, StepReport

__all__ = [
    "check_anchor_inclusion",
    "check_anchor_payload",
    "check_contract",
    "check_headers",
    "check_links",
    "check_proof_of_work",
    "work_report",
]


def _parse_tx(raw: bytes, step: Step) -> PowTransaction:
    try:
        return PowTransaction.unmarshal(raw)
    except LedgerFormatError as exc:
        raise ProofError(step, f"transaction does not parse: {exc}") from exc


def check_anchor_payload(bundle: ProofBundle, dblock: DirectoryBlock) -> StepReport:
    """Step 7: the anchor transaction names this directory block's height and KeyMR.

    Raises:
        ProofError: it does not parse, has no ``"Fa"`` output, or names another block.
    """
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
    """Shared by steps 8 and 11: txid, Merkle path, the header's Merkle root."""
    if len(tx.transaction) == 64:
        raise ProofError(step, "a 64-byte transaction could pass for a Merkle node")
    txid = sha256d(tx.transaction)
    if txid != tx.txid:
        raise ProofError(
            step, "the stated txid is not SHA256d(transaction)", expected=tx.txid, computed=txid
        )
    try:
        header = BlockHeader.unmarshal(header_raw)
    except LedgerFormatError as exc:
        raise ProofError(step, f"header {index}: {exc}", index=index) from exc
    try:
        root = root_from_path(txid, tx.tx_index, tx.merkle_path)
    except LedgerFormatError as exc:
        raise ProofError(step, f"the transaction's Merkle path: {exc}", index=index) from exc
    if root != header.merkle_root:
        raise ProofError(
            step,
            f"the Merkle path does not lead to the root of header {index}",
            index=index,
            expected=header.merkle_root,
            computed=root,
        )
    return header


def check_anchor_inclusion(bundle: ProofBundle) -> StepReport:
    """Step 8: the anchor transaction is at ``tx_index`` in the block of ``headers[0]``.

    Raises:
        ProofError: no header, a 64-byte transaction, a wrong txid, a path that does not
            fit or does not lead to the header's Merkle root (``expected`` that root).
    """
    anchor = bundle.anchor
    if not anchor.headers:
        raise ProofError(Step.ANCHOR_INCLUSION, "the bundle has no anchor block header")
    header = _check_inclusion(anchor.tx, anchor.headers[0], Step.ANCHOR_INCLUSION, 0)
    return StepReport(
        Step.ANCHOR_INCLUSION,
        f"transaction {anchor.tx.txid[::-1].hex()} is #{anchor.tx.tx_index}"
        f" in block {header.hash()[::-1].hex()}",
    )


def check_proof_of_work(bundle: ProofBundle, policy: TrustPolicy) -> list[BlockHeader]:
    """Step 9 on a bundle: ``check_headers`` of its anchor's chain name and headers."""
    return check_headers(bundle.anchor.chain, bundle.anchor.headers, policy)


def check_headers(chain: str, headers: Sequence[bytes], policy: TrustPolicy) -> list[BlockHeader]:
    """Step 9: ``chain`` (a bundle's ``anchor.chain``) is the policy's, and every raw
    header carries the policy's work; the parsed headers, in order.

    Raises:
        ProofError: another chain, a header that does not parse, short work, a hash
            over its target, or another genesis block (``index`` the header).
    """
    if not policy.names_chain(chain):
        raise ProofError(
            Step.PROOF_OF_WORK,
            f"anchored in chain {chain!r}; policy {policy.name} trusts {policy.chain!r}",
        )
    return [_checked_header(i, raw, policy) for i, raw in enumerate(headers)]


def _checked_header(i: int, raw: bytes, policy: TrustPolicy) -> BlockHeader:
    try:
        header = BlockHeader.unmarshal(raw)
        target = bits_to_target(header.bits)
    except LedgerFormatError as exc:
        raise ProofError(Step.PROOF_OF_WORK, f"header {i}: {exc}", index=i) from exc
    if target > policy.max_target:
        raise ProofError(
            Step.PROOF_OF_WORK,
            f"header {i}: work is short (bits {header.bits:#010x} are easier than policy"
            f" {policy.name} allows)",
            index=i,
        )
    if not meets_target(raw, target, policy.pow_function):
        raise ProofError(
            Step.PROOF_OF_WORK,
            f"header {i}: {policy.pow_function.value} hash does not meet its target",
            index=i,
        )
    if header.prev_hash == bytes(32) and policy.genesis_hash not in (None, header.hash()):
        raise ProofError(
            Step.PROOF_OF_WORK,
            f"header {i} is the genesis block of another chain",
            index=i,
            expected=policy.genesis_hash,
            computed=header.hash(),
        )
    return header


def work_report(headers: Sequence[BlockHeader], policy: TrustPolicy) -> StepReport:
    """Step 9's report: how many headers, of which chain, with how much work each."""
    least = min((block_work(h.target()) for h in headers), default=0)
    return StepReport(
        Step.PROOF_OF_WORK,
        f"{len(headers)} headers of chain {policy.chain!r} ({policy.pow_function.value}),"
        f" each >= policy {policy.name}'s least work; the least is 2^{least.bit_length() - 1}"
        " hashes",
    )


def check_links(headers: Sequence[BlockHeader], policy: TrustPolicy) -> StepReport:
    """Step 10: each header names the previous one; at least the policy's confirmations.

    Raises:
        ProofError: a broken link (``index``, ``expected`` the previous hash) or too few.
    """
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
            f"{len(headers)} confirmations, policy {policy.name} needs {policy.confirmations}",
        )
    return StepReport(
        Step.HEADER_LINKS,
        f"{len(headers)} linked headers = {len(headers)} confirmations"
        f" ({policy.confirmations} required)",
    )


def check_contract(
    bundle: ProofBundle, dblock: DirectoryBlock, headers: Sequence[BlockHeader], policy: TrustPolicy
) -> StepReport:
    """Step 11: the window anchor, when the bundle has one (skipped otherwise, refused when
    the policy requires one).

    Raises:
        ProofError: no window where the policy requires one; the window, the branch, the
            transaction's place or its confirmations.
    """
    c = bundle.contract
    if c is None and policy.require_window:
        raise ProofError(Step.CONTRACT, f"policy {policy.name} requires a window anchor")
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
