"""Factom Merkle trees: root, branch building and branch checking (docs/formats.md §5.1).

Rules (factomd ``common/primitives/merkle.go``)::

    node  = SHA256(left || right)
    odd count at a level: the last node is paired with itself
    one leaf:  root = that leaf (no hashing)
    no leaves: root = 32 zero bytes

Building (``merkle_branch``) and checking (``walk_branch``) are separate pure pieces; a
check failure raises ``MerkleProofError`` carrying the expected and computed hashes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.blocks._codec import check_hash, json_field
from ledger.core.errors import MerkleProofError, PositionError
from ledger.core.hashing import ZERO_HASH, sha256
from ledger.core.hexbytes import hash32_from_hex

__all__ = ["MerkleNode", "hash_pair", "merkle_branch", "merkle_root", "walk_branch"]


def hash_pair(left: bytes, right: bytes) -> bytes:
    """Parent of two 32-byte nodes: ``SHA256(left || right)``."""
    return sha256(left + right)


def _next_level(level: Sequence[bytes]) -> list[bytes]:
    return [
        hash_pair(level[i], level[i + 1] if i + 1 < len(level) else level[i])
        for i in range(0, len(level), 2)
    ]


def merkle_levels(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """Every level of the tree, leaves first, root level (one node) last.

    Build once and reuse with ``branch_from_levels`` when many branches of one tree are
    needed (receipts of every entry of a block).
    """
    levels = [list(leaves)]
    while len(levels[-1]) > 1:
        levels.append(_next_level(levels[-1]))
    return levels


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """Root (32 bytes) over 32-byte ``leaves``; zero leaves give ``ZERO_HASH``."""
    if not leaves:
        return ZERO_HASH
    return merkle_levels(leaves)[-1][0]


_NODE_KEYS = ("left", "right", "top")


@dataclass(frozen=True)
class MerkleNode:
    """One step of a branch: the pair of children and their parent, all raw 32 bytes.

    The hash being proven at this step is ``left`` or ``right``; ``top`` is
    ``SHA256(left || right)`` and becomes the hash proven at the next step.
    """

    left: bytes
    right: bytes
    top: bytes

    def __post_init__(self) -> None:
        for name in _NODE_KEYS:
            value = getattr(self, name)
            if type(value) is not bytes or len(value) != 32:  # bytes of 32 need no copy
                object.__setattr__(self, name, check_hash(value, f"MerkleNode.{name}"))

    def to_json(self) -> dict[str, str]:
        """``{"left": hex, "right": hex, "top": hex}`` as in the node's receipts/anchors."""
        return {"left": self.left.hex(), "right": self.right.hex(), "top": self.top.hex()}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MerkleNode:
        """Inverse of ``to_json``; DecodeError for missing keys, bad hex or wrong lengths."""
        left, right, top = (json_field(obj, key, "merkle node") for key in _NODE_KEYS)
        return cls(
            hash32_from_hex(left, "merkle node left"),
            hash32_from_hex(right, "merkle node right"),
            hash32_from_hex(top, "merkle node top"),
        )


def merkle_branch(leaves: Sequence[bytes], index: int) -> list[MerkleNode]:
    """Branch from ``leaves[index]`` up to the root, one full-detail node per level.

    Same as factomd ``BuildMerkleBranch(hashes, index, fullDetail=true)``: per level the
    node's own hash and its sibling (itself when it is the unpaired last node) as
    ``left``/``right`` in tree order, and their parent as ``top``. A single leaf gives an
    empty branch (the leaf is the root).

    Requires ``0 <= index < len(leaves)``; raises ``PositionError`` (an IndexError) otherwise.
    """
    if not 0 <= index < len(leaves):
        raise PositionError(f"leaf index {index} outside 0..{len(leaves) - 1}")
    return branch_from_levels(merkle_levels(leaves), index)


def branch_from_levels(levels: Sequence[Sequence[bytes]], index: int) -> list[MerkleNode]:
    """``merkle_branch`` from prebuilt ``merkle_levels`` (``O(log n)`` per branch).

    Requires ``0 <= index < len(levels[0])``; raises ``PositionError`` otherwise.
    """
    if not levels or not 0 <= index < len(levels[0]):
        raise PositionError(f"leaf index {index} outside the tree")
    branch: list[MerkleNode] = []
    for level, parents in zip(levels, levels[1:], strict=False):
        left_index = index - (index % 2)
        right_index = min(left_index + 1, len(level) - 1)
        branch.append(MerkleNode(level[left_index], level[right_index], parents[index // 2]))
        index //= 2
    return branch


def walk_branch(start: bytes, branch: Iterable[MerkleNode]) -> bytes:
    """Check ``branch`` from ``start`` and return the final top (``start`` if empty).

    At each node the running hash must be ``left`` or ``right`` and ``top`` must equal
    ``SHA256(left || right)``; the top becomes the running hash.

    Raises:
        MerkleProofError: a node holds neither side equal to the running hash
            (``expected`` = the running hash, ``computed`` = None), or a node's top is wrong
            (``expected`` = the stated top, ``computed`` = the hash of its children). The
            message names the node index.
    """
    current = bytes(start)
    for position, node in enumerate(branch):
        if current not in (node.left, node.right):
            raise MerkleProofError(
                f"branch node {position} does not contain {current.hex()}", expected=current
            )
        computed = hash_pair(node.left, node.right)
        if computed != node.top:
            raise MerkleProofError(
                f"branch node {position} has a wrong top", expected=node.top, computed=computed
            )
        current = node.top
    return current
