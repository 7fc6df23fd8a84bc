"""Merkle trees over txids, Bitcoin's rule (different from Factom's, ``ledger.core.merkle``).

Rules::

    node = SHA256d(left || right)        (internal byte order)
    odd count at a level: the last node is paired with itself
    one txid: root = that txid

A path is the list of sibling hashes from the leaf up; the leaf's index says, bit by bit,
on which side each sibling sits (bit ``i`` set: the sibling is on the left at level ``i``).
Building (``merkle_path``) and checking (``root_from_path``) are separate pure pieces.

Duplicating the odd last node makes the tree over ``[a, b, c]`` the same as over
``[a, b, c, c]`` (CVE-2012-2459): a path can then claim a position one past a level's end,
as the right twin of the last node, and still lead to the root. Such a step is the only
one where a right-hand node equals its left sibling (distinct transactions never make
equal subtrees), so ``root_from_path`` refuses exactly that, from the path alone, without
knowing the block's transaction count. This is Bitcoin Core's "mutated" test
(``ComputeMerkleRoot``: two equal nodes paired), applied to the one branch a proof walks.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.core.errors import LimitError, MerkleProofError, PositionError
from ledger.core.hashing import sha256d

__all__ = ["merkle_path", "merkle_root", "root_from_path"]


def _parent(left: bytes, right: bytes) -> bytes:
    return sha256d(left + right)


def _next_level(level: Sequence[bytes]) -> list[bytes]:
    return [
        _parent(level[i], level[i + 1] if i + 1 < len(level) else level[i])
        for i in range(0, len(level), 2)
    ]


def merkle_root(txids: Sequence[bytes]) -> bytes:
    """Root over 32-byte ``txids`` (at least one). LimitError for an empty list."""
    if not txids:
        raise LimitError("a block has at least one transaction")
    level = list(txids)
    while len(level) > 1:
        level = _next_level(level)
    return level[0]


def merkle_path(txids: Sequence[bytes], index: int) -> list[bytes]:
    """Sibling hashes from ``txids[index]`` up to the root.

    Requires ``0 <= index < len(txids)``; ``PositionError`` (an IndexError) otherwise.
    """
    if not 0 <= index < len(txids):
        raise PositionError(f"transaction index {index} outside 0..{len(txids) - 1}")
    path: list[bytes] = []
    level = list(txids)
    while len(level) > 1:
        sibling = index ^ 1
        path.append(level[sibling] if sibling < len(level) else level[index])
        level = _next_level(level)
        index //= 2
    return path


def root_from_path(txid: bytes, index: int, path: Sequence[bytes]) -> bytes:
    """The root that ``path`` leads to from ``txid`` at position ``index``.

    Raises:
        MerkleProofError: ``index`` is negative or has bits above the path's length (those
            bits would otherwise go unchecked), a sibling is not 32 bytes, or a step puts
            the running node on the right of a sibling equal to it: ``index`` then names a
            position that exists only through the duplicated last node (module docstring).
    """
    if index < 0 or index >> len(path):
        raise MerkleProofError(f"index {index} does not fit a path of {len(path)} levels")
    current = bytes(txid)
    for level, sibling in enumerate(path):
        if len(sibling) != 32:
            raise MerkleProofError(f"path element {level} is {len(sibling)} bytes, not 32")
        if index >> level & 1:
            if sibling == current:
                raise MerkleProofError(
                    f"position {index} exists only through the duplicated last node"
                    f" (path element {level} is the node's own copy)"
                )
            current = _parent(sibling, current)
        else:
            current = _parent(current, sibling)
    return current
