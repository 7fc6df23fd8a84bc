"""Merkle root, branch and walk (docs/formats.md §5.1)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import DecodeError, MerkleProofError
from ledger.core.hashing import ZERO_HASH
from ledger.core.merkle import MerkleNode, hash_pair, merkle_branch, merkle_root, walk_branch

hashes = st.binary(min_size=32, max_size=32)


def _h(byte: int) -> bytes:
    return bytes([byte]) * 32


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _power_of_two_root(leaves: list[bytes]) -> bytes:
    """factomd's original array-store algorithm (next power of two, None padding)."""
    size = 1
    while size < len(leaves):
        size *= 2
    store: list[bytes | None] = [*leaves, *([None] * (2 * size - 1 - len(leaves)))]
    offset = size
    for i in range(0, 2 * size - 2, 2):
        left, right = store[i], store[i + 1]
        if left is None:
            store[offset] = None
        else:
            store[offset] = _sha(left + (left if right is None else right))
        offset += 1
    root = store[-1]
    assert root is not None
    return root


def test_empty_tree_has_the_zero_root() -> None:
    assert merkle_root([]) == ZERO_HASH


def test_single_leaf_is_its_own_root() -> None:
    assert merkle_root([_h(7)]) == _h(7)
    assert merkle_branch([_h(7)], 0) == []
    assert walk_branch(_h(7), []) == _h(7)


def test_two_leaves_hash_left_then_right() -> None:
    assert merkle_root([_h(1), _h(2)]) == _sha(_h(1) + _h(2))
    assert hash_pair(_h(1), _h(2)) == _sha(_h(1) + _h(2))


def test_odd_count_pairs_the_last_node_with_itself() -> None:
    a, b, c = _h(1), _h(2), _h(3)
    assert merkle_root([a, b, c]) == _sha(_sha(a + b) + _sha(c + c))


def test_branch_of_the_unpaired_last_leaf_uses_itself_as_sibling() -> None:
    a, b, c = _h(1), _h(2), _h(3)
    branch = merkle_branch([a, b, c], 2)
    assert branch == [
        MerkleNode(c, c, _sha(c + c)),
        MerkleNode(_sha(a + b), _sha(c + c), merkle_root([a, b, c])),
    ]


def test_branch_nodes_keep_tree_order_for_a_right_leaf() -> None:
    a, b = _h(1), _h(2)
    assert merkle_branch([a, b], 1) == [MerkleNode(a, b, _sha(a + b))]


@pytest.mark.parametrize("index", [-1, 3])
def test_branch_index_out_of_range(index: int) -> None:
    with pytest.raises(IndexError):
        merkle_branch([_h(1), _h(2), _h(3)], index)


@given(st.lists(hashes, min_size=1, max_size=40))
def test_root_matches_the_power_of_two_store_algorithm(leaves: list[bytes]) -> None:
    assert merkle_root(leaves) == _power_of_two_root(leaves)


@given(st.lists(hashes, min_size=1, max_size=40), st.data())
def test_branch_of_every_leaf_walks_to_the_root(leaves: list[bytes], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(leaves) - 1))
    branch = merkle_branch(leaves, index)
    assert walk_branch(leaves[index], branch) == merkle_root(leaves)


@given(st.lists(hashes, min_size=2, max_size=20))
def test_every_leaf_walks_to_the_root(leaves: list[bytes]) -> None:
    root = merkle_root(leaves)
    for index, leaf in enumerate(leaves):
        assert walk_branch(leaf, merkle_branch(leaves, index)) == root


def test_walk_rejects_a_node_without_the_running_hash() -> None:
    leaves = [_h(1), _h(2), _h(3), _h(4)]
    branch = merkle_branch(leaves, 0)
    with pytest.raises(MerkleProofError) as info:
        walk_branch(_h(9), branch)
    assert info.value.expected == _h(9)
    assert info.value.computed is None


def test_walk_rejects_a_wrong_top_with_evidence() -> None:
    leaves = [_h(1), _h(2), _h(3), _h(4)]
    branch = merkle_branch(leaves, 1)
    bad = MerkleNode(branch[0].left, branch[0].right, _h(0xEE))
    with pytest.raises(MerkleProofError) as info:
        walk_branch(_h(2), [bad, *branch[1:]])
    assert info.value.expected == _h(0xEE)
    assert info.value.computed == _sha(_h(1) + _h(2))


def test_walk_rejects_swapped_sides() -> None:
    leaves = [_h(1), _h(2)]
    node = merkle_branch(leaves, 0)[0]
    with pytest.raises(MerkleProofError):
        walk_branch(_h(1), [MerkleNode(node.right, node.left, node.top)])


def test_merkle_node_json_round_trip_and_strictness() -> None:
    node = MerkleNode(_h(1), _h(2), _h(3))
    assert MerkleNode.from_json(node.to_json()) == node
    with pytest.raises(DecodeError):
        MerkleNode.from_json({"left": "ab", "right": _h(2).hex(), "top": _h(3).hex()})
    with pytest.raises(DecodeError):
        MerkleNode.from_json({"left": "zz" * 32, "right": _h(2).hex(), "top": _h(3).hex()})
    with pytest.raises(DecodeError):
        MerkleNode.from_json({"left": _h(1).hex(), "right": _h(2).hex()})
    with pytest.raises(DecodeError):
        MerkleNode(b"short", _h(2), _h(3))
