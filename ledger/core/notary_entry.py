"""The pipeline's private entry formats (version 2): what a notarization puts on the ledger.

Three kinds of entry, each fully determined by public, non-revealing values (so the entry
hash is known before publishing, which keeps re-runs idempotent):

=============  ============================================  ===============================
kind           external IDs                                  content (canonical JSON)
=============  ============================================  ===============================
collection     ``"notary:collection:v2"``, identifier hex    ``{"v":2}``
(first entry)  (32 lowercase hex characters, 16 bytes)
commitment     ``"notary:commitment:v2"``, commitment hex    ``{"commitment":"<hex>","v":2}``
(one document) (64 lowercase hex characters)
batch          ``"notary:batch:v2"``, root hex, size         ``{"root":"<hex>","size":N,"v":2}``
(aggregated)   (64 hex characters; decimal, no leading 0)
=============  ============================================  ===============================

The identifier comes from :func:`ledger.core.commitment.collection_identifier`, the
commitment from :func:`ledger.core.commitment.document_commitment`, the root and size from
:class:`ledger.core.aggregation.AggregationTree`. Nothing else is published: no path, name,
size or bare document hash. A verifier checks an entry byte for byte against the entry
these functions build from the values a proof bundle claims.

The content is canonical JSON (RFC 8785): for these objects (ASCII keys, lowercase hex
strings, non-negative integers) that is ``json.dumps(..., sort_keys=True,
separators=(",", ":"))``.
"""

from __future__ import annotations

import json

from ledger.core.entry import Entry

__all__ = [
    "BATCH_TAG",
    "COLLECTION_TAG",
    "COMMITMENT_TAG",
    "batch_entry",
    "collection_first_entry",
    "commitment_entry",
]

COLLECTION_TAG = b"notary:collection:v2"
COMMITMENT_TAG = b"notary:commitment:v2"
BATCH_TAG = b"notary:batch:v2"


def _canonical(obj: dict[str, object]) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("ascii")


def _hash32(value: bytes, what: str) -> str:
    if type(value) is not bytes or len(value) != 32:
        raise ValueError(f"{what} must be 32 bytes")
    return value.hex()


def collection_first_entry(identifier: bytes) -> Entry:
    """The first entry of a collection's chain; its ``chain_id`` names the collection.

    Args:
        identifier: the collection's 16-byte public identifier.

    Raises:
        ValueError: ``identifier`` is not 16 bytes.
    """
    if type(identifier) is not bytes or len(identifier) != 16:
        raise ValueError("a collection identifier must be 16 bytes")
    return Entry.first_entry(
        (COLLECTION_TAG, identifier.hex().encode("ascii")), _canonical({"v": 2})
    )


def commitment_entry(chain_id: bytes, commitment: bytes) -> Entry:
    """The entry that notarizes one document by its 32-byte commitment.

    Raises:
        ValueError: ``commitment`` is not 32 bytes (``chain_id`` is checked by ``Entry``).
    """
    text = _hash32(commitment, "commitment")
    content = _canonical({"commitment": text, "v": 2})
    return Entry(chain_id, (COMMITMENT_TAG, text.encode("ascii")), content)


def batch_entry(chain_id: bytes, root: bytes, size: int) -> Entry:
    """The entry that notarizes a batch: the root (32 bytes) and leaf count of its tree.

    Raises:
        ValueError: ``root`` is not 32 bytes or ``size`` is not a positive integer.
    """
    text = _hash32(root, "root")
    if type(size) is not int or size < 1:
        raise ValueError(f"a batch size must be a positive integer, not {size!r}")
    content = _canonical({"root": text, "size": size, "v": 2})
    return Entry(chain_id, (BATCH_TAG, text.encode("ascii"), str(size).encode("ascii")), content)
