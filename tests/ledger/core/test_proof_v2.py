"""Proof bundles version 2: commitments and aggregation trees, and their tamper suite.

Bundles are forged in memory (``tests/ledger/anchor/bundles.py``) with every hash and
every proof of work recomputed, so each forgery can only be caught by the step that checks
what it changed (docs/proof-bundle.md): the nonce at step 2 (or 3 when it is a leaf), the
leaf index, tree size and audit path at step 3, the kind of entry at step 4.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ledger.core.aggregation import AggregationTree, leaf_hash
from ledger.core.entry import Entry
from ledger.core.hashing import sha256
from ledger.core.notary_entry import batch_entry, commitment_entry
from ledger.core.proof.bundle import Aggregation, ProofBundle, build_bundle
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle
from tests.ledger.anchor.bundles import (
    COLLECTION_KEY,
    DOCUMENT,
    PRIVATE_CHAIN_ID,
    Forged,
    batch_leaves,
    commitment_of,
    forge_bundle,
)
from tests.ledger.core.test_proof import Path, expected_step, flipped, get, hex_fields, put

HEX_DIGITS = b"0123456789abcdef"


@pytest.fixture(scope="module")
def aggregated() -> Forged:
    return forge_bundle(private="aggregated", batch_size=5, leaf_index=3)


@pytest.fixture(scope="module")
def per_document() -> Forged:
    return forge_bundle(private="document")


def failure(obj: Any, forged: Forged, *, document: bytes | None = DOCUMENT) -> ProofError:
    with pytest.raises(ProofError) as caught:
        verify_bundle(obj, document_bytes=document, policy=forged.policy)
    return caught.value


def reports_of(forged: Forged, **kw: Any) -> list[StepReport]:
    reports: list[StepReport] = []
    verify_bundle(
        forged.bundle,
        document_bytes=kw.get("document", DOCUMENT),
        policy=forged.policy,
        on_step=reports.append,
    )
    return reports


# -- the happy paths and the JSON form --------------------------------------------------


def test_an_aggregated_bundle_verifies_every_step(aggregated: Forged) -> None:
    reports = reports_of(aggregated)
    assert [r.step for r in reports] == list(Step) and not any(r.skipped for r in reports)
    nonce, commitment = commitment_of(DOCUMENT)
    tree = AggregationTree(list(aggregated.leaves))
    assert commitment.hex() in reports[Step.COMMITMENT].detail
    assert reports[Step.AGGREGATION].detail == (
        f"leaf 3 of 5, audit path length 3: root {tree.root.hex()}"
    )
    assert reports[Step.ENTRY].detail.endswith("publishes the batch root")
    assert reports[Step.FORMAT].detail == "notary-proof-bundle version 2"


def test_a_per_document_bundle_skips_only_the_aggregation(per_document: Forged) -> None:
    reports = reports_of(per_document)
    assert [r.step for r in reports if r.skipped] == [Step.AGGREGATION]
    assert reports[Step.AGGREGATION].detail == "per-document entry: no aggregation tree"
    assert reports[Step.ENTRY].detail.endswith("publishes the commitment")


@pytest.mark.parametrize("kind", ["aggregated", "document"])
def test_json_round_trip_is_exact_and_has_the_version_2_layout(kind: str) -> None:
    forged = forge_bundle(private=kind)  # type: ignore[arg-type]
    text = forged.bundle.dumps()
    obj = json.loads(text)
    assert list(obj)[:5] == ["format", "version", "document", "commitment", "aggregation"]
    assert obj["version"] == forged.bundle.version == 2
    assert obj["commitment"] == {"nonce": commitment_of(DOCUMENT)[0].hex()}
    if kind == "document":
        assert obj["aggregation"] is None
    else:
        assert set(obj["aggregation"]) == {"leaf_index", "tree_size", "audit_path"}
    again = ProofBundle.loads(text)
    assert again == forged.bundle and again.dumps() == text


def test_build_bundle_takes_the_nonce_and_the_aggregation(aggregated: Forged) -> None:
    b = aggregated.bundle
    obj = b.to_json()
    receipt = {k: v for k, v in obj["receipt"].items() if k != "entryhash"}
    rebuilt = build_bundle(
        document_sha256=b.document_sha256,
        entry=b.entry,
        receipt={**receipt, "entry": {"entryhash": obj["receipt"]["entryhash"]}},
        directory_block=b.directory_block,
        anchor_proof={"anchor": obj["anchor"], "contract": obj["contract"]},
        commitment_nonce=commitment_of(DOCUMENT)[0],
        aggregation=Aggregation(3, 5, AggregationTree(list(aggregated.leaves)).audit_path(3)),
    )
    assert rebuilt == b and rebuilt.version == 2


def test_an_aggregation_without_a_nonce_is_refused_at_the_format(aggregated: Forged) -> None:
    b = aggregated.bundle
    assert b.aggregation is not None
    with pytest.raises(ProofError) as caught:
        ProofBundle(
            b.document_sha256,
            b.entry,
            b.receipt,
            b.directory_block,
            b.anchor,
            aggregation=b.aggregation,
        )
    assert caught.value.step == Step.FORMAT
    with pytest.raises(ProofError) as caught:
        build_bundle(
            document_sha256=b.document_sha256,
            entry=b.entry,
            receipt={"entry": {"entryhash": b.receipt.entry_hash.hex()}},
            directory_block=b.directory_block,
            anchor_proof={},
            aggregation=b.aggregation,
        )
    assert caught.value.step == Step.FORMAT and "needs a commitment nonce" in caught.value.reason


# -- a flipped bit in every byte --------------------------------------------------------


def ext_id_spans(raw_entry: bytes) -> list[range]:
    """Where each external ID's bytes sit in the marshalled entry (docs/formats.md §1.1)."""
    spans, at = [], 35
    for ext_id in Entry.unmarshal(raw_entry).external_ids:
        spans.append(range(at + 2, at + 2 + len(ext_id)))
        at += 2 + len(ext_id)
    return spans


def v2_expected_step(forged: Forged, path: Path, byte: int, new_byte: int) -> set[Step]:
    """The step(s) that must catch ``new_byte`` at ``byte`` of ``path`` in a v2 bundle.

    The entry states its commitment (or root and size) in its external IDs: a flip there
    that still reads as a value is caught where that value is compared (step 2 or 3), any
    other flip of the entry at step 4.
    """
    aggregated = forged.bundle.aggregation is not None
    value_step = Step.AGGREGATION if aggregated else Step.COMMITMENT
    if path[0] == "commitment":
        return {value_step}
    if path[0] == "aggregation":
        return {Step.AGGREGATION}
    if path != ("entry", "raw"):
        want = expected_step(path, byte, None)
        return {want} if want is not None else {Step.ANCHOR_PAYLOAD, Step.ANCHOR_INCLUSION}
    spans = ext_id_spans(forged.bundle.entry)
    if byte in spans[1]:
        return {value_step if new_byte in HEX_DIGITS else Step.ENTRY}
    if aggregated and byte in spans[2]:  # the size, one decimal digit here
        return {Step.AGGREGATION if new_byte in b"123456789" else Step.ENTRY}
    return {Step.ENTRY}


@pytest.mark.parametrize("kind", ["aggregated", "document"])
def test_a_flipped_bit_in_every_byte_of_every_hex_field_fails_at_its_step(kind: str) -> None:
    forged = forge_bundle(private=kind)  # type: ignore[arg-type]
    good = forged.bundle.to_json()
    checked = 0
    for path in hex_fields(good):
        value = get(good, path)
        for byte in range(len(value.removeprefix("0x")) // 2):
            bad_value = flipped(value, byte)
            new_byte = bytes.fromhex(bad_value.removeprefix("0x"))[byte]
            error = failure(put(good, path, bad_value), forged)
            assert error.step in v2_expected_step(forged, path, byte, new_byte), (path, byte, error)
            checked += 1
    assert checked > 1500


@pytest.mark.parametrize("kind", ["aggregated", "document"])
def test_every_byte_of_the_nonce_flipped_fails_at_the_commitment_or_the_tree(kind: str) -> None:
    forged = forge_bundle(private=kind)  # type: ignore[arg-type]
    good = forged.bundle.to_json()
    want = Step.AGGREGATION if kind == "aggregated" else Step.COMMITMENT
    for byte in range(32):
        for bit in (0, 7):
            nonce = bytearray.fromhex(good["commitment"]["nonce"])
            nonce[byte] ^= 1 << bit
            error = failure(put(good, ("commitment", "nonce"), nonce.hex()), forged)
            assert error.step == want, (byte, bit, error)
            assert error.expected is not None and error.computed is not None


# -- named forgeries of the aggregation -------------------------------------------------


def aggregation_of(good: dict[str, Any], index: int, size: int, path: Any) -> dict[str, Any]:
    audit = [h.hex() if isinstance(h, bytes) else h for h in path]
    return put(
        good, ("aggregation",), {"leaf_index": index, "tree_size": size, "audit_path": audit}
    )


def test_every_wrong_leaf_index_fails_at_the_aggregation(aggregated: Forged) -> None:
    good = aggregated.bundle.to_json()
    path = good["aggregation"]["audit_path"]
    for index in [0, 1, 2, 4, 5, 6, 7, 8, 1 << 40]:
        error = failure(aggregation_of(good, index, 5, path), aggregated)
        assert error.step == Step.AGGREGATION, (index, error)


def test_every_wrong_tree_size_fails_at_the_aggregation(aggregated: Forged) -> None:
    good = aggregated.bundle.to_json()
    path = good["aggregation"]["audit_path"]
    for size in [0, 1, 2, 3, 4, 6, 7, 8, 9, 16, 1 << 40, (1 << 40) + 1]:
        error = failure(aggregation_of(good, 3, size, path), aggregated)
        assert error.step == Step.AGGREGATION, (size, error)


def test_a_path_made_for_another_tree_size_fails_at_the_aggregation() -> None:
    """The document is leaf 3 of trees of 4 to 12 leaves; each tree's path is offered for
    the tree of 5 that the entry names, and for its own size."""
    forged = forge_bundle(private="aggregated", batch_size=5, leaf_index=3)
    good = forged.bundle.to_json()
    for size in range(4, 13):
        if size == 5:
            continue
        other = AggregationTree(batch_leaves(DOCUMENT, size=size, index=3))
        for stated in (5, size):
            bad = aggregation_of(good, 3, stated, other.audit_path(3))
            assert failure(bad, forged).step == Step.AGGREGATION, (size, stated)


def test_an_interior_node_passed_as_a_leaf_fails_at_the_aggregation(aggregated: Forged) -> None:
    """Leaves and nodes are hashed apart (0x00 / 0x01): the document's commitment cannot
    stand for the node above it, whatever index and size the path claims."""
    good = aggregated.bundle.to_json()
    path = good["aggregation"]["audit_path"]
    for index, size, rest in [
        (1, 3, path[1:]),
        (1, 5, path[1:]),
        (0, 2, path[2:]),
        (0, 5, path[2:]),
    ]:
        error = failure(aggregation_of(good, index, size, rest), aggregated)
        assert error.step == Step.AGGREGATION, (index, size, error)


def test_a_commitment_entry_swapped_for_a_batch_entry_and_back_fails_at_the_entry() -> None:
    """Fully consistent forgeries (receipt, blocks, anchors made for the swapped entry)."""
    nonce, commitment = commitment_of(DOCUMENT)
    batch_of_one = batch_entry(PRIVATE_CHAIN_ID, leaf_hash(commitment), 1)
    as_batch = forge_bundle(private="document", entry=batch_of_one)
    error = failure(as_batch.bundle, as_batch)
    assert error.step == Step.ENTRY and "not the commitment entry" in error.reason
    single = commitment_entry(PRIVATE_CHAIN_ID, commitment)
    as_single = forge_bundle(private="aggregated", batch_size=1, leaf_index=0, entry=single)
    error = failure(as_single.bundle, as_single)
    assert error.step == Step.ENTRY and "not the batch entry" in error.reason
    assert as_single.bundle.aggregation == Aggregation(0, 1, ())


def test_an_aggregation_claimed_over_a_commitment_entry_and_the_reverse(
    aggregated: Forged, per_document: Forged
) -> None:
    claims_batch = aggregation_of(per_document.bundle.to_json(), 0, 1, [])
    assert failure(claims_batch, per_document).step == Step.ENTRY
    claims_single = put(aggregated.bundle.to_json(), ("aggregation",), None)
    assert failure(claims_single, aggregated).step == Step.ENTRY


@pytest.mark.parametrize("kind", ["aggregated", "document"])
def test_a_version_2_bundle_relabelled_version_1_fails_at_the_format(kind: str) -> None:
    forged = forge_bundle(private=kind)  # type: ignore[arg-type]
    error = failure(put(forged.bundle.to_json(), ("version",), 1), forged)
    assert error.step == Step.FORMAT and "unknown keys: aggregation, commitment" in error.reason
    bare = put(forged.bundle.to_json(), ("version",), 1)
    del bare["commitment"], bare["aggregation"]
    error = failure(bare, forged)  # without them, its entry does not carry the hash
    assert error.step == Step.ENTRY and "does not carry the document hash" in error.reason


def test_a_version_1_bundle_relabelled_version_2_fails_at_the_format() -> None:
    forged = forge_bundle()
    error = failure(put(forged.bundle.to_json(), ("version",), 2), forged)
    assert error.step == Step.FORMAT
    with_nonce = put(forged.bundle.to_json(), ("version",), 2)
    with_nonce |= {"commitment": {"nonce": commitment_of(DOCUMENT)[0].hex()}, "aggregation": None}
    error = failure(with_nonce, forged)
    assert error.step == Step.ENTRY and "not the commitment entry" in error.reason


def test_the_bundle_of_another_document_of_the_batch_fails_at_the_file_hash(
    aggregated: Forged,
) -> None:
    other = forge_bundle(private="aggregated", document=b"batch document 1", leaf_index=1)
    assert failure(other.bundle, aggregated).step == Step.FILE_HASH
    mixed = put(other.bundle.to_json(), ("document",), aggregated.bundle.to_json()["document"])
    assert failure(mixed, aggregated, document=None).step == Step.AGGREGATION


# -- what a bundle reveals ------------------------------------------------------------------


def test_an_aggregated_bundle_reveals_no_other_document_nonce_or_commitment(
    aggregated: Forged,
) -> None:
    text = aggregated.bundle.dumps()
    mine = commitment_of(DOCUMENT)[1]
    for i, leaf in enumerate(aggregated.leaves):
        if leaf == mine:
            continue
        nonce = commitment_of(b"batch document %d" % i)[0]
        assert leaf.hex() not in text and nonce.hex() not in text
    assert COLLECTION_KEY.hex() not in text and sha256(COLLECTION_KEY).hex() not in text
    assert mine.hex() not in text  # even its own commitment is recomputed, not stated


# -- CVE-2012-2459: positions that exist only through the duplicated last node -----------


@pytest.mark.parametrize(
    ("where", "step", "path"),
    [
        ("anchor", Step.ANCHOR_INCLUSION, ("anchor", "tx_index")),
        ("contract", Step.CONTRACT, ("contract", "tx_index")),
    ],
)
@pytest.mark.parametrize("private", [None, "aggregated"])
def test_a_transaction_moved_one_past_an_odd_blocks_end_is_refused(
    where: str, step: Step, path: Path, private: str | None
) -> None:
    forged = forge_bundle(last_in_odd_block=where, private=private)  # type: ignore[arg-type]
    good = forged.bundle.to_json()
    verify_bundle(good, document_bytes=DOCUMENT, policy=forged.policy)
    assert get(good, path) == 4
    error = failure(put(good, path, 5), forged)
    assert error.step == step and "duplicated last node" in error.reason, error
