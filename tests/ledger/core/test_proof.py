"""Proof bundles: format round trip, the numbered verification steps, and the tamper suite.

Every mutation below leaves the JSON well-formed unless it targets the format itself; each
must fail at the step that checks the mutated field (docs/proof-bundle.md).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from ledger.core.anchor_record import encode_anchor_payload
from ledger.core.pow.header import BlockHeader
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import TrustPolicy
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle

Path = tuple[str | int, ...]


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


def failure(
    obj: Any,
    forged: Forged,
    *,
    document: bytes | None = DOCUMENT,
    policy: TrustPolicy | None = None,
) -> ProofError:
    with pytest.raises(ProofError) as caught:
        verify_bundle(obj, document_bytes=document, policy=policy or forged.policy)
    return caught.value


def get(obj: Any, path: Path) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def put(obj: Any, path: Path, value: Any) -> Any:
    target = copy.deepcopy(obj)
    get(target, path[:-1])[path[-1]] = value
    return target


def flipped(text: str, byte: int) -> str:
    """``text`` (hex, maybe ``0x``) with one bit of byte ``byte`` flipped (bit ``byte % 8``)."""
    prefix = "0x" if text.startswith("0x") else ""
    raw = bytearray.fromhex(text.removeprefix("0x"))
    raw[byte] ^= 1 << (byte % 8)
    return prefix + raw.hex()


def hex_fields(obj: Any, path: Path = ()) -> Iterator[Path]:
    """Paths of every hex string leaf of the bundle JSON."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from hex_fields(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from hex_fields(value, (*path, i))
    elif isinstance(obj, str) and path[-1] not in ("format", "chain"):
        yield path


def expected_step(path: Path, byte: int, obj: Any) -> Step | None:
    """The step that must catch a flip of ``byte`` in ``path``; None: decided by the caller."""
    section = path[0]
    if section == "anchor" and path[1] == "transaction":
        return None
    if section == "anchor" and path[1] == "headers":
        return Step.ANCHOR_INCLUSION if path[2] == 0 and 36 <= byte < 68 else Step.PROOF_OF_WORK
    return {
        ("document", "sha256"): Step.FILE_HASH,
        ("entry", "raw"): Step.ENTRY,
        ("receipt", "entryhash"): Step.ENTRY,
        ("receipt", "merklebranch"): Step.RECEIPT,
        ("receipt", "entryblockkeymr"): Step.RECEIPT,
        ("receipt", "directoryblockkeymr"): Step.RECEIPT,
        ("directory_block", "raw"): Step.DIRECTORY_BLOCK,
        ("anchor", "txid"): Step.ANCHOR_INCLUSION,
        ("anchor", "merkle_path"): Step.ANCHOR_INCLUSION,
    }.get((section, path[1]), Step.CONTRACT if section == "contract" else None)


# -- the happy path ---------------------------------------------------------------------


def test_bundle_verifies_and_reports_every_step_in_order(forged: Forged) -> None:
    reports: list[StepReport] = []
    verify_bundle(
        forged.bundle, document_bytes=DOCUMENT, policy=forged.policy, on_step=reports.append
    )
    assert [r.step for r in reports] == list(Step)
    skipped = [r.step for r in reports if r.skipped]
    assert skipped == [Step.COMMITMENT, Step.AGGREGATION]
    assert (
        reports[Step.COMMITMENT].detail == "version 1: the entry carries the document hash itself"
    )
    assert reports[Step.AGGREGATION].detail == reports[Step.COMMITMENT].detail


def test_without_the_file_step_one_is_skipped(forged: Forged) -> None:
    reports: list[StepReport] = []
    verify_bundle(forged.bundle, policy=forged.policy, on_step=reports.append)
    assert reports[Step.FILE_HASH].skipped


def test_json_round_trip_is_exact(forged: Forged) -> None:
    text = forged.bundle.dumps()
    again = ProofBundle.loads(text)
    assert again == forged.bundle
    assert again.dumps() == text
    assert json.loads(text)["version"] == forged.bundle.version == 1
    assert "commitment" not in json.loads(text) and "aggregation" not in json.loads(text)
    verify_bundle(json.loads(text), document_bytes=DOCUMENT, policy=forged.policy)


def test_bundle_without_window_section_verifies_and_skips_the_window_step() -> None:
    plain = forge_bundle(with_contract=False)
    reports: list[StepReport] = []
    verify_bundle(
        plain.bundle, document_bytes=DOCUMENT, policy=plain.policy, on_step=reports.append
    )
    assert reports[-1].step == Step.CONTRACT and reports[-1].skipped


# -- a flipped bit in every field -------------------------------------------------------


def test_a_flipped_bit_in_every_byte_of_every_hex_field_fails_at_its_step(forged: Forged) -> None:
    good = forged.bundle.to_json()
    checked = 0
    for path in hex_fields(good):
        value = get(good, path)
        for byte in range(len(value.removeprefix("0x")) // 2):
            error = failure(put(good, path, flipped(value, byte)), forged)
            want = expected_step(path, byte, good)
            if want is None:  # anchor tx: script bytes -> payload, others -> payload or inclusion
                payload = encode_anchor_payload(1, forged.bundle.receipt.directory_block_keymr)
                script = bytes.fromhex(value).find(b"\x6a\x28" + payload)
                if script <= byte < script + 42:
                    assert error.step == Step.ANCHOR_PAYLOAD, (path, byte, error)
                else:
                    assert error.step in (Step.ANCHOR_PAYLOAD, Step.ANCHOR_INCLUSION), (
                        path,
                        byte,
                        error,
                    )
                    if error.step == Step.ANCHOR_PAYLOAD:
                        assert "does not parse" in error.reason
            else:
                assert error.step == want, (path, byte, error)
            checked += 1
    assert checked > 1500


def test_flipped_document_hash_without_the_file_fails_at_the_entry(forged: Forged) -> None:
    good = forged.bundle.to_json()
    bad = put(good, ("document", "sha256"), flipped(good["document"]["sha256"], 5))
    error = failure(bad, forged, document=None)
    assert error.step == Step.ENTRY and "does not carry" in error.reason


@pytest.mark.parametrize(
    ("path", "step"),
    [
        (("version",), Step.FORMAT),
        (("receipt", "directoryblockheight"), Step.DIRECTORY_BLOCK),
        (("anchor", "tx_index"), Step.ANCHOR_INCLUSION),
        (("contract", "dbheightmin"), Step.CONTRACT),
        (("contract", "dbheightmax"), Step.CONTRACT),
        (("contract", "tx_index"), Step.CONTRACT),
        (("contract", "header_index"), Step.CONTRACT),
    ],
)
def test_a_flipped_bit_in_every_integer_field_fails_at_its_step(
    forged: Forged, path: Path, step: Step
) -> None:
    good = forged.bundle.to_json()
    for bit in range(3):
        error = failure(put(good, path, get(good, path) ^ (1 << bit)), forged)
        assert error.step == step, (path, bit, error)


@pytest.mark.parametrize(
    ("path", "step"), [(("format",), Step.FORMAT), (("anchor", "chain"), Step.PROOF_OF_WORK)]
)
def test_a_flipped_bit_in_a_text_field_fails_at_its_step(
    forged: Forged, path: Path, step: Step
) -> None:
    good = forged.bundle.to_json()
    text = get(good, path)
    bad = chr(ord(text[0]) ^ 1) + text[1:]
    assert failure(put(good, path, bad), forged).step == step


# -- named forgeries --------------------------------------------------------------------


def test_swapped_receipt_branch_side_fails_at_the_merkle_steps(forged: Forged) -> None:
    good = forged.bundle.to_json()
    for i, node in enumerate(good["receipt"]["merklebranch"]):
        swapped = {"left": node["right"], "right": node["left"], "top": node["top"]}
        if swapped == node:
            continue
        error = failure(put(good, ("receipt", "merklebranch", i), swapped), forged)
        assert error.step == Step.RECEIPT, (i, error)


def test_swapped_transaction_path_side_fails_at_inclusion(forged: Forged) -> None:
    good = forged.bundle.to_json()
    bad = put(good, ("anchor", "tx_index"), good["anchor"]["tx_index"] ^ 1)
    assert failure(bad, forged).step == Step.ANCHOR_INCLUSION
    beyond = put(good, ("anchor", "tx_index"), good["anchor"]["tx_index"] + 4)
    error = failure(beyond, forged)
    assert error.step == Step.ANCHOR_INCLUSION and "does not fit" in error.reason


def test_swapped_window_branch_side_fails_at_the_window_step(forged: Forged) -> None:
    good = forged.bundle.to_json()
    node = good["contract"]["merklebranch"][0]
    swapped = {"left": node["right"], "right": node["left"], "top": node["top"]}
    assert (
        failure(put(good, ("contract", "merklebranch", 0), swapped), forged).step == Step.CONTRACT
    )


def test_header_whose_work_is_short_fails_at_proof_of_work() -> None:
    weak = forge_bundle(short_work_header=1)
    error = failure(weak.bundle, weak)
    assert error.step == Step.PROOF_OF_WORK and error.index == 1 and "work is short" in error.reason


def test_header_whose_hash_misses_its_target_fails_at_proof_of_work(forged: Forged) -> None:
    good = forged.bundle.to_json()
    last = BlockHeader.unmarshal(bytes.fromhex(good["anchor"]["headers"][-1]))
    nonce = last.nonce + 1
    while BlockHeader(
        last.version, last.prev_hash, last.merkle_root, last.timestamp, last.bits, nonce
    ).meets_target():
        nonce += 1
    missed = BlockHeader(
        last.version, last.prev_hash, last.merkle_root, last.timestamp, last.bits, nonce
    )
    error = failure(put(good, ("anchor", "headers", 2), missed.marshal().hex()), forged)
    assert error.step == Step.PROOF_OF_WORK and "does not meet" in error.reason


def test_policy_asking_more_work_or_confirmations_or_another_chain(forged: Forged) -> None:
    p = forged.policy
    harder = replace(p, max_target=p.max_target >> 4)
    assert failure(forged.bundle, forged, policy=harder).step == Step.PROOF_OF_WORK
    deeper = replace(p, confirmations=p.confirmations + 1)
    assert failure(forged.bundle, forged, policy=deeper).step == Step.HEADER_LINKS
    other = replace(p, chain="bitcoin-mainnet")
    assert failure(forged.bundle, forged, policy=other).step == Step.PROOF_OF_WORK


def test_wrong_height_in_the_anchor_fails_at_the_payload() -> None:
    wrong = forge_bundle(anchored_height=2)
    error = failure(wrong.bundle, wrong)
    assert error.step == Step.ANCHOR_PAYLOAD and "height 2" in error.reason


def test_wrong_height_in_the_receipt_fails_at_the_directory_block(forged: Forged) -> None:
    good = forged.bundle.to_json()
    error = failure(put(good, ("receipt", "directoryblockheight"), 2), forged)
    assert error.step == Step.DIRECTORY_BLOCK


def test_removed_or_reordered_headers_fail_at_the_links(forged: Forged) -> None:
    good = forged.bundle.to_json()
    headers = good["anchor"]["headers"]
    loose = replace(forged.policy, confirmations=1)
    gap = put(good, ("anchor", "headers"), [headers[0], headers[2]])
    assert failure(gap, forged, policy=loose).step == Step.HEADER_LINKS
    swapped = put(good, ("anchor", "headers"), [headers[0], headers[2], headers[1]])
    error = failure(swapped, forged, policy=loose)
    assert error.step == Step.HEADER_LINKS and error.index == 1
    short = put(good, ("anchor", "headers"), headers[:2])
    assert failure(short, forged).step == Step.HEADER_LINKS


def test_another_file_fails_at_the_file_hash(forged: Forged) -> None:
    assert failure(forged.bundle, forged, document=DOCUMENT + b" ").step == Step.FILE_HASH


def test_bundle_of_another_document_fails_at_the_entry(forged: Forged) -> None:
    other = forge_bundle(document=b"something else", with_contract=False)
    mixed = put(other.bundle.to_json(), ("document",), forged.bundle.to_json()["document"])
    error = failure(mixed, forged, document=DOCUMENT)
    assert error.step == Step.ENTRY and "does not carry" in error.reason


@pytest.mark.parametrize(
    ("path", "step"),
    [
        (("entry", "raw"), Step.ENTRY),
        (("directory_block", "raw"), Step.DIRECTORY_BLOCK),
        (("anchor", "transaction"), Step.ANCHOR_PAYLOAD),
        (("anchor", "headers", 0), Step.ANCHOR_INCLUSION),
        (("anchor", "headers", 2), Step.PROOF_OF_WORK),
        (("anchor", "merkle_path", 0), Step.ANCHOR_INCLUSION),
        (("receipt", "merklebranch", 0, "left"), Step.RECEIPT),
        (("receipt", "entryhash"), Step.ENTRY),
        (("contract", "transaction"), Step.CONTRACT),
        (("contract", "merklebranch", 0, "top"), Step.CONTRACT),
    ],
)
def test_trailing_bytes_fail_at_the_step_reading_the_field(
    forged: Forged, path: Path, step: Step
) -> None:
    good = forged.bundle.to_json()
    error = failure(put(good, path, get(good, path) + "00"), forged)
    assert error.step == step, error


def test_trailing_bytes_after_the_json_fail_at_the_format(forged: Forged) -> None:
    with pytest.raises(ProofError) as caught:
        ProofBundle.loads(forged.bundle.dumps() + "{}")
    assert caught.value.step == Step.FORMAT


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("receipt"),
        lambda b: b.update(version=2),
        lambda b: b["entry"].update(raw="zz"),
        lambda b: b["entry"].update(raw="abc"),
        lambda b: b["entry"].update(raw="ab cd"),
        lambda b: b["anchor"].update(headers="00"),
        lambda b: b["anchor"].update(tx_index=-1),
        lambda b: b["anchor"].update(tx_index=True),
        lambda b: b["receipt"]["merklebranch"][0].pop("top"),
    ],
)
def test_malformed_bundles_fail_at_the_format(forged: Forged, mutate: Any) -> None:
    bad = forged.bundle.to_json()
    mutate(bad)
    assert failure(bad, forged).step == Step.FORMAT


def test_error_carries_expected_and_computed(forged: Forged) -> None:
    good = forged.bundle.to_json()
    error = failure(put(good, ("anchor", "txid"), flipped(good["anchor"]["txid"], 0)), forged)
    assert error.expected is not None and error.computed is not None
    assert error.expected != error.computed
    assert str(error).startswith("step 8 (anchor transaction)")
