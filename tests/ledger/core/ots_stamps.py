"""OpenTimestamps stamps made for tests: a calendar's promise over a root, a Bitcoin
attestation with a header mined here (trivial work: a test double of a block, placed only
by the lax policy double below), and a forged bundle carrying stamps."""

from __future__ import annotations

import dataclasses
import hashlib

from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.timestamp import Timestamp

from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import TrustPolicy, policy_named
from ledger.core.timestamps.bundle_part import OtsStamp, TimestampsPart
from ledger.core.timestamps.ots import BITCOIN_MAINNET_GENESIS, ots_file
from tests.ledger.anchor.bundles import Forged

MAINNET = policy_named("bitcoin-mainnet")
#: A test double of a policy: Bitcoin mainnet's genesis with no work required, so that a
#: header mined here in milliseconds is placed ("work"). Never a shipped policy.
LAX_MAINNET_DOUBLE = TrustPolicy(
    name="test-double-lax-mainnet",
    chain="bitcoin-mainnet",
    genesis_hash=BITCOIN_MAINNET_GENESIS,
    pow_function=MAINNET.pow_function,
    max_target=(1 << 255) - 1,
    confirmations=1,
)
HEADER_TIME = 1_500_000_000  # 2017-07-14 02:40:00 UTC


def pending_over(root: bytes) -> Timestamp:
    timestamp = Timestamp(root)
    branch = timestamp.ops.add(OpAppend(b"n" * 16)).ops.add(OpSHA256())
    branch.attestations.add(PendingAttestation("https://calendar.example"))
    return timestamp


def attested_over(root: bytes, height: int) -> tuple[bytes, bytes]:
    """A .ots over ``root`` with a Bitcoin attestation and a header mined for it here."""
    timestamp = Timestamp(root)
    leaf = timestamp.ops.add(OpSHA256())
    leaf.attestations.add(BitcoinBlockHeaderAttestation(height))
    for nonce in range(1 << 16):
        header = (
            (4).to_bytes(4, "little")
            + b"\0" * 32
            + leaf.msg
            + HEADER_TIME.to_bytes(4, "little")
            + (0x207FFFFF).to_bytes(4, "little")
            + nonce.to_bytes(4, "little")
        )
        digest = hashlib.sha256(hashlib.sha256(header).digest()).digest()
        if int.from_bytes(digest, "little") <= 0x7FFFFF << 232:
            return ots_file(timestamp), header
    raise AssertionError("no nonce")


def with_stamps(forged: Forged, *stamps: OtsStamp) -> ProofBundle:
    root = forged.bundle.receipt.directory_block_keymr
    return dataclasses.replace(forged.bundle, timestamps=TimestampsPart(root, (), stamps))
