"""Placing historic Bitcoin headers: bitcoinj's mainnet checkpoints, shipped as data
(ledger/core/proof/checkpoints.py), and ``TrustPolicy.place``."""

from __future__ import annotations

import base64
import dataclasses
from importlib import resources

import pytest

from ledger.core.errors import DecodeError
from ledger.core.pow.header import BlockHeader
from ledger.core.proof.checkpoints import (
    BITCOIN_MAINNET_CHECKPOINTS,
    MIN_PERIOD_WORK,
    RETARGET_INTERVAL,
    TIME_SLACK_S,
    Checkpoints,
    Placement,
    bitcoin_mainnet_checkpoints,
    block_work,
)
from ledger.core.proof.policy import PolicyError, TrustPolicy, policy_named

MAINNET = policy_named("bitcoin-mainnet")
CHECKPOINTS = bitcoin_mainnet_checkpoints()
HEADER_358391 = BlockHeader.unmarshal(
    bytes.fromhex(
        "02000000b96394585a281b7e5f438fd1c9ed492645a1fd61cb3802040000000000000000007ee445d2"
        "3ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a1e376755f58616186272def6"
    )
)
TEXT = (
    resources.files("ledger.core.proof")
    .joinpath("data", "bitcoin-mainnet.checkpoints.txt")
    .read_text("ascii")
)


def test_the_shipped_data_is_every_period_to_878976() -> None:
    heights = [c.height for c in CHECKPOINTS.entries]
    assert heights == list(range(2016, 878_977, RETARGET_INTERVAL))
    assert CHECKPOINTS.entries[0].header.bits == 0x1D00FFFF
    assert CHECKPOINTS.last_height == 878_976 + 2015
    # block 356832 starts the period of the OpenTimestamps example's block 358391
    start = CHECKPOINTS.period_start(358_391)
    assert start is not None and start.height == 356_832
    assert start.header.bits == HEADER_358391.bits


def test_a_real_2015_header_is_placed_by_its_period_not_by_the_work_floor() -> None:
    assert HEADER_358391.target() > MAINNET.max_target  # far below the floor
    placed = MAINNET.place(HEADER_358391, 358_391)
    assert isinstance(placed, Placement) and placed.basis == "era"
    assert "2**67.5 hashes" in placed.detail


def test_a_checkpoint_header_is_placed_exactly_at_its_height_only() -> None:
    cp = CHECKPOINTS.entries[100]
    placed = MAINNET.place(cp.header, cp.height)
    assert isinstance(placed, Placement) and placed.basis == "checkpoint"
    assert "not block" in str(MAINNET.place(cp.header, cp.height + 1))


def test_a_header_with_the_wrong_bits_or_time_is_not_placed() -> None:
    assert "bits" in str(MAINNET.place(HEADER_358391, 358_391 + RETARGET_INTERVAL))
    early = dataclasses.replace(HEADER_358391, timestamp=HEADER_358391.timestamp - 40 * 86_400)
    assert "outside" in str(CHECKPOINTS.place(early, 358_391))
    late_ok = dataclasses.replace(HEADER_358391, timestamp=HEADER_358391.timestamp + 3600)
    assert isinstance(CHECKPOINTS.place(late_ok, 358_391), Placement)
    assert TIME_SLACK_S == 2 * 86_400


def test_a_period_whose_block_is_cheap_places_nothing_but_its_checkpoint() -> None:
    """2011: a block of 2**51 hashes is minutes of one mining machine; only the shipped
    checkpoint itself is placed there."""
    start = CHECKPOINTS.period_start(129_405)
    assert start is not None and block_work(start.header.target()) < MIN_PERIOD_WORK
    cheap = dataclasses.replace(
        HEADER_358391, bits=start.header.bits, timestamp=start.header.timestamp + 600
    )
    refused = MAINNET.place(cheap, 129_405)
    assert isinstance(refused, str) and "2**51.1" in refused
    exact = MAINNET.place(start.header, start.height)
    assert isinstance(exact, Placement) and exact.basis == "checkpoint"
    first = next(c for c in CHECKPOINTS.entries if block_work(c.header.target()) >= MIN_PERIOD_WORK)
    assert first.height == 292_320


def test_beyond_the_checkpoints_the_work_floor_decides() -> None:
    recent = dataclasses.replace(HEADER_358391, bits=0x17034219)
    assert CHECKPOINTS.period_start(900_000) is None
    placed = MAINNET.place(recent, 900_000)
    assert isinstance(placed, Placement) and placed.basis == "work"
    refused = MAINNET.place(HEADER_358391, 900_000)
    assert isinstance(refused, str) and "least work" in refused


def test_a_policy_without_checkpoints_uses_the_work_floor_alone() -> None:
    bare = dataclasses.replace(MAINNET, checkpoints=None)
    assert isinstance(bare.place(HEADER_358391, 358_391), str)


def test_policy_files_name_the_shipped_checkpoints() -> None:
    obj = MAINNET.to_json()
    assert obj["checkpoints"] == BITCOIN_MAINNET_CHECKPOINTS
    assert TrustPolicy.from_json(obj) == MAINNET
    assert TrustPolicy.from_json({k: v for k, v in obj.items() if k != "checkpoints"}) == (
        dataclasses.replace(MAINNET, checkpoints=None)
    )
    with pytest.raises(PolicyError):
        TrustPolicy.from_json(obj | {"checkpoints": "my-own"})


def _with_line(index: int, record: bytes) -> str:
    lines = TEXT.splitlines()
    lines[3 + index] = base64.b64encode(record).decode()
    return "\n".join(lines) + "\n"


def test_tampered_data_is_refused_on_loading() -> None:
    first = bytearray(base64.b64decode(TEXT.splitlines()[3]))
    first[-1] ^= 1  # the nonce: the header misses its target
    with pytest.raises(DecodeError, match="target"):
        Checkpoints.from_bitcoinj_text(_with_line(0, bytes(first)), name="x", source="x")
    skipped = TEXT.splitlines()
    del skipped[4]
    skipped[2] = str(int(skipped[2]) - 1)
    with pytest.raises(DecodeError, match="follow"):
        Checkpoints.from_bitcoinj_text("\n".join(skipped), name="x", source="x")
    with pytest.raises(DecodeError):
        Checkpoints.from_bitcoinj_text("TXT CHECKPOINTS 1\n1\n0\n", name="x", source="x")
