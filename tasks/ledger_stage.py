"""The ``ledger`` stage sweep: find receipts for published entries, verify, record.

Plain functions (no Prefect). One sweep handles every row waiting for ``ledger``, page by
page: a page's receipts are built from the entry blocks read so far, reading the next
blocks as needed (``tasks.block_index``: one ``raw-data`` per entry block, checked against
the directory block); the entries those blocks do not hold are asked of the node as
receipts in batched JSON-RPC requests and verified locally (``tasks.verify``) against each
directory block named, fetched and parsed once. The receipts and the stage change are
written in one transaction. The next page is looked up while this one is verified and
stored (the node and this process work at the same time). Rows whose entry is not in a
block yet stay pending for the next sweep.

``follow_ledger`` waits inside one call: it sweeps again each time the node reports a new
directory block (polling the cheap ``heights`` call), so the last entries are recorded
within a poll interval of their block, not after an exponential back-off; a sweep, which
asks the node for the receipt of every waiting entry, runs only when a block can have
added receipts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from connectors.audit import AuditStore, ReceiptRecord
from connectors.node import NodeClient
from ledger.core.clock import Clock, SystemClock
from ledger.core.proof.steps import Step
from ledger.core.receipt import NodeMemo
from tasks.block_index import BlockIndex
from tasks.verify import ReceiptRejected, TrustedDirectoryBlock, verify_node_receipt

Receipts = dict[str, dict[str, Any] | None]


@dataclass
class SweepOutcome:
    """What one sweep did: rows moved to ``ledger``, still waiting, receipts rejected."""

    recorded: int = 0
    waiting: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def then(self, later: SweepOutcome) -> None:
        """Add a later sweep: its counts add up, its ``waiting`` replaces this one's."""
        self.recorded += later.recorded
        self.rejected += later.rejected
        self.waiting = later.waiting
        self.errors.extend(later.errors[: max(0, 20 - len(self.errors))])


def follow_ledger(
    store: AuditStore,
    node: NodeClient,
    *,
    collection: str | None = None,
    until: float | None = None,
    poll_s: float = 0.25,
    clock: Clock | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> SweepOutcome:
    """Sweep, then sweep again at each new directory block while entries wait, until the
    clock reads ``until`` (``None`` or a past time: one sweep, as ``sweep_ledger``).

    Args:
        until: when to stop following blocks, Unix time in seconds (``clock``'s time).
        poll_s: pause between two ``heights`` calls while no block comes, seconds (> 0).
        clock, sleep: time source and pause (injected by tests).

    Returns:
        recorded and rejected summed over the sweeps; ``waiting`` as of the last sweep.

    Raises:
        ValueError: ``poll_s`` <= 0.
        ConnectorError: the node could not be reached.
    """
    if poll_s <= 0:
        raise ValueError(f"poll_s must be > 0, got {poll_s}")
    clock = clock or SystemClock()
    deadline = clock.now() if until is None else until
    # Read before sweeping: a block made during the sweep then triggers the next one.
    height = newest_height(node) if clock.now() < deadline else None
    # One index for every sweep: blocks read by one are not read again by the next.
    index = BlockIndex(node)
    total = sweep_ledger(store, node, collection=collection, index=index)
    while total.waiting and clock.now() < deadline:
        newest = newest_height(node)
        if newest == height:
            sleep(min(poll_s, max(0.0, deadline - clock.now())))
            continue
        height = newest
        total.then(sweep_ledger(store, node, collection=collection, index=index))
    return total


def newest_height(node: NodeClient) -> int:
    """The height of the newest directory block the node has (its ``heights`` call)."""
    return int(node.heights()["directoryblockheight"])


def sweep_ledger(
    store: AuditStore,
    node: NodeClient,
    *,
    collection: str | None = None,
    batch_size: int = 250,
    index: BlockIndex | None = None,
    after_id: int = 0,
    ask_node: bool = True,
) -> SweepOutcome:
    """Move every published entry that a directory block records to ``ledger``.

    Args:
        store: the audit store.
        node: the node client (called from this thread and one helper thread).
        collection: only this collection's rows (``None``: all).
        batch_size: rows per page (one audit store query, one write, at most
            ``batch_size`` receipts asked from the node). Two pages are in memory at once (one being
            verified, the next being fetched) at about 20 KB per receipt (response, parsed
            JSON, verified records): 250 keeps that near 10 MB; 1,000 raised the
            pipeline's peak RSS by ~40 MB, at the same sweep speed.
        index: the blocks earlier sweeps read (``follow_ledger``); default: a new one.
        after_id: only rows with a greater notarization id.
        ask_node: False: receipts are only built from the blocks ``index`` reads (it must
            know the chain: ``BlockIndex.follow``), never asked of the node, and the sweep
            stops at the first page none of whose entries is in a block (rows go by id,
            entries into blocks in about that order). This is the cheap sweep a run makes
            while it still publishes (``tasks.ledger_follow``): most waiting entries are
            not in a block yet, and asking the node for each one's receipt would load the
            node that is writing them. What it leaves is found by a full sweep.

    Raises:
        ConnectorError: the node could not be reached (the caller retries the sweep).
    """
    outcome = SweepOutcome()
    if index is None:
        index = BlockIndex(node)
    index.forget_missing()

    def page(after_id: int) -> list[tuple[int, str | None]]:
        return store.notarizations.pending_entries(
            stage_from="published",
            stage_below="ledger",
            collection=collection,
            limit=batch_size,
            after_id=after_id,
        )

    def fetch(rows: list[tuple[int, str | None]]) -> Future[_Found]:
        return fetcher.submit(_find, index, node, [h for _, h in rows if h], ask_node)

    # A blocks-only sweep has few node calls to overlap: no thread (and its memory arena).
    workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="receipts") if ask_node else None
    with workers or nullcontext(_Inline()) as fetcher:
        rows = page(after_id)
        pending = fetch(rows) if rows else None
        while rows and pending is not None:
            found = pending.result()
            if not ask_node and not found.built:
                # blocks only: later rows' entries are later in the blocks, if at all
                outcome.waiting += len(rows)
                break
            following = page(rows[-1][0])
            ahead = fetch(following) if following else None
            ids_by_hash = {h: row_id for row_id, h in rows if h}
            _sweep_batch(store, ids_by_hash, found, outcome)
            rows, pending = following, ahead
    return outcome


class _Inline:
    """The ``submit`` of an executor that runs the call at once, in this thread."""

    def submit(self, fn: Callable[..., _Found], /, *args: Any) -> Future[_Found]:
        done: Future[_Found] = Future()
        try:
            done.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001 - raised by result(), as a thread's would be
            done.set_exception(exc)
        return done


@dataclass
class _Found:
    """A page's receipts: ``built`` from checked blocks (``BlockIndex``), ``asked`` from the
    node (``None``: not in a block yet) with the directory blocks they name."""

    built: dict[str, dict[str, Any]]
    asked: Receipts
    dblocks: dict[int, TrustedDirectoryBlock | str | None]


def _find(index: BlockIndex, node: NodeClient, entry_hashes: list[str], ask_node: bool) -> _Found:
    """Receipts of a page: built from the blocks read (reading on as needed), the rest
    asked of the node (unless ``ask_node`` is False); each receipt the node gives teaches
    the index its chain and block. Runs in the sweep's fetching thread (the only user of
    ``index``)."""
    built = index.receipts(entry_hashes)
    rest = [h for h in entry_hashes if h not in built] if ask_node else []
    asked = node.receipts(rest) if rest else {}
    dblocks: dict[int, TrustedDirectoryBlock | str | None] = {}
    for receipt in asked.values():
        if receipt is None:
            continue
        index.learn(receipt)
        height = _height_of(receipt)
        if height >= 0 and height not in dblocks:
            dblocks[height] = index.trusted(height)
    return _Found(built=built, asked=asked, dblocks=dblocks)


def _sweep_batch(
    store: AuditStore,
    ids_by_hash: dict[str, int],
    found: _Found,
    outcome: SweepOutcome,
) -> None:
    asked = {h: r for h, r in found.asked.items() if r is not None}
    now = datetime.now(UTC)
    # Built from entry blocks whose KeyMR the trusted directory block lists: proven by
    # construction (tasks.block_index), not walked again.
    verified = [ReceiptRecord.from_node(r, verified_at=now) for r in found.built.values()]
    rejected: dict[int, str] = {}
    waiting = len(ids_by_hash) - len(found.built) - len(asked)
    nodes: NodeMemo = {}  # the page's receipts share most of their branch nodes
    for entry_hash, receipt in asked.items():
        height = _height_of(receipt)
        trusted = found.dblocks.get(height)
        if height < 0:
            why = ReceiptRejected("malformed receipt: directoryblockheight", step=Step.FORMAT)
            rejected[ids_by_hash[entry_hash]] = f"receipt rejected: {why}"
            continue
        if trusted is None:  # names no block the node serves (yet): asked again later
            waiting += 1
            continue
        if isinstance(trusted, str):
            rejected[ids_by_hash[entry_hash]] = f"receipt rejected: {trusted}"
            continue
        try:
            verify_node_receipt(receipt, entry_hash=entry_hash, dblock=trusted, nodes=nodes)
        except ReceiptRejected as exc:
            rejected[ids_by_hash[entry_hash]] = f"receipt rejected: {exc}"
            continue
        verified.append(ReceiptRecord.from_node(receipt, verified_at=now))
    outcome.waiting += waiting
    if verified:
        # One transaction: a row never reaches ``ledger`` without its receipt (no sweep
        # looks at it again), and a run killed before the commit leaves the rows below
        # ``ledger`` for the next sweep.
        store.proofs.record_receipts(verified)
    if rejected:
        store.notarizations.mark_failed(rejected, retryable=False)
    outcome.recorded += len(verified)
    outcome.rejected += len(rejected)
    outcome.errors.extend(list(rejected.values())[:5])


def _height_of(receipt: dict[str, Any]) -> int:
    """The receipt's ``directoryblockheight`` (absent: 0, as ``Receipt.from_json`` reads
    it), -1 when it is not a non-negative integer."""
    height = receipt.get("directoryblockheight", 0)
    return height if type(height) is int and height >= 0 else -1
