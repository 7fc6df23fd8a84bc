"""Deterministic, fully consistent proof bundles built in memory (no services), and forgeries.

``forge_bundle()`` builds three directory blocks (heights 0..2, the document's entry in
height 1), a receipt, an anchor block holding a coinbase, another anchor, the anchor of
height 1 and the window commitment over heights 0..2, and ``headers`` mined headers. The
keyword arguments produce internally consistent forgeries (every hash and every proof of
work recomputed) that only one verification step can catch.

Version 2 (``private=``): the document is published as its commitment under a test
collection key, either by its own entry (``"document"``) or as leaf ``leaf_index`` of an
aggregation tree of ``batch_size`` commitments (``"aggregated"``), in the collection's
private chain (``ledger.core.notary_entry``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ledger.anchor.chain import mine
from ledger.core.aggregation import AggregationTree
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload, window_root
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.commitment import collection_identifier, document_commitment, document_nonce
from ledger.core.entry import Entry, chain_id_from_external_ids
from ledger.core.hashing import sha256, sha256d
from ledger.core.merkle import merkle_branch
from ledger.core.notary_entry import batch_entry, collection_first_entry, commitment_entry
from ledger.core.pow.header import BlockHeader, difficulty_target, target_to_bits
from ledger.core.pow.merkle import merkle_path, merkle_root
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import anchor_transaction, coinbase_transaction, op_return_script
from ledger.core.proof.bundle import Aggregation, ProofBundle, build_bundle
from ledger.core.proof.policy import TrustPolicy
from ledger.core.receipt import build_receipt

DOCUMENT = b"The quarterly report, final version.\n"
CHAIN_ID = chain_id_from_external_ids([b"notary:collection:v1", b"tests"])
#: The version-2 test collection: its secret key and its private chain.
COLLECTION_KEY = sha256(b"notary test collection key")
PRIVATE_CHAIN_ID = collection_first_entry(collection_identifier(COLLECTION_KEY)).chain_id
CONTRACT = bytes(range(20))
NETWORK_ID = 0xFA92E5A4
START_MIN = 28_333_333  # 2023-11-14

Private = Literal["document", "aggregated"]
OddBlock = Literal["anchor", "contract"]


@dataclass(frozen=True)
class Forged:
    """A bundle and the policy it was made for; for an aggregated bundle, the batch's
    leaves (commitments, in leaf order)."""

    bundle: ProofBundle
    policy: TrustPolicy
    document: bytes
    leaves: tuple[bytes, ...] = ()


def policy_of(params: PowParams, *, name: str = "test-chain") -> TrustPolicy:
    """The trust policy of a bundled-style chain of ``params`` (its work, confirmations)."""
    return TrustPolicy.from_pow_params(
        params, name=name, note="a test chain: not independent evidence"
    )


def commitment_of(document: bytes) -> tuple[bytes, bytes]:
    """(nonce, commitment) of ``document`` in the test collection."""
    digest = sha256(document)
    nonce = document_nonce(COLLECTION_KEY, digest)
    return nonce, document_commitment(digest, nonce)


def batch_leaves(document: bytes, *, size: int, index: int) -> list[bytes]:
    """A batch of ``size`` commitments with ``document``'s at ``index``."""
    leaves = [commitment_of(b"batch document %d" % i)[1] for i in range(size)]
    leaves[index] = commitment_of(document)[1]
    return leaves


def document_entry(document: bytes) -> Entry:
    digest = sha256(document).hex()
    ext_ids = (b"notary:document:v1", digest.encode(), str(len(document)).encode(), b"report.txt")
    return Entry(CHAIN_ID, ext_ids, b'{"path":"report.txt","v":1}')


def _dblocks(entry: Entry) -> tuple[list[DirectoryBlock], EntryBlock]:
    chain_id = entry.chain_id
    other = Entry(chain_id, (b"other",), b"another document")
    eblock = EntryBlock.build(
        chain_id=chain_id, height=1, entries=[(other.hash(), 0), (entry.hash(), 3)]
    )
    blocks: list[DirectoryBlock] = []
    for height in range(3):
        pairs = [(chain_id, eblock.key_mr())] if height == 1 else []
        blocks.append(
            DirectoryBlock.build(
                prev=blocks[-1] if blocks else None,
                network_id=NETWORK_ID,
                timestamp_min=START_MIN + 10 * height,
                admin_lookup_hash=sha256(b"admin %d" % height),
                ec_header_hash=sha256(b"ec %d" % height),
                fblock_key_mr=sha256(b"coin %d" % height),
                entry_blocks=pairs,
            )
        )
    return blocks, eblock


def _headers(root: bytes, *, count: int, bits: list[int]) -> list[bytes]:
    headers: list[bytes] = []
    prev = sha256d(b"the block before")
    for i in range(count):
        header = mine(
            BlockHeader(
                1, prev, root if i == 0 else sha256(b"%d" % i), 1_700_000_000 + i, bits[i], 0
            )
        )
        headers.append(header.marshal())
        prev = header.hash()
    return headers


def _tx_json(raw: bytes, txids: list[bytes], index: int) -> dict[str, object]:
    return {
        "transaction": raw.hex(),
        "txid": txids[index][::-1].hex(),
        "tx_index": index,
        "merkle_path": [h.hex() for h in merkle_path(txids, index)],
    }


@dataclass(frozen=True)
class _Published:
    """What the entry publishes, and what the bundle needs to prove it."""

    entry: Entry
    nonce: bytes | None = None
    aggregation: Aggregation | None = None
    leaves: tuple[bytes, ...] = ()


def _published(
    document: bytes, private: Private | None, batch_size: int, leaf_index: int
) -> _Published:
    if private is None:
        return _Published(document_entry(document))
    nonce, commitment = commitment_of(document)
    if private == "document":
        return _Published(commitment_entry(PRIVATE_CHAIN_ID, commitment), nonce)
    leaves = batch_leaves(document, size=batch_size, index=leaf_index)
    tree = AggregationTree(leaves)
    return _Published(
        batch_entry(PRIVATE_CHAIN_ID, tree.root, batch_size),
        nonce,
        Aggregation(leaf_index, batch_size, tree.audit_path(leaf_index)),
        tuple(leaves),
    )


def _anchor_block(
    anchored: bytes, contract: bytes, keymr0: bytes, odd: OddBlock | None
) -> tuple[list[bytes], int, int]:
    """The anchor block's transactions and the positions of the anchor and the contract.

    ``odd`` puts that one last in a block of five (an odd count: its last node is paired
    with itself, so a position one past it could be claimed)."""
    coinbase = coinbase_transaction(7).marshal()
    other = anchor_transaction([op_return_script(encode_anchor_payload(0, keymr0))]).marshal()
    filler = anchor_transaction([op_return_script(b"filler")]).marshal()
    if odd == "anchor":
        return [coinbase, other, contract, filler, anchored], 4, 2
    if odd == "contract":
        return [coinbase, other, anchored, filler, contract], 2, 4
    return [coinbase, other, anchored, contract], 2, 3


def forge_bundle(
    *,
    document: bytes = DOCUMENT,
    difficulty_bits: int = 16,
    headers: int = 3,
    anchored_height: int = 1,
    short_work_header: int | None = None,
    with_contract: bool = True,
    chain: str = "notary-devnet-pow",
    private: Private | None = None,
    batch_size: int = 5,
    leaf_index: int = 3,
    entry: Entry | None = None,
    last_in_odd_block: OddBlock | None = None,
) -> Forged:
    """A bundle for ``document`` (see the module docstring).

    Args:
        anchored_height: the height the anchor transaction names (1 is the true one).
        short_work_header: index of a header mined 8 bits easier than the policy.
        with_contract: include the window section.
        private: version 2, by a per-document entry or an aggregation tree of
            ``batch_size`` commitments with the document's at ``leaf_index``.
        entry: publish this entry instead (receipt, blocks and anchors made for it).
        last_in_odd_block: put the anchor or the contract transaction last in an anchor
            block of five transactions.
    """
    published = _published(document, private, batch_size, leaf_index)
    entry = entry or published.entry
    blocks, eblock = _dblocks(entry)
    receipt = build_receipt(entry.hash(), eblock, blocks[1])
    keymrs = [b.key_mr() for b in blocks]
    commitment = WindowCommitment(CONTRACT, 0, 2, window_root(keymrs))
    anchored = anchor_transaction(
        [op_return_script(encode_anchor_payload(anchored_height, keymrs[1]))]
    ).marshal()
    contract_tx = anchor_transaction([op_return_script(commitment.payload())]).marshal()
    txs, at_anchor, at_contract = _anchor_block(anchored, contract_tx, keymrs[0], last_in_odd_block)
    txids = [sha256d(raw) for raw in txs]
    params = PowParams(chain, difficulty_bits, headers)
    policy = policy_of(params)
    bits = [params.bits] * headers
    if short_work_header is not None:
        bits[short_work_header] = target_to_bits(difficulty_target(difficulty_bits - 8))
    raw_headers = _headers(merkle_root(txids), count=headers, bits=bits)
    contract = {
        "contractaddress": "0x" + CONTRACT.hex(),
        "dbheightmin": 0,
        "dbheightmax": 2,
        "windowmr": commitment.window_mr.hex(),
        "merklebranch": [n.to_json() for n in merkle_branch(keymrs, 1)],
        **_tx_json(txs[at_contract], txids, at_contract),
        "header_index": 0,
    }
    anchor = {
        "chain": chain,
        **_tx_json(txs[at_anchor], txids, at_anchor),
        "headers": [h.hex() for h in raw_headers],
    }
    bundle = build_bundle(
        document_sha256=sha256(document),
        entry=entry.marshal(),
        receipt=receipt,
        directory_block=blocks[1].marshal(),
        anchor_proof={"anchor": anchor, "contract": contract if with_contract else None},
        commitment_nonce=published.nonce,
        aggregation=published.aggregation,
    )
    return Forged(bundle, policy, document, published.leaves)
