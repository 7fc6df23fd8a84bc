"""Batch members' audit paths, recomputed from their batch's leaves instead of stored.

A member's audit path (``ceil(log2(size))`` hashes, about 1 KB of JSON for a 10,000-leaf
batch) was stored on each ``batch_members`` row: two thirds of a million-document audit
database, all of it written through the WAL. It is a function of the batch's leaves,
which are its members' commitments in leaf order (``commitment_of``), and those are known
from the member rows and the collection's key. So ``batch_members.audit_path`` is NULL
for a batch that holds all its leaves, and recomputed here when a proof or a report needs
it. A batch that lost leaves to another worker (which aggregated some of its documents
first: fewer members than ``batch_size``) cannot be rebuilt from its rows; its members
keep their stored paths (``Batches.record``).

``BatchTrees`` keeps the last few rebuilt trees (readers go batch by batch, leaf by leaf:
a 10,000-leaf tree takes ~30 ms to rebuild, ~1.3 MB to keep) and checks each rebuilt root
against the batch's recorded root before it serves a path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.engine import Connection

from connectors.audit.records import NewMember, NotarizationRow
from connectors.audit.sql import collections_table, members_table, notarizations_table
from connectors.errors import ConnectorPackageError
from ledger.core.aggregation import AggregationTree
from ledger.core.commitment import document_commitment, document_nonce

__all__ = ["AuditPathError", "BatchTrees", "batch_tree", "commitment_of", "lost_leaves_paths"]

#: Rebuilt trees kept per store: readers go batch by batch, so two cover a page boundary.
TREES_KEPT = 2


class AuditPathError(ConnectorPackageError, RuntimeError):
    """A member's audit path can be neither read nor rebuilt: its batch lacks leaves, its
    collection is unknown, or the rebuilt root differs from the recorded one.

    Attributes:
        batch_id: the batch's notarization id.
    """

    def __init__(self, message: str, *, batch_id: int) -> None:
        super().__init__(message)
        self.batch_id = batch_id


def commitment_of(collection_key: bytes, sha256: str) -> bytes:
    """The 32-byte commitment published for the document of hex ``sha256``.

    Raises:
        DecodeError: a key that is not 32 bytes.
        ValueError: ``sha256`` is not hex of 32 bytes.
    """
    digest = bytes.fromhex(sha256)
    return document_commitment(digest, document_nonce(collection_key, digest))


def batch_tree(collection_key: bytes, sha256s: Sequence[str]) -> AggregationTree:
    """The aggregation tree of a batch: leaf ``i`` is the commitment of ``sha256s[i]``.

    Raises:
        LimitError: no hashes.
    """
    return AggregationTree([commitment_of(collection_key, h) for h in sha256s])


class BatchTrees:
    """Fills in the audit paths of member rows read without one (thread-safe).

    Args:
        kept: how many rebuilt trees to keep (least recently used dropped first).
    """

    def __init__(self, kept: int = TREES_KEPT) -> None:
        self._kept = kept
        self._trees: OrderedDict[int, AggregationTree] = OrderedDict()
        self._lock = threading.Lock()

    def fill(
        self, conn: Connection, rows: Sequence[NotarizationRow], missing: Sequence[bool]
    ) -> list[NotarizationRow]:
        """``rows`` with the audit path of each row flagged in ``missing`` (a member read
        with a NULL ``audit_path``) computed from its batch's tree; others unchanged.

        Raises:
            AuditPathError: the batch cannot be rebuilt or does not match its root.
        """
        out = list(rows)
        for i, row in enumerate(rows):
            if not missing[i]:
                continue
            assert row.leaf_index is not None
            tree = self._tree(conn, row.id)
            out[i] = replace(row, audit_path=_hex_path(tree, row.leaf_index))
        return out

    def _tree(self, conn: Connection, batch_id: int) -> AggregationTree:
        with self._lock:
            tree = self._trees.get(batch_id)
            if tree is not None:
                self._trees.move_to_end(batch_id)
                return tree
        tree = _rebuild(conn, batch_id)
        with self._lock:
            self._trees[batch_id] = tree
            while len(self._trees) > self._kept:
                self._trees.popitem(last=False)
        return tree


def lost_leaves_paths(
    conn: Connection, batch_id: int, members: Sequence[NewMember], own: Mapping[int, int]
) -> list[tuple[int, tuple[str, ...]]]:
    """The audit paths to store for a batch that lost leaves to another worker's batch:
    ``(member id, hex path)`` of its own members (``own``: leaf index -> member id), from
    the tree of all the leaves it was built over (``members``, every leaf index once).

    Raises:
        AuditPathError: the batch's collection is unknown, or the tree of ``members`` does
            not have the batch's recorded size and root.
    """
    leaves = [m.sha256 for m in sorted(members, key=lambda m: m.leaf_index)]
    tree = _checked_tree(conn, batch_id, leaves)
    return [(member_id, _hex_path(tree, index)) for index, member_id in sorted(own.items())]


def _hex_path(tree: AggregationTree, index: int) -> tuple[str, ...]:
    return tuple(h.hex() for h in tree.audit_path(index))


def _rebuild(conn: Connection, batch_id: int) -> AggregationTree:
    m = members_table.c
    leaves = list(
        conn.scalars(select(m.sha256).where(m.batch_id == batch_id).order_by(m.leaf_index))
    )
    return _checked_tree(conn, batch_id, leaves)


def _checked_tree(conn: Connection, batch_id: int, leaves: Sequence[str]) -> AggregationTree:
    """The tree over ``leaves`` (hex SHA-256 in leaf order), checked against the batch's
    recorded size and root."""
    n, c = notarizations_table.c, collections_table.c
    head = conn.execute(
        select(n.sha256, n.batch_size, c.key)
        .select_from(notarizations_table.join(collections_table, c.name == n.collection))
        .where(n.id == batch_id)
    ).first()
    if head is None:
        raise AuditPathError(f"batch {batch_id} or its collection is unknown", batch_id=batch_id)
    if len(leaves) != head.batch_size:
        raise AuditPathError(
            f"batch {batch_id} has {len(leaves)} of its {head.batch_size} leaves and no "
            "stored audit paths",
            batch_id=batch_id,
        )
    tree = batch_tree(bytes.fromhex(head.key), leaves)
    if tree.root.hex() != head.sha256:
        raise AuditPathError(
            f"batch {batch_id}: rebuilt root {tree.root.hex()} is not the recorded {head.sha256}",
            batch_id=batch_id,
        )
    return tree
