"""Checking Litecoin regtest anchors and bundles in the tests: scrypt work, and the one
verification helper of the Bitcoin RPC backend's tests.

Litecoin's proof of work is scrypt (N=1024, r=1, p=1, 32 bytes) over the 80-byte header
with the header as its salt, compared little-endian with the target of ``bits``; today's
verifier (``ledger.core.proof.verify``) checks SHA256d work, which a Litecoin header meets
only by chance. So ``verify_litecoin_bundle`` runs the verifier's public steps in its order
(steps 0-8, 10, 11: ``ledger.core.proof``) and checks step 9's work with scrypt here.
Once the verifier takes a named trust policy, the helper's body is the one call
``verify_bundle(bundle, document_bytes=document, policy=<the litecoin-regtest policy>)``.
"""

from __future__ import annotations

import hashlib

from ledger.core.pow.header import BlockHeader, bits_to_target
from ledger.core.pow.params import PowParams
from ledger.core.proof.anchor_steps import (
    check_anchor_inclusion,
    check_anchor_payload,
    check_contract,
    check_links,
)
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.document_steps import (
    check_aggregation,
    check_commitment,
    check_entry,
    check_file_hash,
)
from ledger.core.proof.ledger_steps import check_directory_block, check_receipt
from ledger.core.proof.steps import ProofError, Step

CHAIN = "litecoin-regtest"


def scrypt_work_ok(header: bytes) -> bool:
    """True when ``header`` (80 bytes) meets its target under Litecoin's scrypt."""
    digest = hashlib.scrypt(header, salt=header, n=1024, r=1, p=1, dklen=32)
    return int.from_bytes(digest, "little") <= bits_to_target(BlockHeader.unmarshal(header).bits)


def verify_litecoin_bundle(
    bundle: ProofBundle, document: bytes, *, confirmations: int
) -> list[Step]:
    """Verify ``bundle`` for ``document`` anchored in Litecoin regtest (module docstring);
    the steps run, in order. Raises ``ProofError`` (or AssertionError for step 9's work)."""
    policy = PowParams(CHAIN, 1, confirmations)
    steps = [Step.FORMAT]
    steps.append(check_file_hash(bundle, document, None).step)
    commitment_report, commitment = check_commitment(bundle)
    aggregation_report, root = check_aggregation(bundle, commitment)
    steps += [commitment_report.step, aggregation_report.step]
    steps.append(check_entry(bundle, commitment, root).step)
    steps.append(check_receipt(bundle).step)
    dblock = check_directory_block(bundle)
    steps.append(Step.DIRECTORY_BLOCK)
    steps.append(check_anchor_payload(bundle, dblock).step)
    steps.append(check_anchor_inclusion(bundle).step)
    if bundle.anchor.chain != CHAIN:
        raise ProofError(Step.PROOF_OF_WORK, f"anchored in {bundle.anchor.chain!r}")
    for i, raw in enumerate(bundle.anchor.headers):
        assert scrypt_work_ok(raw), f"header {i} lacks its scrypt work"
    headers = [BlockHeader.unmarshal(raw) for raw in bundle.anchor.headers]
    steps.append(Step.PROOF_OF_WORK)
    steps.append(check_links(headers, policy).step)
    steps.append(check_contract(bundle, dblock, headers, policy).step)
    return steps
