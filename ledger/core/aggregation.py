"""Aggregation trees: many documents under one ledger entry (RFC 6962 / RFC 9162 hashing).

A batch of documents is aggregated by putting each document's 32-byte commitment
(:mod:`ledger.core.commitment`) as a leaf of a Merkle tree; one entry on the ledger
carries the tree's root and size (:mod:`ledger.core.notary_entry`), and each document keeps
its leaf index and audit path. The hashing is Certificate Transparency's (RFC 6962 section
2.1, restated in RFC 9162 section 2.1), which separates leaves from nodes so that no
interior node can be passed off as a leaf, and no leaf as a node::

    leaf hash  = SHA256(0x00 || leaf data)
    node hash  = SHA256(0x01 || left || right)
    MTH(D[n])  = H(0x01 || MTH(D[0:k]) || MTH(D[k:n])),  k the largest power of two < n

No node is ever paired with itself (unlike the Factom and Bitcoin trees of
:mod:`ledger.core.merkle` and :mod:`ledger.core.pow.merkle`): an odd node at the end of a
level is carried up unchanged, which gives the same tree as the recursive rule above. So a
leaf index exists only below ``size``, and an audit path fits exactly one tree size: a
path made for another size does not verify (RFC 9162 section 2.1.3.2).

Building (:class:`AggregationTree`) and checking (:func:`verify_inclusion`) are separate
pure pieces; a check failure raises :class:`AggregationProofError` with the expected and
computed roots.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

from ledger.core.errors import LimitError, MerkleProofError

__all__ = [
    "LEAF_PREFIX",
    "NODE_PREFIX",
    "AggregationProofError",
    "AggregationTree",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion",
    "verify_inclusion",
]

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
_HASH_BYTES = 32
#: Largest tree a proof may name: 2**40 leaves is far beyond any batch, and bounds the
#: path length a verifier walks (at most 40 steps).
MAX_TREE_SIZE = 1 << 40


class AggregationProofError(MerkleProofError):
    """An audit path that does not lead from the leaf to the root for that index and size.

    Attributes (from ``MerkleProofError``):
        expected: the root the path had to reach (raw 32 bytes), when the walk completed.
        computed: the root the path gave (raw 32 bytes), when the walk completed.
    """


def leaf_hash(data: bytes) -> bytes:
    """``SHA256(0x00 || data)``: the hash of one leaf (RFC 6962 section 2.1)."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA256(0x01 || left || right)``: an interior node over two 32-byte children."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


class AggregationTree:
    """The whole tree over a batch's leaves, kept level by level to serve audit paths.

    Args:
        leaves: the leaf data in leaf-index order (for the pipeline, each document's
            32-byte commitment). At least one.

    Raises:
        LimitError: no leaves, or more than ``MAX_TREE_SIZE``.

    Memory is about ``2 * size`` 32-byte hashes; building costs ``2 * size - 1`` SHA-256.
    """

    __slots__ = ("_levels",)

    def __init__(self, leaves: Sequence[bytes]) -> None:
        if not leaves:
            raise LimitError("an aggregation tree needs at least one leaf")
        if len(leaves) > MAX_TREE_SIZE:
            raise LimitError(f"an aggregation tree holds at most {MAX_TREE_SIZE} leaves")
        sha = hashlib.sha256
        level = [sha(LEAF_PREFIX + leaf).digest() for leaf in leaves]
        levels = [level]
        while len(level) > 1:
            pairs = len(level) - 1
            up = [sha(NODE_PREFIX + level[i] + level[i + 1]).digest() for i in range(0, pairs, 2)]
            if len(level) % 2:
                up.append(level[-1])  # carried up unchanged, never paired with itself
            level = up
            levels.append(level)
        self._levels = levels

    @property
    def size(self) -> int:
        """Number of leaves."""
        return len(self._levels[0])

    @property
    def root(self) -> bytes:
        """The tree's root hash (32 bytes); for one leaf, that leaf's hash."""
        return self._levels[-1][0]

    def leaf_hash(self, index: int) -> bytes:
        """The hash of leaf ``index`` (requires ``0 <= index < size``)."""
        self._check_index(index)
        return self._levels[0][index]

    def audit_path(self, index: int) -> tuple[bytes, ...]:
        """The audit path of leaf ``index``, leaf level first (RFC 6962 ``PATH(m, D[n])``).

        Requires ``0 <= index < size``; raises ``IndexError`` otherwise. The path has at
        most ``ceil(log2(size))`` hashes of 32 bytes.
        """
        self._check_index(index)
        path = []
        for level in self._levels[:-1]:
            sibling = index ^ 1
            if sibling < len(level):
                path.append(level[sibling])
            index >>= 1
        return tuple(path)

    def audit_paths(self) -> Iterator[tuple[bytes, ...]]:
        """Every leaf's audit path, in leaf-index order (same values as ``audit_path``)."""
        for index in range(self.size):
            yield self.audit_path(index)

    def hex_audit_paths(self) -> list[tuple[str, ...]]:
        """Every leaf's audit path in hex, in leaf-index order (the values of ``audit_path``,
        each hash as 64 lowercase hex characters).

        Each node is converted to hex once, not once per path through it: a 10,000-leaf
        tree has 20,000 nodes but 140,000 path elements.
        """
        hex_levels = [[h.hex() for h in level] for level in self._levels[:-1]]
        paths = []
        for leaf in range(self.size):
            path = []
            index = leaf
            for level in hex_levels:
                sibling = index ^ 1
                if sibling < len(level):
                    path.append(level[sibling])
                index >>= 1
            paths.append(tuple(path))
        return paths

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"leaf index {index} is outside a tree of {self.size} leaves")


def root_from_inclusion(leaf: bytes, *, index: int, size: int, path: Sequence[bytes]) -> bytes:
    """The root that ``path`` leads to from leaf data ``leaf`` at ``index`` in a tree of ``size``.

    The walk is RFC 9162 section 2.1.3.2's: the path's shape is fixed by ``index`` and
    ``size``, so a path too long or too short for them, an index outside the tree, or a
    path element that is not 32 bytes is refused before any root is compared.

    Raises:
        AggregationProofError: the path does not fit that index and size.
    """
    if type(size) is not int or not 1 <= size <= MAX_TREE_SIZE:
        raise AggregationProofError(f"tree size {size!r} is not between 1 and {MAX_TREE_SIZE}")
    if type(index) is not int or not 0 <= index < size:
        raise AggregationProofError(f"leaf index {index!r} is outside a tree of {size} leaves")
    fn, sn = index, size - 1
    node = leaf_hash(leaf)
    for step, sibling in enumerate(path):
        if type(sibling) is not bytes or len(sibling) != _HASH_BYTES:
            raise AggregationProofError(f"audit path element {step} is not 32 bytes")
        if sn == 0:
            raise AggregationProofError(
                f"audit path has {len(path)} hashes, more than leaf {index} of {size} needs"
            )
        if fn & 1 or fn == sn:
            node = node_hash(sibling, node)
            while not fn & 1 and fn != 0:  # skip the levels where this node is carried up
                fn >>= 1
                sn >>= 1
        else:
            node = node_hash(node, sibling)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise AggregationProofError(
            f"audit path has {len(path)} hashes, fewer than leaf {index} of {size} needs"
        )
    return node


def verify_inclusion(
    leaf: bytes, *, index: int, size: int, path: Sequence[bytes], root: bytes
) -> None:
    """Check that leaf data ``leaf`` is leaf ``index`` of the tree of ``size`` with ``root``.

    Returns None; raises ``AggregationProofError`` (with ``expected`` = ``root`` and
    ``computed`` set when the walk completed) when it is not.
    """
    computed = root_from_inclusion(leaf, index=index, size=size, path=path)
    if computed != root:
        raise AggregationProofError(
            f"audit path of leaf {index} of {size} does not lead to the root",
            expected=root,
            computed=computed,
        )
