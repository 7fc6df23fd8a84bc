"""The commit replay filter: Bloom filter, its snapshot file, and a restarted node using it.

A snapshot may only make start-up faster: whatever the file holds (nothing, garbage, the
snapshot of another store, an old one), a commit accepted before the restart is a repeated
commit (-32011) after it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ledger.core.clock import ManualClock
from ledger.core.commit import CommitEntry
from ledger.core.entry import Entry
from ledger.node import txfilter
from ledger.node.txfilter import SnapshotKey, TxidFilter, read_snapshot, write_snapshot
from tests.ledger.node.conftest import START_S, NodeHarness, make_settings, open_node

pytestmark = pytest.mark.anyio

REPEATED_COMMIT = -32011


def random_txids(count: int) -> list[bytes]:
    return [os.urandom(32) for _ in range(count)]


def test_added_txids_are_found_and_others_almost_never() -> None:
    bloom = TxidFilter(bits_log2=20)
    added = random_txids(2000)
    for txid in added:
        bloom.add(txid)
    assert all(bloom.might_contain(t) for t in added)
    false_positives = sum(bloom.might_contain(t) for t in random_txids(20_000))
    assert false_positives < 20  # about 0.2 expected at this load (k=4, 2**20 bits)


@pytest.mark.parametrize("bits_log2", [16, 24, 26])
def test_add_many_sets_exactly_the_bits_add_sets(
    monkeypatch: pytest.MonkeyPatch, bits_log2: int
) -> None:
    monkeypatch.setattr(txfilter, "_CHUNK", 700)  # several chunks
    monkeypatch.setattr(txfilter, "_VECTOR_MIN", 0)
    txids = random_txids(2500)
    one_by_one, at_once = TxidFilter(bits_log2=bits_log2), TxidFilter(bits_log2=bits_log2)
    for txid in txids:
        one_by_one.add(txid)
    at_once.add_many(txids)
    assert at_once.copy_bits() == one_by_one.copy_bits()
    assert at_once.count == one_by_one.count == 2500


def test_a_snapshot_round_trips_and_a_damaged_one_is_ignored(tmp_path: Path) -> None:
    bloom = TxidFilter(bits_log2=18)
    bloom.add_many(random_txids(100))
    key = SnapshotKey(42, os.urandom(32), os.urandom(32))
    path = tmp_path / "node.txfilter"
    write_snapshot(path, bloom.copy_bits(), count=bloom.count, bits_log2=18, key=key)
    restored = read_snapshot(path, bits_log2=18)
    assert restored is not None
    assert restored[0].copy_bits() == bloom.copy_bits() and restored[0].count == 100
    assert restored[1] == key
    assert read_snapshot(path, bits_log2=19) is None  # another filter size
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert read_snapshot(path, bits_log2=18) is None  # the digest no longer matches
    path.write_bytes(bytes(data[:-1]))
    assert read_snapshot(path, bits_log2=18) is None  # torn
    assert read_snapshot(tmp_path / "missing", bits_log2=18) is None


# -- a restarted node ---------------------------------------------------------------------


async def commit(node: NodeHarness, chain_id: bytes, content: bytes) -> CommitEntry:
    return await node.publish(Entry(chain_id, (b"filter",), content))


async def assert_all_repeated(node: NodeHarness, commits: list[CommitEntry]) -> None:
    for message in commits:
        error = await node.error("commit-entry", {"message": message.marshal().hex()})
        assert error["code"] == REPEATED_COMMIT


async def build_history(tmp_path: Path, clock: ManualClock) -> tuple[list[CommitEntry], Path]:
    """Commits in saved blocks before and after a snapshot; returns them and the snapshot."""
    settings = make_settings(tmp_path)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"filter", os.urandom(8)])
        before = [await commit(node, chain.chain_id, b"a%d" % i) for i in range(3)]
        await node.next_block()
        await node.service.save_commit_filter()
        after = [await commit(node, chain.chain_id, b"b%d" % i) for i in range(2)]
        await node.next_block()
        path = node.service.commit_filter_path
    return before + after, path


async def test_a_restart_reads_the_snapshot_and_only_the_commits_after_it(tmp_path: Path) -> None:
    clock = ManualClock(START_S)
    commits, path = await build_history(tmp_path, clock)
    assert path.exists()
    async with open_node(make_settings(tmp_path), clock) as node:
        assert node.service.filter_load.source == "snapshot"
        assert node.service.filter_load.commits_read == 2
        await assert_all_repeated(node, commits)


@pytest.mark.parametrize("damage", ["garbage", "missing", "other-store"])
async def test_an_unusable_snapshot_means_a_full_rebuild(tmp_path: Path, damage: str) -> None:
    clock = ManualClock(START_S)
    commits, path = await build_history(tmp_path / "a", clock)
    if damage == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif damage == "missing":
        path.unlink()
    else:  # the snapshot of another node (another genesis), with the same journal length
        _other, other_path = await build_history(tmp_path / "b", clock)
        shutil.copyfile(other_path, path)
    async with open_node(make_settings(tmp_path / "a"), clock) as node:
        assert node.service.filter_load.source == "journal"
        assert node.service.filter_load.commits_read == len(commits) + 1  # + the chain's
        await assert_all_repeated(node, commits)


async def test_a_snapshot_newer_than_the_store_is_not_used(tmp_path: Path) -> None:
    """A store restored from a backup older than the snapshot: the row the snapshot ends
    at is gone, so the snapshot is not trusted."""
    clock = ManualClock(START_S)
    settings = make_settings(tmp_path)
    async with open_node(settings, clock) as node:
        chain = await node.publish_chain([b"backup"])
        first = await commit(node, chain.chain_id, b"in the backup")
        await node.next_block()
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(settings.db_path, backup)
    async with open_node(settings, clock) as node:
        await commit(node, chain.chain_id, b"after the backup")
        await node.next_block()
        await node.service.save_commit_filter()
    settings.db_path.unlink()
    shutil.copyfile(backup, settings.db_path)
    async with open_node(settings, clock) as node:
        assert node.service.filter_load.source == "journal"
        await assert_all_repeated(node, [first])
