"""Offline verification of a proof bundle: numbered steps, one error.

``verify_bundle`` returns None or raises ``ProofError`` naming the first failing step:

====  =================  ==================================================================
step  name               check
====  =================  ==================================================================
0     bundle format      JSON shape, ``format``/``version``, hex fields, integer fields
1     file hash          SHA-256 of the file equals ``document.sha256`` (skipped w/o file)
2     commitment         (version 2) the commitment of the document hash and its nonce;
                         a per-document entry publishes it
3     aggregation        (version 2, aggregated) the audit path leads from the commitment,
                         at its leaf index in a tree of its size, to the root the entry
                         publishes for that size
4     entry              version 1: the entry parses and carries the document hash;
                         version 2: it is exactly the commitment or batch entry of steps
                         2-3; it hashes to the receipt's entry hash
5     Merkle steps       every receipt node, entry block KeyMR, chain binding, final KeyMR
6     directory block    the block's recomputed KeyMR and height equal the receipt's
7     anchor payload     the transaction parses and has ``OP_RETURN "Fa" height KeyMR``
                         for exactly this directory block
8     anchor inclusion   txid = SHA256d(tx); the Merkle path leads to header 0's root
9     proof of work      the policy's chain; every header: 80 bytes, a target at least as
                         hard as the policy's, a proof-of-work hash (SHA256d or scrypt)
                         that meets it; a genesis header is the policy's
10    header links       each header names the previous one; at least the policy's
                         confirmations
11    window anchor      (required by the policy, or present) the contract transaction
                         commits to the window, the branch leads from the KeyMR at its
                         position to the window root, and the transaction is in one of
                         the headers
====  =================  ==================================================================

Step 0 is the parser's (``ledger.core.proof.bundle``); steps 1-4 are in
``ledger.core.proof.document_steps``, 5-6 in ``ledger_steps`` and 7-11 in ``anchor_steps``,
each check its own function, run here in order. A version-1 bundle reports steps 2 and 3 as
skipped. The trust policy (``ledger.core.proof.policy``) is a required argument: nothing is
trusted by default. A bundle that holds gives a ``Verdict`` naming the policy, with the
date the anchor proves (``ledger.core.proof.verdict``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ledger.core.pow.header import BlockHeader
from ledger.core.proof.anchor_steps import (
    check_anchor_inclusion,
    check_anchor_payload,
    check_contract,
    check_links,
    check_proof_of_work,
    work_report,
)
from ledger.core.proof.bundle import BUNDLE_FORMAT, ProofBundle
from ledger.core.proof.document_steps import (
    check_aggregation,
    check_commitment,
    check_entry,
    check_file_hash,
)
from ledger.core.proof.ledger_steps import (
    check_directory_block,
    check_receipt,
    directory_block_report,
)
from ledger.core.proof.policy import TrustPolicy
from ledger.core.proof.steps import Step, StepReport
from ledger.core.proof.verdict import Verdict

__all__ = ["verify_bundle"]


def verify_bundle(
    bundle: ProofBundle | Mapping[str, Any],
    *,
    policy: TrustPolicy,
    document_bytes: bytes | None = None,
    document_sha256: bytes | None = None,
    on_step: Callable[[StepReport], None] | None = None,
) -> Verdict:
    """Check ``bundle`` under ``policy`` (steps 0-11 of the module docstring).

    Both bundle versions verify (docs/proof-bundle.md).

    Args:
        bundle: a ``ProofBundle`` or its JSON object.
        document_bytes: the file's bytes (step 1); or ``document_sha256`` (raw 32 bytes) for
            a file hashed by the caller. With neither, step 1 is skipped and the bundle only
            proves that *its* document hash was notarized and anchored.
        policy: the trust policy applied (``ledger.core.proof.policy``: a shipped one such
            as ``policy_named("bitcoin-mainnet")`` or ``DEVNET``, or one read from a file).
        on_step: called once per passed or skipped step, in order.

    Returns:
        The ``Verdict``: the policy, the confirmations, and the date the anchor proves.

    Raises:
        ProofError: the first step that fails (``.step``, ``.index``).
    """
    report = on_step or (lambda _r: None)
    if not isinstance(bundle, ProofBundle):
        bundle = ProofBundle.from_json(bundle)
    report(StepReport(Step.FORMAT, f"{BUNDLE_FORMAT} version {bundle.version}"))
    report(check_file_hash(bundle, document_bytes, document_sha256))
    commitment_report, commitment = check_commitment(bundle)
    report(commitment_report)
    aggregation_report, root = check_aggregation(bundle, commitment)
    report(aggregation_report)
    report(check_entry(bundle, commitment, root))
    report(check_receipt(bundle))
    dblock = check_directory_block(bundle)
    report(directory_block_report(dblock))
    report(check_anchor_payload(bundle, dblock))
    report(check_anchor_inclusion(bundle))
    headers = check_proof_of_work(bundle, policy)
    report(work_report(headers, policy))
    report(check_links(headers, policy))
    report(check_contract(bundle, dblock, headers, policy))
    return _verdict(bundle, dblock.timestamp_s, headers, policy)


def _verdict(
    bundle: ProofBundle, operator_time_s: int, headers: list[BlockHeader], policy: TrustPolicy
) -> Verdict:
    span = policy.median_time_span
    median = None
    if span is not None and len(headers) >= span:
        median = sorted(h.timestamp for h in headers[:span])[span // 2]
    return Verdict(
        policy=policy,
        version=bundle.version,
        confirmations=len(headers),
        anchor_time_s=headers[0].timestamp,
        median_time_s=median,
        operator_time_s=operator_time_s,
        window=bundle.contract is not None,
    )
