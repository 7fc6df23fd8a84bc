"""Steps 1-4 of ``verify_bundle``: from the file to the entry that publishes it.

1. file hash: SHA-256 of the file equals ``document.sha256``.
2. commitment (version 2): ``document_commitment(sha256, nonce)`` (``ledger.core.commitment``);
   for a per-document entry, it is the commitment the entry publishes.
3. aggregation (version 2, aggregated entry): the audit path leads from that commitment, at
   ``leaf_index`` of a tree of ``tree_size`` leaves, to a root (RFC 9162 section 2.1.3.2,
   ``ledger.core.aggregation``); the entry publishes this root and this size.
4. entry: version 1, the entry parses and carries the document hash; version 2, it is byte
   for byte ``commitment_entry(chain, commitment)`` or ``batch_entry(chain, root, size)``
   (``ledger.core.notary_entry``, ``chain`` its own chain ID); either way it hashes to the
   receipt's entry hash.

Steps 2 and 3 compare what they compute with what the entry's external IDs state, when the
entry states it in the expected form; an entry that does not parse or is of the other kind
is left to step 4, which rebuilds the whole entry. So a wrong nonce, leaf index, tree size
or path fails at its own step, and a swapped entry kind at the entry. A version-1 bundle
reports steps 2 and 3 as skipped. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ledger.core.aggregation import AggregationProofError, root_from_inclusion
from ledger.core.commitment import document_commitment
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hashing import entry_hash, sha256
from ledger.core.notary_entry import BATCH_TAG, COMMITMENT_TAG, batch_entry, commitment_entry
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step, StepReport

__all__ = ["check_aggregation", "check_commitment", "check_entry", "check_file_hash"]

_V1_SKIPPED = "version 1: the entry carries the document hash itself"
_HASH_HEX = re.compile(rb"[0-9a-f]{64}")
#: A batch size in decimal, no leading zero; 40 digits bound what ``int()`` reads (a tree
#: holds at most 2**40 leaves, 13 digits, so nothing valid is cut off).
_SIZE = re.compile(rb"[1-9][0-9]{0,39}")


def check_file_hash(
    bundle: ProofBundle, document_bytes: bytes | None, document_sha256: bytes | None
) -> StepReport:
    """Step 1: the file's SHA-256 (or the caller's) is ``document.sha256``; skipped without."""
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


@dataclass(frozen=True)
class _Stated:
    """What a version-2 entry's external IDs state (not yet checked byte for byte)."""

    commitment: bytes | None = None
    root: bytes | None = None
    size: int | None = None


def _stated(raw_entry: bytes) -> _Stated:
    """The commitment, or the batch root and size, that ``raw_entry`` names; empty when it
    does not parse or names neither in ``ledger.core.notary_entry``'s form."""
    try:
        ext_ids = Entry.unmarshal(raw_entry).external_ids
    except LedgerFormatError:
        return _Stated()
    if len(ext_ids) == 2 and ext_ids[0] == COMMITMENT_TAG and _HASH_HEX.fullmatch(ext_ids[1]):
        return _Stated(commitment=bytes.fromhex(ext_ids[1].decode()))
    if (
        len(ext_ids) == 3
        and ext_ids[0] == BATCH_TAG
        and _HASH_HEX.fullmatch(ext_ids[1])
        and _SIZE.fullmatch(ext_ids[2])
    ):
        return _Stated(root=bytes.fromhex(ext_ids[1].decode()), size=int(ext_ids[2]))
    return _Stated()


def check_commitment(bundle: ProofBundle) -> tuple[StepReport, bytes | None]:
    """Step 2: the document's commitment (raw 32 bytes; None for version 1).

    Raises:
        ProofError: the nonce or the document hash is not 32 bytes, or a per-document
            entry publishes another commitment (``expected`` the entry's, ``computed``).
    """
    nonce = bundle.commitment_nonce
    if nonce is None:
        return StepReport(Step.COMMITMENT, _V1_SKIPPED, skipped=True), None
    try:
        commitment = document_commitment(bundle.document_sha256, nonce)
    except DecodeError as exc:
        raise ProofError(Step.COMMITMENT, f"malformed: {exc}") from exc
    stated = _stated(bundle.entry).commitment
    if bundle.aggregation is None and stated is not None and stated != commitment:
        raise ProofError(
            Step.COMMITMENT,
            "the entry publishes another commitment",
            expected=stated,
            computed=commitment,
        )
    detail = f"commitment {commitment.hex()} of the document hash and its nonce"
    return StepReport(Step.COMMITMENT, detail), commitment


def check_aggregation(
    bundle: ProofBundle, commitment: bytes | None
) -> tuple[StepReport, bytes | None]:
    """Step 3: the aggregation tree's root (raw 32 bytes; None when there is no tree).

    Raises:
        ProofError: the path does not fit the leaf index and tree size, or the entry
            states another tree size or another root (``expected`` the entry's root).
    """
    agg = bundle.aggregation
    if commitment is None:
        return StepReport(Step.AGGREGATION, _V1_SKIPPED, skipped=True), None
    if agg is None:
        detail = "per-document entry: no aggregation tree"
        return StepReport(Step.AGGREGATION, detail, skipped=True), None
    try:
        root = root_from_inclusion(
            commitment, index=agg.leaf_index, size=agg.tree_size, path=agg.audit_path
        )
    except AggregationProofError as exc:
        raise ProofError(Step.AGGREGATION, str(exc)) from exc
    stated = _stated(bundle.entry)
    if stated.size is not None and stated.size != agg.tree_size:
        raise ProofError(
            Step.AGGREGATION,
            f"the tree has {agg.tree_size} leaves; the entry's batch has {stated.size}",
        )
    if stated.root is not None and stated.root != root:
        raise ProofError(
            Step.AGGREGATION,
            f"the audit path of leaf {agg.leaf_index} of {agg.tree_size} does not lead to"
            " the entry's root",
            expected=stated.root,
            computed=root,
        )
    detail = (
        f"leaf {agg.leaf_index} of {agg.tree_size}, audit path length {len(agg.audit_path)}:"
        f" root {root.hex()}"
    )
    return StepReport(Step.AGGREGATION, detail), root


def check_entry(bundle: ProofBundle, commitment: bytes | None, root: bytes | None) -> StepReport:
    """Step 4: the entry publishes what steps 1-3 established and hashes to the receipt's.

    Args:
        commitment: step 2's commitment (None: version 1, the entry must carry the hash).
        root: step 3's root (None: a per-document entry).

    Raises:
        ProofError: the entry does not parse, publishes something else (for version 2
            ``expected`` / ``computed`` are the entry hashes of the entry rebuilt and of
            the bundle's entry), or does not hash to the receipt's entry hash.
    """
    try:
        entry = Entry.unmarshal(bundle.entry)
    except LedgerFormatError as exc:
        raise ProofError(Step.ENTRY, f"entry bytes do not parse: {exc}") from exc
    if commitment is None:
        if not _carries(entry, bundle.document_sha256):
            raise ProofError(Step.ENTRY, "the entry does not carry the document hash")
        what = "carries the hash"
    else:
        what = _check_private_entry(bundle, entry, commitment, root)
    computed = entry_hash(bundle.entry)
    if computed != bundle.receipt.entry_hash:
        raise ProofError(
            Step.ENTRY,
            "the entry does not hash to the receipt's entry hash",
            expected=bundle.receipt.entry_hash,
            computed=computed,
        )
    return StepReport(Step.ENTRY, f"entry {computed.hex()} (chain {entry.chain_id.hex()}) {what}")


def _check_private_entry(
    bundle: ProofBundle, entry: Entry, commitment: bytes, root: bytes | None
) -> str:
    """Version 2: the entry is exactly the one ``ledger.core.notary_entry`` builds."""
    if bundle.aggregation is None or root is None:
        wanted = commitment_entry(entry.chain_id, commitment)
        kind, what = "the commitment entry of this document", "publishes the commitment"
    else:
        wanted = batch_entry(entry.chain_id, root, bundle.aggregation.tree_size)
        kind, what = "the batch entry of this root and tree size", "publishes the batch root"
    raw = wanted.marshal()
    if raw != bundle.entry:
        raise ProofError(
            Step.ENTRY,
            f"the entry is not {kind}",
            expected=entry_hash(raw),
            computed=entry_hash(bundle.entry),
        )
    return what


def _carries(entry: Entry, digest: bytes) -> bool:
    """True when an ExtID is the digest (raw or lowercase hex) or the JSON content names it."""
    if digest in entry.external_ids or digest.hex().encode() in entry.external_ids:
        return True
    try:
        content = json.loads(entry.content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(content, dict) and content.get("sha256") == digest.hex()
