"""How a document and a collection are written on the ledger (the pipeline's entry formats).

Three publish modes (``connectors.audit.models.PublishMode``) use two formats. The private
modes, ``aggregate`` and ``entry``, use version 2 (``ledger.core.notary_entry``): the
collection's chain is named by its identifier, a document is published as a commitment
(``ledger.core.commitment``) in an entry of its own (``entry``) or as a leaf of a batch's
aggregation tree whose root and size one entry carries (``aggregate``); no path, name, size
or bare document hash leaves the machine. ``notarization_entry`` gives any audit store
row's entry; ``collection_entry`` a collection's first entry.

The ``clear`` mode uses version 1, below. A collection is one chain. Its first entry has the external IDs
``["notary:collection:v1", <collection name, UTF-8>]`` (so its chain ID follows from the
name) and a small JSON content. A document is one entry in that chain with external IDs
``["notary:document:v1", <SHA-256 hex>, <size in bytes, decimal>, <relative path, UTF-8>]``
and content, the canonical JSON (RFC 8785) ``{"path", "sha256", "size", "v": 1}``. The
document's bytes never leave the machine. The entry is fully determined by
``(chain, sha256, size, path)``, so its entry hash can be computed before publishing: that
is what makes re-runs idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import rfc8785

from connectors.audit import (
    CollectionRecord,
    NewMember,
    NotarizationRow,
    PublishMode,
    batch_tree,
    commitment_of,
)
from ledger.core.aggregation import AggregationTree
from ledger.core.entry import MAX_ENTRY_PAYLOAD_BYTES, Entry, chain_id_from_external_ids
from ledger.core.notary_entry import batch_entry, collection_first_entry, commitment_entry
from tasks.errors import TaskError

COLLECTION_TAG = b"notary:collection:v1"
DOCUMENT_TAG = b"notary:document:v1"


class EntryTooLarge(TaskError, ValueError):
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


def ledger_entry(entry: Entry) -> LedgerEntry:
    """``entry`` as a ``LedgerEntry`` (hex chain id and entry hash)."""
    return LedgerEntry(entry.chain_id.hex(), entry.external_ids, entry.content, entry.hash().hex())


def collection_entry(collection: CollectionRecord) -> LedgerEntry:
    """The first entry of ``collection``'s chain: named by its identifier when private, by
    its name when ``clear``."""
    if collection.private:
        return ledger_entry(collection_first_entry(collection.identifier))
    return collection_chain(collection.name)


def chain_for(name: str, identifier: bytes, mode: PublishMode) -> str:
    """Hex chain id of a collection (``connectors.audit.store.ChainNamer``): the version-1
    chain of ``name`` for ``clear``, the chain named by ``identifier`` otherwise."""
    if mode == "clear":
        return collection_chain_id(name)
    return collection_first_entry(identifier).chain_id.hex()


def aggregation_tree(collection_key: bytes, sha256s: Sequence[str]) -> AggregationTree:
    """The aggregation tree of a batch: leaf ``i`` is the commitment of ``sha256s[i]``
    (``connectors.audit.paths.batch_tree``, which the audit store rebuilds paths with).

    Raises:
        LimitError: no hashes.
    """
    return batch_tree(collection_key, sha256s)


def batch_members(
    collection_key: bytes, docs: Sequence[tuple[int, str]]
) -> tuple[str, list[NewMember]]:
    """The tree root (hex) and the members of a batch of ``(document id, hex SHA-256)``,
    leaf ``i`` being ``docs[i]``'s commitment (hashes must be distinct). No audit paths:
    the audit store derives them from the leaves when a proof needs one.

    Memory: the tree (about 2 hashes per document), for the batch only.

    Raises:
        LimitError: no documents.
    """
    tree = aggregation_tree(collection_key, [sha for _doc_id, sha in docs])
    members = [NewMember(doc_id, sha, index) for index, (doc_id, sha) in enumerate(docs)]
    return tree.root.hex(), members


def notarization_entry(row: NotarizationRow, *, collection_key: bytes | None) -> LedgerEntry:
    """The entry that publishes ``row``, by its ``kind``.

    ``document``: the version-1 entry (``document_entry``); ``commitment``: the document's
    commitment entry; ``batch``: the entry of the tree's root (``row.batch_root`` for a
    member row, else ``row.sha256``) and size.

    Raises:
        EntryTooLarge: a version-1 entry over the payload limit.
        ValueError: a ``commitment`` row without the collection key, or a batch row
            without its size.
    """
    if row.kind == "document":
        return document_entry(
            row.chain_id, sha256=row.sha256, size_bytes=row.size_bytes, path=row.path
        )
    chain = bytes.fromhex(row.chain_id)
    if row.kind == "commitment":
        if collection_key is None:
            raise ValueError(f"no key for collection {row.collection!r}")
        return ledger_entry(commitment_entry(chain, commitment_of(collection_key, row.sha256)))
    if row.batch_size is None:
        raise ValueError(f"batch notarization {row.id} has no size")
    root = row.batch_root or row.sha256
    return ledger_entry(batch_entry(chain, bytes.fromhex(root), row.batch_size))
