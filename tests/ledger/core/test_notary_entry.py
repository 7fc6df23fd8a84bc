"""The pipeline's version-2 entry formats: exact layouts, and nothing private in them."""

from __future__ import annotations

import hashlib
import json

import pytest

from ledger.core.aggregation import AggregationTree
from ledger.core.commitment import collection_identifier, document_commitment, document_nonce
from ledger.core.entry import Entry, chain_id_from_external_ids
from ledger.core.notary_entry import batch_entry, collection_first_entry, commitment_entry

KEY = bytes(range(32))


def test_collection_chain_is_named_by_its_identifier_only() -> None:
    identifier = collection_identifier(KEY)
    first = collection_first_entry(identifier)
    assert first.external_ids == (b"notary:collection:v2", identifier.hex().encode())
    assert first.content == b'{"v":2}'
    assert first.chain_id == chain_id_from_external_ids(first.external_ids)
    with pytest.raises(ValueError):
        collection_first_entry(identifier + b"\x00")


def test_commitment_entry_layout() -> None:
    chain = collection_first_entry(collection_identifier(KEY)).chain_id
    digest = hashlib.sha256(b"terminations/jane-doe.pdf").digest()
    commitment = document_commitment(digest, document_nonce(KEY, digest))
    entry = commitment_entry(chain, commitment)
    assert entry.external_ids == (b"notary:commitment:v2", commitment.hex().encode())
    assert json.loads(entry.content) == {"commitment": commitment.hex(), "v": 2}
    assert (
        entry.content
        == json.dumps(
            {"commitment": commitment.hex(), "v": 2}, sort_keys=True, separators=(",", ":")
        ).encode()
    )
    assert Entry.unmarshal(entry.marshal()) == entry
    raw = entry.marshal()
    assert digest not in raw and digest.hex().encode() not in raw
    with pytest.raises(ValueError):
        commitment_entry(chain, commitment[:31])


def test_batch_entry_layout() -> None:
    chain = collection_first_entry(collection_identifier(KEY)).chain_id
    tree = AggregationTree([i.to_bytes(32, "big") for i in range(1000)])
    entry = batch_entry(chain, tree.root, tree.size)
    assert entry.external_ids == (b"notary:batch:v2", tree.root.hex().encode(), b"1000")
    assert entry.content == b'{"root":"' + tree.root.hex().encode() + b'","size":1000,"v":2}'
    assert entry.cost() == 1
    for bad_size in (0, -1, True, 1.0):
        with pytest.raises(ValueError):
            batch_entry(chain, tree.root, bad_size)  # type: ignore[arg-type]
