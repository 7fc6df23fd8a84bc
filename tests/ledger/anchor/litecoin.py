"""Checking Litecoin regtest anchors and bundles in the tests: scrypt work, and the one
verification helper of the Bitcoin RPC backend's tests.

Litecoin's proof of work is scrypt (N=1024, r=1, p=1, 32 bytes) over the 80-byte header
with the header as its salt, compared little-endian with the target of ``bits``.
``verify_litecoin_bundle`` is the verifier itself (``ledger.core.proof.verify``) under the
shipped ``litecoin-regtest`` trust policy, with the test's confirmations.
"""

from __future__ import annotations

import dataclasses
import hashlib

from ledger.core.pow.header import BlockHeader, bits_to_target
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import policy_named
from ledger.core.proof.steps import Step
from ledger.core.proof.verdict import Verdict
from ledger.core.proof.verify import verify_bundle

CHAIN = "litecoin-regtest"


def scrypt_work_ok(header: bytes) -> bool:
    """True when ``header`` (80 bytes) meets its target under Litecoin's scrypt."""
    digest = hashlib.scrypt(header, salt=header, n=1024, r=1, p=1, dklen=32)
    return int.from_bytes(digest, "little") <= bits_to_target(BlockHeader.unmarshal(header).bits)


def verify_litecoin_bundle(
    bundle: ProofBundle, document: bytes, *, confirmations: int
) -> tuple[list[Step], Verdict]:
    """Verify ``bundle`` for ``document`` under ``litecoin-regtest`` with ``confirmations``:
    the steps reported, in order, and the verdict. Raises ``ProofError``."""
    policy = dataclasses.replace(policy_named(CHAIN), confirmations=confirmations)
    steps: list[Step] = []
    verdict = verify_bundle(
        bundle, policy=policy, document_bytes=document, on_step=lambda r: steps.append(r.step)
    )
    return steps, verdict
