"""How a document and a collection are written on the ledger (the pipeline's entry format).

A collection is one chain. Its first entry has the external IDs
``["notary:collection:v1", <collection name, UTF-8>]`` (so its chain ID follows from the
name) and a small JSON content. A document is one entry in that chain with external IDs
``["notary:document:v1", <SHA-256 hex>, <size in bytes, decimal>, <relative path, UTF-8>]``
and content, the canonical JSON (RFC 8785) ``{"path", "sha256", "size", "v": 1}``. The
document's bytes never leave the machine. The entry is fully determined by
``(chain, sha256, size, path)``, so its entry hash can be computed before publishing: that
is what makes re-runs idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

import rfc8785

from ledger.core.entry import MAX_ENTRY_PAYLOAD_BYTES, Entry, chain_id_from_external_ids

COLLECTION_TAG = b"notary:collection:v1"
DOCUMENT_TAG = b"notary:document:v1"


class EntryTooLarge(ValueError):
    """A document's path is so long that its entry would exceed the 10 KiB payload limit."""


@dataclass(frozen=True)
class LedgerEntry:
    """External IDs and content of an entry, with its chain ID and entry hash (hex)."""

    chain_id: str
    external_ids: tuple[bytes, ...]
    content: bytes
    entry_hash: str


def collection_chain(name: str) -> LedgerEntry:
    """The first entry (and so the chain ID) of collection ``name``."""
    ext_ids = (COLLECTION_TAG, name.encode("utf-8"))
    content = rfc8785.dumps({"collection": name, "v": 1})
    entry = Entry.first_entry(ext_ids, content)
    return LedgerEntry(entry.chain_id.hex(), ext_ids, content, entry.hash().hex())


def collection_chain_id(name: str) -> str:
    """Hex chain ID of collection ``name`` (docs/formats.md §1.3 over its external IDs)."""
    return chain_id_from_external_ids((COLLECTION_TAG, name.encode("utf-8"))).hex()


def document_entry(chain_id: str, *, sha256: str, size_bytes: int, path: str) -> LedgerEntry:
    """The entry that notarizes a document (hex ``sha256``, ``size_bytes``, relative ``path``).

    Raises:
        EntryTooLarge: the path makes the entry exceed the 10240-byte payload limit.
    """
    ext_ids = (DOCUMENT_TAG, sha256.encode("ascii"), str(size_bytes).encode(), path.encode())
    content = rfc8785.dumps({"path": path, "sha256": sha256, "size": size_bytes, "v": 1})
    payload = sum(2 + len(x) for x in ext_ids) + len(content)
    if payload > MAX_ENTRY_PAYLOAD_BYTES:
        raise EntryTooLarge(
            f"entry for {path[:80]!r} would be {payload} bytes (limit {MAX_ENTRY_PAYLOAD_BYTES})"
        )
    entry = Entry(bytes.fromhex(chain_id), ext_ids, content)
    return LedgerEntry(chain_id, ext_ids, content, entry.hash().hex())
