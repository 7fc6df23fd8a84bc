"""Bundle version 3: the ``timestamps`` section read and written, its tokens checked
against a named trust store (or listed as not checked), versions 1 and 2 unchanged."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import (
    Rfc3161Token,
    TimestampsPart,
    check_timestamps,
    token_certificates,
)
from ledger.core.timestamps.rfc3161 import response_from_token, token_from_response
from ledger.core.timestamps.tsa_chain import TsaTrust
from tests.ledger.anchor.bundles import DOCUMENT, forge_bundle

VECTORS = Path(__file__).parents[2] / "vectors" / "rfc3161"
TOKEN = (VECTORS / "globalsign-token.p7s").read_bytes()
TOKEN_ROOT = hashlib.sha256(b"notation").digest()  # what the GlobalSign token stamps
TRUST = TsaTrust.from_pem((VECTORS / "globalsign-root.pem").read_bytes(), name="gs.pem")


def test_version_3_round_trips_and_still_verifies() -> None:
    forged = forge_bundle()
    part = TimestampsPart(forged.bundle.receipt.directory_block_keymr, (Rfc3161Token.of(TOKEN),))
    stamped = dataclasses.replace(forged.bundle, timestamps=part)
    obj = stamped.to_json()
    assert obj["version"] == 3 and obj["commitment"] is None and obj["aggregation"] is None
    assert len(obj["timestamps"]["rfc3161"][0]["certificates"]) == 4
    again = ProofBundle.loads(stamped.dumps())
    assert again == stamped
    verify_bundle(again, document_bytes=DOCUMENT, policy=forged.policy)
    assert forge_bundle().bundle.version == 1  # no timestamps: the version it was


@pytest.mark.parametrize(
    "section",
    [None, [], {"root": "00" * 32}, {"root": "zz", "rfc3161": []},
     {"root": "00" * 32, "rfc3161": [{"token": "not base64!", "certificates": []}]}],
)  # fmt: skip
def test_a_malformed_section_fails_at_step_0(section: object) -> None:
    obj = forge_bundle().bundle.to_json()
    obj |= {"version": 3, "commitment": None, "aggregation": None, "timestamps": section}
    with pytest.raises(ProofError) as caught:
        ProofBundle.loads(json.dumps(obj))
    assert caught.value.step is Step.FORMAT


def test_tokens_are_verified_failed_or_not_checked_by_the_trust_given() -> None:
    part = TimestampsPart(TOKEN_ROOT, (Rfc3161Token.of(TOKEN),))
    (ok,) = check_timestamps(part, root=TOKEN_ROOT, trust=TRUST)
    assert ok.status == "verified" and ok.verdict is not None and ok.verdict.trust == "gs.pem"
    (unchecked,) = check_timestamps(part, root=TOKEN_ROOT, trust=None)
    assert unchecked.status == "not checked" and unchecked.verdict is None
    other = TsaTrust.from_pem((VECTORS / "identrust-root.pem").read_bytes(), name="idt.pem")
    (refused,) = check_timestamps(part, root=TOKEN_ROOT, trust=other)
    assert refused.status == "failed" and "idt.pem" in (refused.reason or "")
    (elsewhere,) = check_timestamps(part, root=bytes(32), trust=TRUST)
    assert elsewhere.status == "failed" and elsewhere.reason == "stamps another root"


def test_response_from_token_wraps_the_token_unchanged() -> None:
    assert token_from_response(response_from_token(TOKEN)) == TOKEN
    assert token_certificates(b"not a token") == ()
