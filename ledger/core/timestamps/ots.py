"""OpenTimestamps proofs of a root, and their offline check against Bitcoin headers.

docs/proof-bundle.md, "Version 3": ``timestamps.opentimestamps`` lists ``OtsStamp`` s::

    {"ots": "<a complete .ots file, base64>", "headers": ["<80-byte header, hex>", ...]}

``ots`` is a standard detached timestamp file (the ``opentimestamps`` library's
``DetachedTimestampFile``: magic header, major version 1, the SHA-256 file-hash op, the
32-byte digest, then the timestamp tree), whose digest is the root the bundle's receipt
leads to (the directory block's KeyMR). ``headers`` are the Bitcoin block headers its
``BitcoinBlockHeaderAttestation`` s name, as the writer could fetch them, optionally
followed by the headers that link one to the first shipped checkpoint above it.

``check_ots`` gives one ``OtsCheck`` per stamp, in these numbered steps:

1. the bytes parse as a detached timestamp file and serialize back to the same bytes;
2. the file-hash op is SHA-256 and the digest is ``root``;
3. every header is 80 bytes and its SHA256d hash meets the target its own ``bits`` encode;
4. every header is the one some Bitcoin attestation's message (the op chain's result from
   the root) names as its Merkle root, in the header's own byte order, or one of the
   headers that follow such a header up to the next shipped checkpoint (optional);
5. each Bitcoin attestation whose header is given is placed under the policy applied: by
   a chain of following headers to the policy's next checkpoint (``Checkpoints.link``,
   exact), else ``TrustPolicy.place`` (a checkpoint, its difficulty period's bits and
   time, or the least work).

Any failure of steps 1-4 makes the stamp ``invalid``. Then: ``verified`` when an
attestation is placed (the root existed no later than its header's time, as stated by that
block's miner); ``unverifiable`` when attestations exist but none is placed (no header, or
the policy cannot place it); ``pending`` when the only attestations are calendars'
promises (``PendingAttestation``), never verified. Attestations of other notaries
(Litecoin, Ethereum, unknown tags) are listed in the reasons and not checked.

The attested height is the proof's claim: a header carries no height. Placement uses it
to find the difficulty period, so a height changed within the same period still places the
same header; the verdict therefore names the block by its hash too. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from opentimestamps.core.notary import (
    BitcoinBlockHeaderAttestation,
    PendingAttestation,
    TimeAttestation,
)
from opentimestamps.core.op import OpSHA256
from opentimestamps.core.serialize import (
    BytesDeserializationContext,
    BytesSerializationContext,
)
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from ledger.core.errors import LedgerFormatError
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.work import PowFunction
from ledger.core.proof.checkpoints import Placement
from ledger.core.proof.policy import TrustPolicy
from ledger.core.timestamps.bundle_part import OtsStamp
from ledger.core.timestamps.errors import OtsError

__all__ = [
    "BITCOIN_MAINNET_GENESIS",
    "OtsAttestation",
    "OtsCheck",
    "attested_heights",
    "check_ots",
    "ots_file",
    "parse_ots",
]

#: Bitcoin mainnet's genesis block hash (internal order): OTS Bitcoin attestations are mainnet's.
BITCOIN_MAINNET_GENESIS = bytes.fromhex(
    "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
)[::-1]

OtsState = Literal["verified", "unverifiable", "pending", "invalid"]


@dataclass(frozen=True)
class OtsAttestation:
    """One Bitcoin attestation of a stamp and what became of it.

    Attributes:
        height: the block height the attestation names (the proof's claim).
        state: ``verified`` (placed), ``unverifiable`` or ``invalid``.
        block_hash: the header's hash (internal order), None without a header.
        time_s: the header's time, Unix seconds (the bound), None without a header.
        basis: how the header was placed (``Placement.basis``), None when not placed.
        reason: why it is what it is, one sentence.
    """

    height: int
    state: Literal["verified", "unverifiable", "invalid"]
    block_hash: bytes | None
    time_s: int | None
    basis: str | None
    reason: str

    def describe(self) -> str:
        """One line: the block, its time and the basis, or the reason."""
        block = f"Bitcoin block {self.height}"
        if self.block_hash is not None:
            block += f" ({self.block_hash[::-1].hex()})"
        return f"{block}: {self.reason}"


@dataclass(frozen=True)
class OtsCheck:
    """The outcome for one stamp (module docstring).

    Attributes:
        index: the stamp's position in the list.
        state: ``verified``, ``unverifiable``, ``pending`` or ``invalid``.
        policy: the name of the policy applied.
        attestations: the Bitcoin attestations, by height.
        pending: the calendars whose promises the stamp holds (URIs).
        reasons: why the stamp is not verified, and what was not checked.
    """

    index: int
    state: OtsState
    policy: str
    attestations: tuple[OtsAttestation, ...] = ()
    pending: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def heights(self) -> tuple[int, ...]:
        """The attested Bitcoin heights."""
        return tuple(a.height for a in self.attestations)

    @property
    def times(self) -> tuple[int, ...]:
        """The header times of the verified attestations, Unix seconds."""
        return tuple(
            a.time_s for a in self.attestations if a.state == "verified" and a.time_s is not None
        )

    @property
    def time_s(self) -> int | None:
        """The earliest verified header time: the root existed no later than it."""
        return min(self.times) if self.state == "verified" and self.times else None


def parse_ots(ots: bytes) -> DetachedTimestampFile:
    """Parse a complete ``.ots`` file (step 1 of the module docstring).

    Raises:
        OtsError: the bytes do not parse, or do not serialize back to themselves.
    """
    try:
        detached = DetachedTimestampFile.deserialize(BytesDeserializationContext(ots))
    except Exception as exc:  # the library raises many kinds (its own, ValueError, ...)
        raise OtsError(f"not an OpenTimestamps file: {type(exc).__name__}: {exc}") from exc
    if ots_file(detached) != ots:
        raise OtsError("not the canonical serialization of its timestamp")
    return detached


def ots_file(detached: DetachedTimestampFile | Timestamp) -> bytes:
    """The ``.ots`` bytes of a detached timestamp file, or of a ``Timestamp`` over a
    32-byte root (wrapped with the SHA-256 file-hash op, as ``ots stamp`` writes them).

    Raises:
        OtsError: an empty timestamp, or a message that is not 32 bytes.
    """
    try:
        if isinstance(detached, Timestamp):
            detached = DetachedTimestampFile(OpSHA256(), detached)
        ctx = BytesSerializationContext()
        detached.serialize(ctx)
    except (ValueError, TypeError) as exc:
        raise OtsError(f"cannot serialize the timestamp: {exc}") from exc
    return bytes(ctx.getbytes())


def attested_heights(ots: bytes) -> list[int]:
    """The Bitcoin heights a ``.ots`` file's attestations name, ascending, each once: the
    headers a writer must fetch.

    Raises:
        OtsError: the bytes do not parse (``parse_ots``).
    """
    detached = parse_ots(ots)
    return sorted(
        {
            att.height
            for _msg, att in detached.timestamp.all_attestations()
            if isinstance(att, BitcoinBlockHeaderAttestation)
        }
    )


def check_ots(stamp: OtsStamp, root: bytes, *, policy: TrustPolicy, index: int = 0) -> OtsCheck:
    """Check ``stamp`` over ``root`` (32 bytes) under ``policy`` (module docstring).

    Args:
        stamp: the stamp as the bundle carries it.
        root: the root the stamp must be over (the KeyMR the verified receipt leads to).
        policy: the trust policy that places headers; a policy for another chain than
            Bitcoin mainnet places none (every attestation ``unverifiable``).
        index: the stamp's position, reported back.

    Returns:
        The ``OtsCheck``; never raises for bad data (that is ``invalid``).
    """
    try:
        detached = parse_ots(stamp.ots)
        _check_digest(detached, root)
        headers = _headers(stamp.headers)
    except OtsError as exc:
        return OtsCheck(index, "invalid", policy.name, reasons=(exc.reason,))
    bitcoin, pending, others = _attestations(detached.timestamp)
    following = {h.prev_hash: h for h in headers}
    results, used = [], set()
    for msg, height in bitcoin:
        result, linked = _attestation(msg, height, headers, following, policy)
        results.append(result)
        used |= {id(h) for h in linked}
    unused = [
        h for h in headers if id(h) not in used and all(h.merkle_root != msg for msg, _ in bitcoin)
    ]
    if unused:
        block = unused[0].hash()[::-1].hex()
        reason = f"Merkle root mismatch: header {block} is no attestation's message"
        return OtsCheck(index, "invalid", policy.name, reasons=(reason,))
    reasons = tuple(a.describe() for a in results if a.state != "verified") + others
    return OtsCheck(
        index,
        _state(tuple(results), pending),
        policy.name,
        attestations=tuple(results),
        pending=pending,
        reasons=reasons,
    )


def _state(results: tuple[OtsAttestation, ...], pending: tuple[str, ...]) -> OtsState:
    states = {a.state for a in results}
    if "invalid" in states:
        return "invalid"
    if "verified" in states:
        return "verified"
    if states or not pending:
        return "unverifiable"
    return "pending"


def _check_digest(detached: DetachedTimestampFile, root: bytes) -> None:
    """Step 2."""
    if not isinstance(detached.file_hash_op, OpSHA256):
        raise OtsError(f"the file-hash op is {detached.file_hash_op}, not sha256")
    if detached.file_digest != root:
        raise OtsError(f"stamps {detached.file_digest.hex()}, not the root {root.hex()}")


def _headers(raw: tuple[bytes, ...]) -> list[BlockHeader]:
    """Step 3: each header parses and meets its own target."""
    headers = []
    for data in raw:
        try:
            header = BlockHeader.unmarshal(data)
            meets = header.meets_target()
        except LedgerFormatError as exc:
            raise OtsError(f"a header does not parse: {exc}") from exc
        if not meets:
            raise OtsError(f"header {header.hash()[::-1].hex()} misses its own target")
        headers.append(header)
    return headers


def _attestations(
    timestamp: Timestamp,
) -> tuple[list[tuple[bytes, int]], tuple[str, ...], tuple[str, ...]]:
    """(message, height) of each Bitcoin attestation; pending calendars; other notaries."""
    bitcoin: list[tuple[bytes, int]] = []
    pending: list[str] = []
    others: list[str] = []
    for msg, att in timestamp.all_attestations():
        if isinstance(att, BitcoinBlockHeaderAttestation):
            bitcoin.append((bytes(msg), int(att.height)))
        elif isinstance(att, PendingAttestation):
            pending.append(str(att.uri))
        else:
            others.append(f"{_notary(att)}: not checked (not a Bitcoin attestation)")
    return sorted(bitcoin, key=lambda item: item[1]), tuple(sorted(pending)), tuple(others)


def _notary(att: TimeAttestation) -> str:
    return repr(att) if len(repr(att)) <= 80 else type(att).__name__


def _attestation(
    msg: bytes,
    height: int,
    headers: list[BlockHeader],
    following: dict[bytes, BlockHeader],
    policy: TrustPolicy,
) -> tuple[OtsAttestation, list[BlockHeader]]:
    """Steps 4-5 for one Bitcoin attestation; also the following headers a link used."""
    if len(msg) != 32:
        reason = "its message is not 32 bytes"
        return OtsAttestation(height, "invalid", None, None, None, reason), []
    header = next((h for h in headers if h.merkle_root == msg), None)
    if header is None:
        return OtsAttestation(height, "unverifiable", None, None, None, "its header is missing"), []
    block_hash, time_s = header.hash(), header.timestamp
    if policy.genesis_hash != BITCOIN_MAINNET_GENESIS or policy.pow_function != PowFunction.SHA256D:
        reason = f"policy {policy.name} is not for Bitcoin mainnet"
        return OtsAttestation(height, "unverifiable", block_hash, time_s, None, reason), []
    linked = (
        None if policy.checkpoints is None else policy.checkpoints.link(header, height, following)
    )
    if linked is not None:
        placed, used = linked
        return OtsAttestation(
            height, "verified", block_hash, time_s, placed.basis, placed.detail
        ), used
    placement = policy.place(header, height)
    if not isinstance(placement, Placement):
        reason = f"policy {policy.name} cannot place it: {placement}"
        return OtsAttestation(height, "unverifiable", block_hash, time_s, None, reason), []
    result = OtsAttestation(
        height, "verified", block_hash, time_s, placement.basis, placement.detail
    )
    return result, []
