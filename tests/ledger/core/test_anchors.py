"""Version 3 with OpenTimestamps: ``timestamps.opentimestamps`` read and written (a v3
bundle without the key still verifies), and every anchor listed in one place with the
overall date (ledger/core/proof/anchors.py). ``notary verify``'s printing of them is in
tests/flows/test_verify_anchors.py."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ledger.core.proof.anchors import list_anchors, ots_policy_for
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import DEVNET
from ledger.core.proof.steps import ProofError, Step
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import OtsStamp, TimestampsPart
from ledger.core.timestamps.ots import ots_file
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle
from tests.ledger.core.ots_stamps import (
    HEADER_TIME,
    LAX_MAINNET_DOUBLE,
    MAINNET,
    attested_over,
    pending_over,
    with_stamps,
)


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


def test_opentimestamps_round_trip_and_the_bundle_still_verifies(forged: Forged) -> None:
    root = forged.bundle.receipt.directory_block_keymr
    bundle = with_stamps(forged, OtsStamp(ots_file(pending_over(root)), ()))
    obj = bundle.to_json()
    assert obj["version"] == 3 and len(obj["timestamps"]["opentimestamps"]) == 1
    again = ProofBundle.loads(bundle.dumps())
    assert again == bundle
    verify_bundle(again, document_bytes=DOCUMENT, policy=forged.policy)


def test_a_v3_bundle_written_before_opentimestamps_still_verifies(forged: Forged) -> None:
    obj = with_stamps(forged).to_json()
    assert obj["timestamps"]["opentimestamps"] == []  # writers always write the key
    del obj["timestamps"]["opentimestamps"]
    old = ProofBundle.loads(json.dumps(obj))
    assert old.timestamps is not None and old.timestamps.opentimestamps == ()
    verify_bundle(old, document_bytes=DOCUMENT, policy=forged.policy)


@pytest.mark.parametrize(
    "stamps",
    [{}, [{"ots": ""}], [{"ots": "", "headers": [], "x": 1}], [{"ots": "!", "headers": []}],
     [{"ots": "", "headers": ["00"]}]],
)  # fmt: skip
def test_a_malformed_opentimestamps_list_fails_at_step_0(forged: Forged, stamps: object) -> None:
    obj = with_stamps(forged).to_json()
    obj["timestamps"]["opentimestamps"] = stamps
    with pytest.raises(ProofError) as caught:
        ProofBundle.loads(json.dumps(obj))
    assert caught.value.step is Step.FORMAT


def test_every_anchor_is_listed_and_the_earliest_independent_one_dates_it(
    forged: Forged,
) -> None:
    root = forged.bundle.receipt.directory_block_keymr
    ots, header = attested_over(root, 500_000)
    bundle = with_stamps(
        forged, OtsStamp(ots, (header,)), OtsStamp(ots_file(pending_over(root)), ())
    )
    verdict = verify_bundle(bundle, document_bytes=DOCUMENT, policy=forged.policy)
    listed = list_anchors(bundle, verdict, tsa_trust=None, ots_policy=LAX_MAINNET_DOUBLE)
    kinds = [(a.kind, a.state, a.independent) for a in listed.anchors]
    assert kinds == [
        ("chain", "verified", False),  # the bundled chain: not independent
        ("opentimestamps", "verified", True),
        ("opentimestamps", "pending", True),
    ]
    first = listed.earliest
    assert first is not None and first.label == "OpenTimestamps stamp 1"
    assert first.time_s == HEADER_TIME
    assert "2017-07-14 02:40:00 UTC" in listed.lines()[-1]
    # under the shipped bitcoin-mainnet the made-up header is not placed: no date at all
    strict = list_anchors(bundle, verdict, tsa_trust=None, ots_policy=MAINNET)
    assert strict.anchors[1].state == "unverifiable" and strict.earliest is None
    assert strict.lines()[-1].startswith("No independent anchor verifies")


def test_ots_is_checked_under_bitcoin_mainnet_unless_the_policy_is_mainnets() -> None:
    assert ots_policy_for(DEVNET) is MAINNET
    assert ots_policy_for(LAX_MAINNET_DOUBLE) is LAX_MAINNET_DOUBLE


def test_a_section_over_another_root_makes_its_stamps_invalid(forged: Forged) -> None:
    other = bytes(32)
    part = TimestampsPart(other, (), (OtsStamp(ots_file(pending_over(other)), ()),))
    bundle = dataclasses.replace(forged.bundle, timestamps=part)
    verdict = verify_bundle(bundle, document_bytes=DOCUMENT, policy=forged.policy)
    listed = list_anchors(bundle, verdict, tsa_trust=None, ots_policy=MAINNET)
    assert listed.anchors[1].state == "invalid" and "another root" in listed.anchors[1].proves
