"""Receipt verification throughput on one core (pure hashing; goal 20,000 receipts/s).

Usage: ``python -m bench.receipts [--receipts 20000]``. Builds realistic receipts (entry
blocks of 1,000 entries in a directory block of 200 chains) and verifies them with the
pipeline's verifier. Baseline in the same run: the SHA-256 calls alone (the floor).
"""

from __future__ import annotations

import argparse
import hashlib
import os

from bench.common import Figure, print_table, stopwatch, write_results
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.receipt import Receipt, build_receipt, verify_receipt


def build(count: int) -> tuple[list[Receipt], DirectoryBlock]:
    chains = [os.urandom(32) for _ in range(200)]
    hashes = [os.urandom(32) for _ in range(1000)]
    eblock = EntryBlock.build(
        chain_id=chains[0], height=10, entries=[(h, i // 100) for i, h in enumerate(hashes)]
    )
    pairs = [(chains[0], eblock.key_mr())] + [(c, os.urandom(32)) for c in chains[1:]]
    dblock = DirectoryBlock.build(
        prev=None,
        network_id=0xFA92E5A4,
        timestamp_min=29_000_000,
        admin_lookup_hash=os.urandom(32),
        ec_header_hash=os.urandom(32),
        fblock_key_mr=os.urandom(32),
        entry_blocks=pairs,
    )
    receipts = [
        Receipt.from_json(build_receipt(hashes[i % len(hashes)], eblock, dblock).to_json())
        for i in range(count)
    ]
    return receipts, dblock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--receipts", type=int, default=20_000)
    args = parser.parse_args()
    receipts, dblock = build(args.receipts)
    trusted = dblock.key_mr()
    with stopwatch() as elapsed:
        for receipt in receipts:
            verify_receipt(receipt, trusted_directory_block_keymr=trusted)
    ours = len(receipts) / elapsed()
    steps = sum(len(r.merkle_branch) for r in receipts)
    data = bytes(64)
    with stopwatch() as floor:
        for _ in range(steps):
            hashlib.sha256(data).digest()
    figures = [
        Figure(
            "receipts verified",
            ours,
            "receipts/s",
            len(receipts) / floor(),
            "sha256 floor",
            goal=20_000,
        )
    ]
    print_table("Receipt verification (one core)", figures)
    print(write_results("receipts", figures))


if __name__ == "__main__":
    main()
