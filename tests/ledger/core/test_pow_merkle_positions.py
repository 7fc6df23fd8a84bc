"""Positions in Bitcoin-style Merkle trees that exist only through the duplicated last node.

A level with an odd count pairs its last node with itself, so the tree over ``n``
transactions also "contains" positions ``n .. 2**depth - 1``: each is the right-hand twin
of some level's last node (CVE-2012-2459). ``root_from_path`` refuses those from the path
alone (ledger/core/pow/merkle.py). For every tree size up to 17 and every index the path
length admits, the best path a forger can give (built here on the virtual, duplicated
tree) is checked: each real position verifies, each other one is refused, and the same
walk without the rule would have reached the root (so the test would fail without it).
"""

from __future__ import annotations

import pytest

from ledger.core.errors import MerkleProofError
from ledger.core.hashing import sha256, sha256d
from ledger.core.pow.merkle import merkle_path, merkle_root, root_from_path

SIZES = range(1, 18)


def levels_of(txids: list[bytes]) -> list[list[bytes]]:
    """Every level of the tree, leaves first, without padding."""
    levels = [txids]
    while len(levels[-1]) > 1:
        level = levels[-1]
        levels.append(
            [
                sha256d(level[i] + (level[i + 1] if i + 1 < len(level) else level[i]))
                for i in range(0, len(level), 2)
            ]
        )
    return levels


def resolve(levels: list[list[bytes]], level: int, position: int) -> int:
    """The real position at ``level`` whose hash the virtual ``position`` holds."""
    if position < len(levels[level]):
        return position
    parent = resolve(levels, level + 1, position >> 1)
    child = 2 * parent + (position & 1)
    return child if child < len(levels[level]) else 2 * parent


def forged_path(levels: list[list[bytes]], index: int) -> tuple[bytes, list[bytes]]:
    """The leaf and path that lead from virtual position ``index`` to the root."""
    depth = len(levels) - 1
    leaf = levels[0][resolve(levels, 0, index)]
    path = [levels[k][resolve(levels, k, (index >> k) ^ 1)] for k in range(depth)]
    return leaf, path


def walk_without_the_rule(txid: bytes, index: int, path: list[bytes]) -> bytes:
    current = txid
    for level, sibling in enumerate(path):
        pair = sibling + current if index >> level & 1 else current + sibling
        current = sha256d(pair)
    return current


@pytest.mark.parametrize("size", SIZES)
def test_every_real_position_verifies_and_every_duplicated_one_is_refused(size: int) -> None:
    txids = [sha256(b"tx %d of %d" % (i, size)) for i in range(size)]
    levels = levels_of(txids)
    root = merkle_root(txids)
    depth = len(levels) - 1
    refused = 0
    for index in range(1 << depth):
        leaf, path = forged_path(levels, index)
        assert walk_without_the_rule(leaf, index, path) == root, (size, index)
        if index < size:
            assert path == merkle_path(txids, index)
            assert root_from_path(leaf, index, path) == root
        else:
            with pytest.raises(MerkleProofError, match="duplicated last node"):
                root_from_path(leaf, index, path)
            refused += 1
    assert refused == (1 << depth) - size


@pytest.mark.parametrize("size", [s for s in SIZES if s % 2])
def test_one_past_the_last_transaction_of_an_odd_block_is_refused(size: int) -> None:
    """The issue's case: the last transaction's own path, its index moved one further."""
    txids = [sha256(b"tx %d" % i) for i in range(size)]
    if size == 1:
        with pytest.raises(MerkleProofError, match="does not fit"):
            root_from_path(txids[0], 1, [])
        return
    path = merkle_path(txids, size - 1)
    assert walk_without_the_rule(txids[-1], size, path) == merkle_root(txids)
    with pytest.raises(MerkleProofError, match=f"position {size} exists only"):
        root_from_path(txids[-1], size, path)


def test_a_left_node_equal_to_its_sibling_is_the_real_duplicate_and_passes() -> None:
    txids = [sha256(b"tx %d" % i) for i in range(3)]
    path = merkle_path(txids, 2)
    assert path[0] == txids[2]
    assert root_from_path(txids[2], 2, path) == merkle_root(txids)
