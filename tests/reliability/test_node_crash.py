"""Kill the node with SIGKILL under load, restart it, repeat; nothing acknowledged is lost.

The node runs as a real subprocess (``python -m ledger.node``, ``NOTARY_NODE_*`` env, short
block time). Concurrent clients send commit + reveal pairs (single calls and JSON-RPC
batches) and a few coin transactions, remembering every message the node acknowledged.
After the last restart and a few blocks, the test checks:

1. every acknowledged commit, reveal and coin transaction is recorded in a saved block;
2. nothing appears twice: each entry hash, commit txid and transaction txid is recorded once;
3. heights are contiguous from 0 and every directory block links to the previous one
   (previous KeyMR and full hash), as do the entry blocks of each chain.

The default run is short; ``-m slow`` runs the long loop.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.core.addresses import (
    rcd_hash,
    rcd_hash_from_fct_address,
    seed_from_ec_secret,
    seed_from_fct_secret,
)
from ledger.core.blocks.coin import FactoidBlock
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.blocks.entry_credit import EntryCreditBlock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from ledger.node.settings import NodeSettings
from tests.harness.ports import free_port
from tests.harness.services import NodeProcess
from tests.harness.waiting import wait_until

EC_KEY = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
FCT_KEY = SigningKey.from_seed(seed_from_fct_secret(devnet.DEV_FCT_SECRET))
DEV_RCD = rcd_hash_from_fct_address(devnet.DEV_FCT_ADDRESS)
RATE = 1000
BLOCK_TIME_S = 0.5


def _req(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


@dataclass
class Acked:
    """What the node acknowledged (raw 32-byte keys)."""

    commits: set[bytes] = field(default_factory=set)
    entries: set[bytes] = field(default_factory=set)
    txs: set[bytes] = field(default_factory=set)


class Stop(Exception):
    """The node went away (killed): end this round."""


async def _post(client: httpx.AsyncClient, url: str, body: Any) -> Any:
    try:
        response = await client.post(url, json=body)
    except httpx.HTTPError as exc:
        raise Stop from exc
    data = response.json()
    return data


def _ok(reply: Any) -> bool:
    return isinstance(reply, dict) and "result" in reply


async def client_loop(
    url: str, chain_id: bytes, tag: str, acked: Acked, rng: random.Random
) -> None:
    counter = 0
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            counter += 1
            roll = rng.random()
            if roll < 0.1:
                await send_transaction(client, url, acked, rng)
                continue
            pairs = []
            for _ in range(rng.choice([1, 1, 4, 16]) if roll < 0.6 else 1):
                entry = Entry(chain_id, (tag.encode(),), f"{counter}:{rng.random()}".encode())
                commit = CommitEntry.create(EC_KEY, entry, timestamp_ms=int(time.time() * 1000))
                pairs.append((entry, commit))
                counter += 1
            if len(pairs) == 1 and roll >= 0.3:  # single calls: the reveal after its commit
                entry, commit = pairs[0]
                if _ok(
                    await _post(
                        client, url, _req("commit-entry", {"message": commit.marshal().hex()})
                    )
                ):
                    acked.commits.add(commit.txid())
                    if _ok(
                        await _post(
                            client, url, _req("reveal-entry", {"entry": entry.marshal().hex()})
                        )
                    ):
                        acked.entries.add(entry.hash())
                continue
            batch = []
            for i, (entry, commit) in enumerate(pairs):
                batch.append(_req("commit-entry", {"message": commit.marshal().hex()}, 2 * i))
                batch.append(_req("reveal-entry", {"entry": entry.marshal().hex()}, 2 * i + 1))
            replies = {r["id"]: r for r in await _post(client, url, batch)}
            for i, (entry, commit) in enumerate(pairs):
                if _ok(replies.get(2 * i)):
                    acked.commits.add(commit.txid())
                if _ok(replies.get(2 * i + 1)):
                    acked.entries.add(entry.hash())


async def send_transaction(
    client: httpx.AsyncClient, url: str, acked: Acked, rng: random.Random
) -> None:
    target = rcd_hash(SigningKey.from_seed(rng.randbytes(32)).public_key)
    amount = rng.randrange(1, 10**6)
    ts = int(time.time() * 1000)
    draft = Transaction(ts, (TxAddress(amount, DEV_RCD),), (TxAddress(amount, target),))
    fee = draft.fee(RATE)
    tx = Transaction(ts, (TxAddress(amount + fee, DEV_RCD),), (TxAddress(amount, target),))
    tx = tx.sign([FCT_KEY])
    reply = await _post(client, url, _req("coin-submit", {"transaction": tx.marshal().hex()}))
    if _ok(reply):
        acked.txs.add(tx.txid())


async def load_round(
    node: NodeProcess, chains: list[bytes], acked: Acked, *, seconds: float, seed: int
) -> None:
    """Run the clients for ``seconds``, then SIGKILL the node while they are busy."""
    rng = random.Random(seed)
    tasks = [
        asyncio.create_task(
            client_loop(node.url, chain, f"c{i}", acked, random.Random(rng.random()))
        )
        for i, chain in enumerate(chains)
    ]
    await asyncio.sleep(seconds)
    node.kill()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        assert isinstance(result, Stop), result


async def create_chains(url: str, count: int, tag: str) -> list[bytes]:
    chains = []
    async with httpx.AsyncClient(timeout=10) as client:
        for i in range(count):
            first = Entry.first_entry([b"crash test", tag.encode(), bytes([i])], b"")
            commit = CommitChain.create(EC_KEY, first, timestamp_ms=int(time.time() * 1000))
            batch = [
                _req("commit-chain", {"message": commit.marshal().hex()}, 1),
                _req("reveal-chain", {"entry": first.marshal().hex()}, 2),
            ]
            replies = await _post(client, url, batch)
            assert all(_ok(r) for r in replies), replies
            chains.append(first.chain_id)
    return chains


def rpc(node: NodeProcess, method: str, params: dict[str, Any] | None = None) -> Any:
    reply = httpx.post(node.url, json=_req(method, params), timeout=10).json()
    assert "result" in reply, reply
    return reply["result"]


def wait_for_blocks(node: NodeProcess, count: int) -> int:
    start = rpc(node, "heights")["directoryblockheight"]

    def new_height() -> int | None:
        height = int(rpc(node, "heights")["directoryblockheight"])
        return height if height >= start + count else None

    return wait_until(new_height, 30, 0.1, what=f"{count} more blocks (the node stopped?)")


def recorded(node: NodeProcess, tip: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Entry hashes, commit txids and transaction txids of every saved block, with repeats;
    checks the height and link rules on the way."""
    entries: list[bytes] = []
    commits: list[bytes] = []
    txs: list[bytes] = []
    prev: DirectoryBlock | None = None
    chain_heads: dict[bytes, EntryBlock] = {}
    for height in range(tip + 1):
        dblock = DirectoryBlock.unmarshal(
            bytes.fromhex(rpc(node, "dblock-by-height", {"height": height})["rawdata"])
        )
        assert dblock.height == height
        if prev is not None:
            assert dblock.prev_key_mr == prev.key_mr()
            assert dblock.prev_full_hash == prev.full_hash()
            assert dblock.timestamp_min >= prev.timestamp_min
        prev = dblock
        ec_raw = rpc(node, "ecblock-by-height", {"height": height})["rawdata"]
        ecblock = EntryCreditBlock.unmarshal(bytes.fromhex(ec_raw))
        commits += [o.txid() for o in ecblock.objects if isinstance(o, CommitEntry | CommitChain)]
        fblock = FactoidBlock.unmarshal(
            bytes.fromhex(rpc(node, "fblock-by-height", {"height": height})["rawdata"])
        )
        txs += [t.txid() for t in fblock.transactions[1:]]
        for item in dblock.entries[3:]:
            raw = bytes.fromhex(rpc(node, "raw-data", {"hash": item.key_mr.hex()})["data"])
            eblock = EntryBlock.unmarshal(raw)
            last = chain_heads.get(eblock.chain_id)
            if last is None:
                assert eblock.sequence == 0
            else:
                assert eblock.prev_key_mr == last.key_mr() and eblock.sequence == last.sequence + 1
            chain_heads[eblock.chain_id] = eblock
            entries += eblock.entry_hashes()
    return entries, commits, txs


def run_crash_loop(tmp_path: Path, *, rounds: int, clients: int, seed: int) -> None:
    node = NodeProcess(
        NodeSettings(
            data_dir=tmp_path / "node",
            port=free_port(),
            block_time_s=BLOCK_TIME_S,
            sqlite_synchronous="FULL",
        )
    )
    rng = random.Random(seed)
    acked = Acked()
    node.start()
    try:
        chains = asyncio.run(create_chains(node.url, clients, str(seed)))
        for _round in range(rounds):
            if not node.alive:
                node.start()
            asyncio.run(
                load_round(node, chains, acked, seconds=rng.uniform(0.3, 1.2), seed=rng.random())
            )
        node.start()
        tip = wait_for_blocks(node, 3)
        entries, commits, txs = recorded(node, tip)
    finally:
        node.stop()
    assert len(entries) == len(set(entries)), "an entry was recorded twice"
    assert len(commits) == len(set(commits)), "a commit was recorded twice"
    assert len(txs) == len(set(txs)), "a transaction was recorded twice"
    assert acked.entries and acked.commits
    assert acked.entries <= set(entries), (
        f"{len(acked.entries - set(entries))} acknowledged entries lost"
    )
    assert acked.commits <= set(commits), (
        f"{len(acked.commits - set(commits))} acknowledged commits lost"
    )
    assert acked.txs <= set(txs), f"{len(acked.txs - set(txs))} acknowledged transactions lost"


def test_sigkill_under_load_loses_nothing(tmp_path: Path) -> None:
    run_crash_loop(tmp_path, rounds=4, clients=4, seed=1)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkill_under_load_loses_nothing_long(tmp_path: Path) -> None:
    run_crash_loop(tmp_path, rounds=40, clients=8, seed=2)
