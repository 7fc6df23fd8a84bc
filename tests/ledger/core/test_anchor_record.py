"""Anchor payloads, window commitments and signed anchor records (docs/formats.md §7.2-7.4)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ledger.core.anchor_record import (
    CONTRACT_CHAIN_ID,
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    ContractRef,
    PowRef,
    WindowCommitment,
    anchor_chain_first_entry,
    decode_anchor_payload,
    encode_anchor_payload,
    parse_signed_record,
    window_root,
)
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError, SignatureError
from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey
from ledger.core.merkle import merkle_root

KEY = SigningKey.from_seed(sha256(b"anchor"))
OTHER = SigningKey.from_seed(sha256(b"other"))


def test_anchor_chain_ids_and_first_entry_match_factomd() -> None:
    assert (
        POW_ANCHOR_CHAIN_ID.hex()
        == "df3ade9eec4b08d5379cc64270c30ea7315d8a8a1a69efe2b98a60ecdd69e604"
    )
    assert (
        CONTRACT_CHAIN_ID.hex()
        == "6e4540d08d5ac6a1a394e982fb6a2ab8b516ee751c37420055141b94fe070bfe"
    )
    first = anchor_chain_first_entry()
    assert first.hash().hex() == "24674e6bc3094eb773297de955ee095a05830e431da13a37382dcdc89d73c7d7"


def test_anchor_payload_layout() -> None:
    keymr = sha256(b"k")
    payload = encode_anchor_payload(66332, keymr)
    assert payload[:8].hex() == "466100000001031c"  # "Fa" + height 66332 (docs/formats.md §7.2)
    assert decode_anchor_payload(payload) == (66332, keymr)
    for bad in (payload[:-1], b"Fb" + payload[2:], payload + b"\x00"):
        with pytest.raises(DecodeError):
            decode_anchor_payload(bad)
    with pytest.raises(DecodeError):
        encode_anchor_payload(2**48, keymr)


def test_window_commitment_round_trip() -> None:
    keymrs = [sha256(b"%d" % i) for i in range(5)]
    w = WindowCommitment(bytes(range(20)), 3, 7, window_root(keymrs))
    assert window_root(keymrs) == merkle_root(keymrs)
    assert len(w.payload()) == 66 and w.payload()[:2] == b"Fc"
    assert WindowCommitment.from_payload(w.payload()) == w
    with pytest.raises(DecodeError):
        WindowCommitment(bytes(20), 5, 4, sha256(b""))


def pow_record() -> AnchorRecord:
    ref = PowRef("ab" * 32, "cd" * 32, 12, 1)
    return AnchorRecord(db_height=5, keymr=sha256(b"k"), record_height=6, pow=ref)


def window_record() -> AnchorRecord:
    window = WindowCommitment(bytes(20), 0, 5, sha256(b"w"))
    ref = ContractRef("0x" + "00" * 20, "0x" + "ab" * 32, "0x" + "cd" * 32, 12, 2)
    return AnchorRecord(5, sha256(b"k"), 6, contract=ref, window=window)


@pytest.mark.parametrize("make", [pow_record, window_record])
def test_signed_record_round_trip(make: object) -> None:
    record = make()  # type: ignore[operator]
    entry = record.to_entry(KEY)
    assert parse_signed_record(entry, [OTHER.public_key, KEY.public_key]) == record
    assert AnchorRecord.from_content(record.to_content()) == record


def test_record_json_uses_factomd_field_names_and_order() -> None:
    content = json.loads(pow_record().to_content())
    assert list(content) == ["AnchorRecordVer", "DBHeight", "KeyMR", "RecordHeight", "Bitcoin"]
    assert list(content["Bitcoin"]) == ["Address", "TXID", "BlockHeight", "BlockHash", "Offset"]
    window = json.loads(window_record().to_content())
    assert list(window)[3:6] == ["DBHeightMax", "DBHeightMin", "WindowMR"]
    assert b" " not in pow_record().to_content()


def test_untrusted_tampered_or_misplaced_records_are_refused() -> None:
    entry = pow_record().to_entry(KEY)
    with pytest.raises(SignatureError):
        parse_signed_record(entry, [OTHER.public_key])
    tampered = Entry(
        entry.chain_id, entry.external_ids, entry.content.replace(b'"DBHeight":5', b'"DBHeight":4')
    )
    with pytest.raises(SignatureError):
        parse_signed_record(tampered, [KEY.public_key])
    moved = dataclasses.replace(entry, chain_id=CONTRACT_CHAIN_ID)
    with pytest.raises(DecodeError):
        parse_signed_record(moved, [KEY.public_key])
    with pytest.raises(SignatureError):
        parse_signed_record(anchor_chain_first_entry(), [KEY.public_key])
