"""OpenTimestamps stamps: the real proofs the OpenTimestamps client publishes, checked
offline with the real Bitcoin header they attest (tests/vectors/opentimestamps/README.md),
single-byte tampering, and the stock ``ots`` client reading the files we write."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.timestamp import Timestamp

from ledger.core.errors import DecodeError
from ledger.core.pow.header import BlockHeader
from ledger.core.proof.checkpoints import Checkpoint, Checkpoints
from ledger.core.proof.policy import DEVNET, policy_named
from ledger.core.timestamps.errors import OtsError
from ledger.core.timestamps.ots import (
    OtsStamp,
    attested_heights,
    check_ots,
    ots_file,
    parse_ots,
)

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "opentimestamps"
MAINNET = policy_named("bitcoin-mainnet")
HEADER_358391 = bytes.fromhex((VECTORS / "block-358391.header.hex").read_text().strip())
HASH_358391 = "000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319"
TIME_358391 = 1432827678  # 2015-05-28 15:41:18 UTC
HEIGHT_TAG = bytes.fromhex("0588960d73d71901")  # BitcoinBlockHeaderAttestation


def ots(name: str) -> bytes:
    return (VECTORS / f"{name}.ots").read_bytes()


def root_of(name: str) -> bytes:
    return hashlib.sha256((VECTORS / name).read_bytes()).digest()


def hello(headers: tuple[bytes, ...] = (HEADER_358391,)) -> OtsStamp:
    return OtsStamp(ots("hello-world.txt"), headers)


HELLO_ROOT = root_of("hello-world.txt")


def test_hello_world_verifies_with_its_real_header_under_bitcoin_mainnet() -> None:
    check = check_ots(hello(), HELLO_ROOT, policy=MAINNET)
    assert check.state == "verified" and check.policy == "bitcoin-mainnet"
    assert check.heights == (358391,) and check.time_s == TIME_358391
    [att] = check.attestations
    assert att.block_hash is not None and att.block_hash[::-1].hex() == HASH_358391
    # a 2015 header is far below the policy's least work: placed by its period's bits
    assert att.basis == "era" and "356832-358847" in att.reason


def test_the_header_proves_itself() -> None:
    digest = hashlib.sha256(hashlib.sha256(HEADER_358391).digest()).digest()
    assert digest[::-1].hex() == HASH_358391


def test_without_the_header_it_is_unverifiable_never_verified() -> None:
    check = check_ots(hello(()), HELLO_ROOT, policy=MAINNET)
    assert check.state == "unverifiable" and check.time_s is None
    assert "header is missing" in check.reasons[0]


@pytest.mark.parametrize(
    ("name", "height"),
    [("empty", 129405), ("different-blockchains.txt", 455605)],
)
def test_complete_proofs_whose_header_we_lack_are_unverifiable(name: str, height: int) -> None:
    check = check_ots(OtsStamp(ots(name), ()), root_of(name), policy=MAINNET)
    assert check.state == "unverifiable" and check.heights == (height,)


@pytest.mark.parametrize(
    "name", ["incomplete.txt", "merkle1.txt", "merkle2.txt", "merkle3.txt", "two-calendars.txt"]
)
def test_calendar_promises_are_pending(name: str) -> None:
    check = check_ots(OtsStamp(ots(name), ()), root_of(name), policy=MAINNET)
    assert check.state == "pending" and check.pending and check.time_s is None
    assert all(uri.startswith("https://") for uri in check.pending)


def test_an_unknown_notary_alone_is_unverifiable_and_beside_a_calendar_pending() -> None:
    alone = check_ots(
        OtsStamp(ots("unknown-notary.txt"), ()), root_of("unknown-notary.txt"), policy=MAINNET
    )
    assert alone.state == "unverifiable" and "not checked" in alone.reasons[0]
    name = "known-and-unknown-notary.txt"
    both = check_ots(OtsStamp(ots(name), ()), root_of(name), policy=MAINNET)
    assert both.state == "pending" and "not checked" in both.reasons[0]


def test_bad_stamp_is_invalid_against_the_real_header() -> None:
    check = check_ots(
        OtsStamp(ots("bad-stamp.txt"), (HEADER_358391,)), root_of("bad-stamp.txt"), policy=MAINNET
    )
    assert check.state == "invalid" and "Merkle root mismatch" in check.reasons[0]


def test_a_sha1_file_hash_is_not_this_format() -> None:
    check = check_ots(OtsStamp(ots("bitcoin.pdf"), ()), b"\0" * 32, policy=MAINNET)
    assert check.state == "invalid" and "sha1" in check.reasons[0]


def test_another_root_is_invalid() -> None:
    check = check_ots(hello(), hashlib.sha256(b"other").digest(), policy=MAINNET)
    assert check.state == "invalid" and "not the root" in check.reasons[0]


def test_a_policy_for_another_chain_places_nothing() -> None:
    check = check_ots(hello(), HELLO_ROOT, policy=DEVNET)
    assert check.state == "unverifiable" and "not for Bitcoin mainnet" in check.reasons[0]


def _height_positions(data: bytes) -> set[int]:
    """The bytes of the attestation's height (tag, payload length, then the varuint)."""
    at = data.index(HEIGHT_TAG) + len(HEIGHT_TAG)
    return set(range(at + 1, at + 1 + data[at]))


def _assert_not_verified_or_same_block(data: bytes, position: int) -> None:
    """A changed byte never makes another claim verify. Two changes keep the claim: the
    height, which is the proof's and not the header's (a height in the same difficulty
    period places the same block: ots.py docstring), and ``append`` <-> ``prepend`` of a
    Merkle sibling equal to the node itself (Bitcoin pairs an odd level's last txid with
    itself). Either way the block, its hash and its time are the original's."""
    check = check_ots(OtsStamp(data, (HEADER_358391,)), HELLO_ROOT, policy=MAINNET)
    if check.state != "verified":
        return
    [att] = check.attestations
    assert att.block_hash is not None and att.block_hash[::-1].hex() == HASH_358391
    assert att.time_s == TIME_358391
    assert att.height == 358391 or position in _height_positions(ots("hello-world.txt"))


def test_every_single_byte_flip_of_the_ots_file_fails() -> None:
    original = ots("hello-world.txt")
    for position in range(len(original)):
        mutated = bytearray(original)
        mutated[position] ^= 0x01
        _assert_not_verified_or_same_block(bytes(mutated), position)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_single_byte_change_of_the_ots_file_fails(data: st.DataObject) -> None:
    original = ots("hello-world.txt")
    position = data.draw(st.integers(0, len(original) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != original[position]))
    mutated = bytearray(original)
    mutated[position] = value
    _assert_not_verified_or_same_block(bytes(mutated), position)


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_every_single_byte_change_of_the_header_fails(flip: int) -> None:
    for position in range(len(HEADER_358391)):
        mutated = bytearray(HEADER_358391)
        mutated[position] ^= flip
        check = check_ots(hello((bytes(mutated),)), HELLO_ROOT, policy=MAINNET)
        assert check.state in {"invalid", "unverifiable"}, position


def test_trailing_bytes_and_truncation_are_invalid() -> None:
    for data in (ots("hello-world.txt") + b"\0", ots("hello-world.txt")[:-1], b""):
        assert check_ots(OtsStamp(data, ()), HELLO_ROOT, policy=MAINNET).state == "invalid"
    with pytest.raises(OtsError):
        parse_ots(b"\0OpenTimestamps")


def test_attested_heights_are_what_a_writer_must_fetch() -> None:
    assert attested_heights(ots("hello-world.txt")) == [358391]
    assert attested_heights(ots("incomplete.txt")) == []
    assert attested_heights(ots("different-blockchains.txt")) == [455605]


def test_json_round_trip_and_refusals() -> None:
    stamp = hello()
    obj = stamp.to_json()
    assert set(obj) == {"ots", "headers"} and obj["headers"] == [HEADER_358391.hex()]
    assert OtsStamp.from_json(obj) == stamp
    for bad in (
        obj | {"extra": 1},
        {"ots": obj["ots"]},
        obj | {"ots": "not base64!"},
        obj | {"headers": [HEADER_358391.hex().upper()]},
        obj | {"headers": [HEADER_358391[:79].hex()]},
        [],
    ):
        with pytest.raises(DecodeError):
            OtsStamp.from_json(bad)


def _stamp_over(root: bytes) -> Timestamp:
    """A calendar-style timestamp over ``root``: two calendars' promises."""
    timestamp = Timestamp(root)
    for nonce, uri in ((b"a" * 16, "https://a.example"), (b"b" * 16, "https://b.example")):
        branch = timestamp.ops.add(OpAppend(nonce)).ops.add(OpSHA256())
        branch.attestations.add(PendingAttestation(uri))
    return timestamp


def test_a_timestamp_we_write_is_a_standard_file() -> None:
    root = hashlib.sha256(b"keymr").digest()
    data = ots_file(_stamp_over(root))
    check = check_ots(OtsStamp(data, ()), root, policy=MAINNET)
    assert check.state == "pending" and check.pending == ("https://a.example", "https://b.example")
    assert parse_ots(data).file_digest == root


def test_a_made_up_bitcoin_attestation_with_a_made_up_header_is_not_placed() -> None:
    """A forger's header: its own (trivial) work, at a 2015 height: bits are not the era's."""
    root = hashlib.sha256(b"forged").digest()
    timestamp = Timestamp(root)
    leaf = timestamp.ops.add(OpSHA256())
    leaf.attestations.add(BitcoinBlockHeaderAttestation(358391))
    header = _mine(leaf.msg, bits=0x207FFFFF, time_s=TIME_358391)
    check = check_ots(OtsStamp(ots_file(timestamp), (header,)), root, policy=MAINNET)
    assert check.state == "unverifiable" and "bits" in check.reasons[0]


def _mine(merkle_root: bytes, *, bits: int, time_s: int) -> bytes:
    for nonce in range(1 << 16):
        raw = (
            (2).to_bytes(4, "little")
            + b"\0" * 32
            + merkle_root
            + time_s.to_bytes(4, "little")
            + bits.to_bytes(4, "little")
            + nonce.to_bytes(4, "little")
        )
        digest = hashlib.sha256(hashlib.sha256(raw).digest()).digest()
        if int.from_bytes(digest, "little") <= 0x7FFFFF << 232:
            return raw
    raise AssertionError("no nonce found")


def test_the_stock_ots_client_reads_the_files_we_write(tmp_path: Path) -> None:
    """``ots`` comes with the dev dependencies (``opentimestamps-client``), beside Python."""
    beside = Path(sys.executable).parent / "ots"
    ots_bin = str(beside) if beside.exists() else shutil.which("ots")
    assert ots_bin, "the ots client (opentimestamps-client) is not installed"
    root = hashlib.sha256(b"keymr").digest()
    path = tmp_path / "bundle.proof.json.ots"
    path.write_bytes(ots_file(_stamp_over(root)))
    hello_path = tmp_path / "hello.ots"
    hello_path.write_bytes(OtsStamp.from_json(hello().to_json()).ots)
    for file, expected in ((path, root.hex()), (hello_path, HELLO_ROOT.hex())):
        done = subprocess.run(
            [ots_bin, "info", str(file)], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        assert f"File sha256 hash: {expected}" in done.stdout
    assert (
        "PendingAttestation('https://a.example')"
        in subprocess.run(
            [ots_bin, "info", str(path)], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    )


@given(
    st.binary(max_size=300),
    st.lists(st.binary(min_size=80, max_size=80), max_size=3),
)
def test_any_stamp_round_trips_through_json(ots_bytes: bytes, headers: list[bytes]) -> None:
    stamp = OtsStamp(ots_bytes, tuple(headers))
    assert OtsStamp.from_json(stamp.to_json()) == stamp


def _chain_from(first_root: bytes, *, count: int) -> list[BlockHeader]:
    """``count`` headers mined here, each naming the previous one; the first has
    ``first_root`` as its Merkle root (a test double of a stretch of chain)."""
    chain: list[BlockHeader] = []
    prev = b"\1" * 32
    for i in range(count):
        root = first_root if i == 0 else hashlib.sha256(bytes([i])).digest()
        header = BlockHeader.unmarshal(_mine_linked(prev, root))
        chain.append(header)
        prev = header.hash()
    return chain


def _mine_linked(prev: bytes, merkle_root: bytes) -> bytes:
    for nonce in range(1 << 16):
        raw = (
            (2).to_bytes(4, "little") + prev + merkle_root + TIME_358391.to_bytes(4, "little")
            + (0x207FFFFF).to_bytes(4, "little") + nonce.to_bytes(4, "little")
        )  # fmt: skip
        if BlockHeader.unmarshal(raw).meets_target():
            return raw
    raise AssertionError("no nonce found")


def test_headers_linked_to_the_next_checkpoint_place_it_exactly() -> None:
    """A test double of a checkpoint set (one checkpoint at 2016, mined here) and of a
    Bitcoin-genesis policy whose least work nothing here meets: only the link places."""
    root = hashlib.sha256(b"linked").digest()
    timestamp = Timestamp(root)
    leaf = timestamp.ops.add(OpSHA256())
    leaf.attestations.add(BitcoinBlockHeaderAttestation(2013))
    attested, *after = _chain_from(leaf.msg, count=4)  # blocks 2013, 2014, 2015, 2016
    checkpoint = Checkpoint(2016, after[-1], after[-1].hash())
    doubles = Checkpoints(name="test-double", source="mined here", entries=(checkpoint,))
    policy = dataclasses.replace(MAINNET, name="test-double", checkpoints=doubles)
    raw = tuple(h.marshal() for h in [attested, *after])
    check = check_ots(OtsStamp(ots_file(timestamp), raw), root, policy=policy)
    assert check.state == "verified", check.reasons
    [att] = check.attestations
    assert att.basis == "chain" and "linked by 3 header(s)" in att.reason
    # a gap in the chain: nothing places it, and the stray headers are no attestation's
    gap = check_ots(OtsStamp(ots_file(timestamp), raw[:2] + raw[3:]), root, policy=policy)
    assert gap.state == "invalid" and "Merkle root mismatch" in gap.reasons[0]
    alone = check_ots(OtsStamp(ots_file(timestamp), raw[:1]), root, policy=policy)
    assert alone.state == "unverifiable"
