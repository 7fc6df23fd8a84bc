"""End to end: the publishing API's callbacks wake ``notary collect --listen``'s collector.

The bundled stack allows loopback callback URLs (``callback_allowed_hosts``). Entries are
published with the receiver's URL; the API posts signed ``ledger`` callbacks; the collector,
whose tick is far longer than the test, must sweep at once and verify the receipts.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from connectors.audit import AuditStore
from connectors.callback_receiver import CALLBACK_EVENT, callback_url_for
from connectors.node import NodeClient
from flows.collect_proofs import CollectTotals, collect_until_stopped, receive_callbacks
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger.api.outbox.callbacks import callback_target
from ledger.core.callback_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_callback
from ledger.stack import Stack
from tests.harness.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


class BlockTimes:
    """When each directory block height was first seen at the node (polled every 20 ms)."""

    def __init__(self, node_url: str) -> None:
        self.seen: dict[int, float] = {}
        self._node = NodeClient(node_url, timeout_s=5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            height = int(self._node.heights()["directoryblockheight"])
            now = time.time()
            for h in range(max(0, height - 5), height + 1):
                self.seen.setdefault(h, now)
            self._stop.wait(0.02)

    def __enter__(self) -> BlockTimes:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._node.close()


@contextmanager
def collector(settings: PipelineSettings, collection: str) -> Iterator[CollectTotals]:
    """The receiver (when callbacks are on) and the sweep loop in a thread."""
    stop, wake = threading.Event(), threading.Event()
    totals = CollectTotals()

    def run() -> None:
        result = collect_until_stopped(settings, collection, stop=stop, wake=wake)
        vars(totals).update(vars(result))

    with receive_callbacks(settings, lambda _event: wake.set()):
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield totals
        finally:
            stop.set()
            thread.join(60)


def wait_for_ledger(store: AuditStore, collection: str, count: int, timeout_s: float) -> None:
    """Until ``count`` notarizations are at ``ledger`` or past it (``anchor``)."""
    counts: dict[str, int] = {}

    def recorded() -> bool:
        counts.clear()
        counts.update(store.runs.summary(collection))
        return counts.get("ledger", 0) + counts.get("anchor", 0) >= count

    wait_until(recorded, timeout_s, what=lambda: f"{count} at ledger; stages: {counts}")


def make_folder(root: Path, count: int, tag: str) -> Path:
    for i in range(count):
        (root / f"{tag}-{i}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / f"{tag}-{i}.txt").write_text(f"{tag} document {i}\n")
    return root


def callback_settings(
    base: PipelineSettings, stack: Stack, *, enabled: bool, tick_s: float
) -> PipelineSettings:
    stack.write_callback_secret()
    return base.model_copy(
        update={
            "callback_enabled": enabled,
            "callback_port": stack.settings.collector_port,
            "collect_first_interval_s": tick_s,
            "collect_interval_s": tick_s,
        }
    )


def latencies(store: AuditStore, collection: str, blocks: BlockTimes) -> list[float]:
    """Seconds from each entry's directory block appearing to its ``ledger`` stage."""
    rows = [p.notarization for p in store.proofs.records(collection=collection)]
    return [
        _ts(r.ledger_at) - blocks.seen[r.dblock_height]
        for r in rows
        if r.ledger_at is not None and r.dblock_height is not None
    ]


def _ts(value: datetime) -> float:
    return value.timestamp()


def test_callbacks_wake_the_collector_and_forged_ones_are_refused(
    tmp_path: Path, stack: Stack, pipeline_settings: PipelineSettings
) -> None:
    # The tick (5 minutes) is far longer than the test: only callbacks can wake the sweep.
    settings = callback_settings(pipeline_settings, stack, enabled=True, tick_s=300)
    folder = make_folder(tmp_path / "docs", 6, "cb")
    store = AuditStore(settings.audit_url)
    with BlockTimes(settings.node_url) as blocks, collector(settings, "cb") as totals:
        time.sleep(1.0)  # the collector's first sweep finds nothing and starts its long pause
        summary = notarize_folder(str(folder), "cb", settings, False)
        assert summary["published"] == 6 and summary["documents_in_ledger"] == 0
        wait_for_ledger(store, "cb", 6, timeout_s=60)

        proofs = store.proofs.records(collection="cb")
        target = proofs[0].notarization.entry_hash
        assert target is not None
        forged_block = "0" * 64
        url = callback_target(
            callback_url_for(settings.callback_url, target),
            {"anchor_block_hash": forged_block, "stage": "anchor"},
        )
        stamp = int(time.time())
        signature = sign_callback(b"not the secret", timestamp=stamp, url=url, body=b"{}")
        headers = {TIMESTAMP_HEADER: str(stamp), SIGNATURE_HEADER: signature}
        assert httpx.post(url, content=b"{}", headers=headers).status_code == 401
        events = store.notarizations.stage_events(p.notarization.id for p in proofs)

    assert totals.woken_by_callback >= 1
    assert all(p.receipt is not None for p in proofs), "the sweep verified every receipt"
    announced = [
        e.details or {} for evts in events.values() for e in evts if e.stage == CALLBACK_EVENT
    ]
    ledger_calls = [d for d in announced if d["stage"] == "ledger"]
    assert ledger_calls, "at least the first ledger callback arrived before the sweep"
    assert all(d["verified"] is False for d in announced)
    assert all(d.get("anchor_block_hash") != forged_block for d in announced)
    worst = max(latencies(store, "cb", blocks))
    assert worst < 30, f"block to ledger took {worst:.1f} s although the tick is 300 s"


@pytest.mark.slow
@pytest.mark.parametrize("callbacks", [False, True], ids=["tick-only", "callbacks"])
def test_measure_block_to_ledger_latency(
    tmp_path: Path,
    stack: Stack,
    pipeline_settings: PipelineSettings,
    callbacks: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Block -> ``ledger`` recorded, 3 rounds of 10 documents, collector tick 10 s."""
    settings = callback_settings(pipeline_settings, stack, enabled=callbacks, tick_s=10)
    store = AuditStore(settings.audit_url)
    rounds = 3
    with BlockTimes(settings.node_url) as blocks, collector(settings, "m") as totals:
        for i in range(rounds):
            folder = make_folder(tmp_path / f"round{i}", 10, f"r{i}")
            notarize_folder(str(folder), "m", settings, False)
            wait_for_ledger(store, "m", 10 * (i + 1), timeout_s=60)
        values = latencies(store, "m", blocks)
    with capsys.disabled():
        print(
            f"\nblock -> ledger ({'callbacks' if callbacks else 'tick only'}, tick 10 s, "
            f"{len(values)} entries): mean {statistics.mean(values):.2f} s, "
            f"median {statistics.median(values):.2f} s, max {max(values):.2f} s; "
            f"{totals.sweeps} sweeps, {totals.woken_by_callback} woken by callbacks"
        )
    if callbacks:
        assert totals.woken_by_callback >= 1
