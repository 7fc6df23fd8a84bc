"""Aggregation trees (RFC 6962 hashing): reference vectors, a recursive twin, tampering."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.aggregation import (
    AggregationProofError,
    AggregationTree,
    leaf_hash,
    node_hash,
    root_from_inclusion,
    verify_inclusion,
)
from ledger.core.errors import LedgerFormatError, LimitError, MerkleProofError

# RFC 6962's reference leaves and tree heads, as used by Certificate Transparency's test
# suites (e.g. transparency-dev/merkle, testonly/reference_test_vectors).
CT_LEAVES = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    bytes(range(0x50, 0x58)),
    bytes(range(0x60, 0x70)),
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_PATH_0_OF_8 = [
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
]


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 section 2.1 MTH, written recursively as the RFC states it."""
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _path(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 section 2.1.1 PATH(m, D[n]), recursively."""
    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return _path(m, leaves[:k]) + [_mth(leaves[k:])]
    return _path(m - k, leaves[k:]) + [_mth(leaves[:k])]


@pytest.mark.parametrize("size", range(1, 9))
def test_roots_match_rfc6962_reference(size: int) -> None:
    assert AggregationTree(CT_LEAVES[:size]).root.hex() == CT_ROOTS[size - 1]


def test_path_matches_rfc6962_reference() -> None:
    tree = AggregationTree(CT_LEAVES)
    assert [p.hex() for p in tree.audit_path(0)] == CT_PATH_0_OF_8
    verify_inclusion(CT_LEAVES[0], index=0, size=8, path=tree.audit_path(0), root=tree.root)


leaf_lists = st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=70)


@given(leaf_lists)
def test_tree_equals_the_recursive_definition(leaves: list[bytes]) -> None:
    tree = AggregationTree(leaves)
    assert tree.size == len(leaves)
    assert tree.root == _mth(leaves)
    for m in range(len(leaves)):
        assert list(tree.audit_path(m)) == _path(m, leaves)
        assert tree.leaf_hash(m) == leaf_hash(leaves[m])
    assert list(tree.audit_paths()) == [tree.audit_path(m) for m in range(len(leaves))]
    hex_paths = [tuple(h.hex() for h in tree.audit_path(m)) for m in range(len(leaves))]
    assert tree.hex_audit_paths() == hex_paths


@given(leaf_lists)
def test_every_audit_path_verifies(leaves: list[bytes]) -> None:
    tree = AggregationTree(leaves)
    for m, path in enumerate(tree.audit_paths()):
        verify_inclusion(leaves[m], index=m, size=tree.size, path=path, root=tree.root)


unique_leaf_lists = st.lists(
    st.binary(min_size=0, max_size=40), min_size=1, max_size=70, unique=True
)


@given(unique_leaf_lists, st.data())
def test_a_path_for_another_index_does_not_verify(leaves: list[bytes], data: st.DataObject) -> None:
    tree = AggregationTree(leaves)
    m = data.draw(st.integers(0, tree.size - 1))
    path = tree.audit_path(m)
    other_index = data.draw(st.integers(0, tree.size + 3).filter(lambda i: i != m))
    with pytest.raises(AggregationProofError):
        verify_inclusion(leaves[m], index=other_index, size=tree.size, path=path, root=tree.root)


@given(unique_leaf_lists, st.data())
def test_a_path_made_for_another_tree_size_does_not_verify(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = AggregationTree(leaves)
    m = data.draw(st.integers(0, tree.size - 1))
    other_size = data.draw(st.integers(m + 1, tree.size + 5).filter(lambda s: s != tree.size))
    padded = leaves + [b"pad" + bytes([i]) * 41 for i in range(5)]
    other = AggregationTree(padded[:other_size])
    for claimed_size in (tree.size, other_size):
        with pytest.raises(AggregationProofError):
            verify_inclusion(
                leaves[m], index=m, size=claimed_size, path=other.audit_path(m), root=tree.root
            )


@given(leaf_lists, st.data())
def test_every_flipped_bit_of_the_path_is_caught(leaves: list[bytes], data: st.DataObject) -> None:
    tree = AggregationTree(leaves)
    m = data.draw(st.integers(0, tree.size - 1))
    path = list(tree.audit_path(m))
    if not path:
        return
    which = data.draw(st.integers(0, len(path) - 1))
    bit = data.draw(st.integers(0, 255))
    tampered = bytearray(path[which])
    tampered[bit // 8] ^= 1 << (bit % 8)
    path[which] = bytes(tampered)
    with pytest.raises(AggregationProofError) as caught:
        verify_inclusion(leaves[m], index=m, size=tree.size, path=path, root=tree.root)
    assert caught.value.expected == tree.root
    assert caught.value.computed is not None and caught.value.computed != tree.root


def test_an_interior_node_cannot_pass_as_a_leaf() -> None:
    leaves = [bytes([i]) * 32 for i in range(8)]
    tree = AggregationTree(leaves)
    left, right = leaf_hash(leaves[0]), leaf_hash(leaves[1])
    # The node over leaves 0 and 1 sits at index 0 of a 4-node level; its children's
    # concatenation as "leaf data" with the rest of leaf 0's path must not reach the root.
    assert node_hash(left, right) == tree.audit_path(2)[1]
    with pytest.raises(AggregationProofError):
        verify_inclusion(left + right, index=0, size=4, path=tree.audit_path(0)[1:], root=tree.root)
    with pytest.raises(AggregationProofError):
        verify_inclusion(left + right, index=0, size=8, path=tree.audit_path(0)[1:], root=tree.root)


def test_paths_of_wrong_length_or_shape_are_refused_before_hashing_the_root() -> None:
    tree = AggregationTree([b"a", b"b", b"c", b"d", b"e"])
    path = tree.audit_path(4)  # the carried-up last leaf: one hash
    assert len(path) == 1
    with pytest.raises(AggregationProofError, match="more than"):
        root_from_inclusion(b"e", index=4, size=5, path=[*path, path[0]])
    with pytest.raises(AggregationProofError, match="fewer than"):
        root_from_inclusion(b"a", index=0, size=5, path=tree.audit_path(0)[:-1])
    with pytest.raises(AggregationProofError, match="32 bytes"):
        root_from_inclusion(b"e", index=4, size=5, path=[path[0][:31]])
    with pytest.raises(AggregationProofError, match="outside"):
        root_from_inclusion(b"e", index=5, size=5, path=path)
    with pytest.raises(AggregationProofError, match="size"):
        root_from_inclusion(b"e", index=0, size=0, path=[])
    with pytest.raises(AggregationProofError):
        root_from_inclusion(b"e", index=True, size=5, path=path)  # type: ignore[arg-type]


def test_single_leaf_tree() -> None:
    tree = AggregationTree([b"only"])
    assert tree.root == leaf_hash(b"only")
    assert tree.audit_path(0) == ()
    verify_inclusion(b"only", index=0, size=1, path=(), root=tree.root)


def test_empty_tree_and_bad_index_are_refused() -> None:
    with pytest.raises(LimitError):
        AggregationTree([])
    with pytest.raises(IndexError):
        AggregationTree([b"x"]).audit_path(1)


def test_errors_belong_to_the_core_tree() -> None:
    assert issubclass(AggregationProofError, MerkleProofError)
    assert issubclass(AggregationProofError, LedgerFormatError)
