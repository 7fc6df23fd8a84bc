"""Deterministic, fully consistent proof bundles built in memory (no services), and forgeries.

``forge_bundle()`` builds three directory blocks (heights 0..2, the document's entry in
height 1), a receipt, an anchor block holding a coinbase, another anchor, the anchor of
height 1 and the window commitment over heights 0..2, and ``headers`` mined headers. The
keyword arguments produce internally consistent forgeries (every hash and every proof of
work recomputed) that only one verification step can catch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.anchor.chain import mine
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload, window_root
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry, chain_id_from_external_ids
from ledger.core.hashing import sha256, sha256d
from ledger.core.merkle import merkle_branch
from ledger.core.pow.header import BlockHeader, difficulty_target, target_to_bits
from ledger.core.pow.merkle import merkle_path, merkle_root
from ledger.core.pow.params import PowParams
from ledger.core.pow.tx import anchor_transaction, coinbase_transaction, op_return_script
from ledger.core.proof.bundle import ProofBundle, build_bundle
from ledger.core.receipt import build_receipt

DOCUMENT = b"The quarterly report, final version.\n"
CHAIN_ID = chain_id_from_external_ids([b"notary:collection:v1", b"tests"])
CONTRACT = bytes(range(20))
NETWORK_ID = 0xFA92E5A4
START_MIN = 28_333_333  # 2023-11-14


@dataclass(frozen=True)
class Forged:
    """A bundle and the policy it was made for."""

    bundle: ProofBundle
    policy: PowParams
    document: bytes


def document_entry(document: bytes) -> Entry:
    digest = sha256(document).hex()
    ext_ids = (b"notary:document:v1", digest.encode(), str(len(document)).encode(), b"report.txt")
    return Entry(CHAIN_ID, ext_ids, b'{"path":"report.txt","v":1}')


def _dblocks(entry: Entry) -> tuple[list[DirectoryBlock], EntryBlock]:
    other = Entry(CHAIN_ID, (b"other",), b"another document")
    eblock = EntryBlock.build(
        chain_id=CHAIN_ID, height=1, entries=[(other.hash(), 0), (entry.hash(), 3)]
    )
    blocks: list[DirectoryBlock] = []
    for height in range(3):
        pairs = [(CHAIN_ID, eblock.key_mr())] if height == 1 else []
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


def forge_bundle(
    *,
    document: bytes = DOCUMENT,
    difficulty_bits: int = 16,
    headers: int = 3,
    anchored_height: int = 1,
    short_work_header: int | None = None,
    with_contract: bool = True,
    chain: str = "notary-devnet-pow",
) -> Forged:
    """A bundle for ``document`` (see the module docstring).

    Args:
        anchored_height: the height the anchor transaction names (1 is the true one).
        short_work_header: index of a header mined 8 bits easier than the policy.
        with_contract: include the window section.
    """
    entry = document_entry(document)
    blocks, eblock = _dblocks(entry)
    receipt = build_receipt(entry.hash(), eblock, blocks[1])
    keymrs = [b.key_mr() for b in blocks]
    commitment = WindowCommitment(CONTRACT, 0, 2, window_root(keymrs))
    txs = [
        coinbase_transaction(7).marshal(),
        anchor_transaction([op_return_script(encode_anchor_payload(0, keymrs[0]))]).marshal(),
        anchor_transaction(
            [op_return_script(encode_anchor_payload(anchored_height, keymrs[1]))]
        ).marshal(),
        anchor_transaction([op_return_script(commitment.payload())]).marshal(),
    ]
    txids = [sha256d(raw) for raw in txs]
    policy = PowParams(chain, difficulty_bits, headers)
    bits = [policy.bits] * headers
    if short_work_header is not None:
        bits[short_work_header] = target_to_bits(difficulty_target(difficulty_bits - 8))
    raw_headers = _headers(merkle_root(txids), count=headers, bits=bits)
    contract = {
        "contractaddress": "0x" + CONTRACT.hex(),
        "dbheightmin": 0,
        "dbheightmax": 2,
        "windowmr": commitment.window_mr.hex(),
        "merklebranch": [n.to_json() for n in merkle_branch(keymrs, 1)],
        **_tx_json(txs[3], txids, 3),
        "header_index": 0,
    }
    anchor = {
        "chain": chain,
        **_tx_json(txs[2], txids, 2),
        "headers": [h.hex() for h in raw_headers],
    }
    bundle = build_bundle(
        document_sha256=sha256(document),
        entry=entry.marshal(),
        receipt=receipt,
        directory_block=blocks[1].marshal(),
        anchor_proof={"anchor": anchor, "contract": contract if with_contract else None},
    )
    return Forged(bundle, policy, document)
