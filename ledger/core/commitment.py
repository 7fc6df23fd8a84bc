"""Commitments: what the ledger learns about a document is a hash it cannot reverse or test.

Entries are public and permanent, so the pipeline never publishes a document's bare
SHA-256 (anyone holding a guessed document could confirm it was notarized), its path, name
or size. It publishes a *commitment* instead, as OpenTimestamps does with its per-stamp
nonce::

    nonce       = HMAC-SHA256(collection key, "notary:nonce:v1" || document SHA-256)
    commitment  = SHA256("notary:commitment:v1" || nonce || document SHA-256)

The collection key (32 random bytes) is the collection's secret: kept in the data folder
and the audit store, never published. Deriving the nonce from it keeps re-runs idempotent
(the same document in the same collection always gets the same commitment, so it is found
and not published twice), while each document's nonce alone reveals nothing about any
other document's. A proof bundle carries the document's nonce; a verifier recomputes the
commitment from the file's SHA-256 and that nonce (proof bundle version 2,
``docs/proof-bundle.md``).

A collection's chain is named by its identifier, ``HMAC-SHA256(key,
"notary:collection-id:v1")`` cut to 16 bytes, which says nothing about the folder or name
behind it.

Every input and output is raw bytes of fixed length, so the concatenations above are
unambiguous.
"""

from __future__ import annotations

import hashlib
import hmac

from ledger.core.errors import DecodeError

__all__ = [
    "COLLECTION_ID_BYTES",
    "COLLECTION_KEY_BYTES",
    "NONCE_BYTES",
    "collection_identifier",
    "document_commitment",
    "document_nonce",
]

COLLECTION_KEY_BYTES = 32
NONCE_BYTES = 32
COLLECTION_ID_BYTES = 16
_NONCE_TAG = b"notary:nonce:v1"
_COMMITMENT_TAG = b"notary:commitment:v1"
_COLLECTION_ID_TAG = b"notary:collection-id:v1"


def _exact(value: bytes, size: int, what: str) -> bytes:
    if type(value) is not bytes or len(value) != size:
        raise DecodeError(f"{what} must be {size} bytes")
    return value


def document_nonce(collection_key: bytes, document_sha256: bytes) -> bytes:
    """The document's secret value (32 bytes), derived from the collection key.

    Args:
        collection_key: the collection's 32-byte secret key.
        document_sha256: the document's SHA-256 (raw 32 bytes).

    Raises:
        DecodeError: an argument is not bytes of its exact length.
    """
    key = _exact(collection_key, COLLECTION_KEY_BYTES, "collection key")
    digest = _exact(document_sha256, 32, "document SHA-256")
    return hmac.digest(key, _NONCE_TAG + digest, "sha256")


def document_commitment(document_sha256: bytes, nonce: bytes) -> bytes:
    """The commitment (32 bytes) published for a document in place of its hash.

    Args:
        document_sha256: the document's SHA-256 (raw 32 bytes).
        nonce: its 32-byte secret value (``document_nonce``).

    Raises:
        DecodeError: an argument is not bytes of its exact length.
    """
    digest = _exact(document_sha256, 32, "document SHA-256")
    secret = _exact(nonce, NONCE_BYTES, "nonce")
    return hashlib.sha256(_COMMITMENT_TAG + secret + digest).digest()


def collection_identifier(collection_key: bytes) -> bytes:
    """The 16-byte public identifier of a collection (names its chain; reveals nothing).

    Raises:
        DecodeError: the key is not 32 bytes.
    """
    key = _exact(collection_key, COLLECTION_KEY_BYTES, "collection key")
    return hmac.digest(key, _COLLECTION_ID_TAG, "sha256")[:COLLECTION_ID_BYTES]
