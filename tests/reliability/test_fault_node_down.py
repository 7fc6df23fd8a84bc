"""Fault: the ledger node goes down (SIGKILL) in the middle of a notarization batch.

While the node is down, the publishing API keeps accepting writes (stage ``multi_az``):
its worker meets connection errors, logs the outage once and keeps the rows as they are
(an outage is not a failed attempt, so no row is given up). The pipeline's ledger stage
(``flows.pipeline.wait_ledger``) gets ``ServiceUnavailable`` from the node and Prefect
re-runs the sweep with exponential back-off. Once the node is started again over the
same data folder the worker submits what is left and the next sweep records the receipts.

Proven for each test: every document of the batch reaches the ``ledger`` stage exactly
once (one notarization per file, one entry per document on the chain), and every stored
receipt verifies against the node's directory blocks. The CI tests use an outage of a few
seconds; ``-m slow`` runs the issue's one-minute outage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.audit import AuditStore
from connectors.errors import ConnectorError
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from tests.harness.waiting import wait_until

from .fault_stack import (
    FaultStack,
    assert_collection_on_ledger,
    collection_chain,
    make_files,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

FILES = 40


class NodeOutage(threading.Thread):
    """Kill the node once ``trigger()`` holds, keep it down ``down_s``, start it again.

    Attributes (after ``join``): ``killed_at`` / ``restarted_at`` (monotonic seconds),
    ``ledger_at_kill`` (documents at stage ``ledger`` when the node went down),
    ``error`` (what went wrong in the thread, if anything).
    """

    def __init__(
        self,
        fs: FaultStack,
        settings: PipelineSettings,
        collection: str,
        *,
        trigger: Callable[[dict[str, int]], bool],
        down_s: float,
    ) -> None:
        super().__init__(name="node-outage", daemon=True)
        self._fs, self._settings, self._collection = fs, settings, collection
        self._trigger, self._down_s = trigger, down_s
        self.killed_at = self.restarted_at = 0.0
        self.ledger_at_kill = -1
        self.error: BaseException | None = None
        self._cancelled = threading.Event()

    def __enter__(self) -> NodeOutage:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        """End the outage if still under way (the test failed): no restart after the test."""
        self._cancelled.set()
        self.join(timeout=30)

    def finish(self, *, timeout_s: float) -> None:
        """Wait for the outage to end (node started again); raise what the thread met."""
        self.join(timeout=timeout_s)
        assert not self.is_alive(), "the outage thread did not end"
        if self.error is not None:
            raise self.error

    def _counts(self) -> dict[str, int]:
        with AuditStore(self._settings.audit_url, create_tables=False) as store:
            return store.runs.summary(self._collection)

    def run(self) -> None:
        try:
            wait_until(
                lambda: self._cancelled.is_set() or self._trigger(self._counts()),
                timeout_s=120,
                what="the outage trigger",
            )
            if self._cancelled.is_set():
                return
            self._fs.node.kill()
            self.killed_at = time.monotonic()
            counts = self._counts()
            self.ledger_at_kill = counts["ledger"] + counts["anchor"]
            # The fault itself: the node stays down this long (real time, as the pipeline's
            # back-off and the API worker's polling run on the real clock).
            if self._cancelled.wait(self._down_s):
                return
            self._fs.node.start()
            self.restarted_at = time.monotonic()
        except BaseException as exc:  # reported by the test thread
            self.error = exc


def _published(counts: dict[str, int]) -> bool:
    """The first batch was accepted by the API: the run is in the middle of its batch."""
    return counts["published"] + counts["multi_az"] + counts["ledger"] > 0


def _api_stages(fs: FaultStack, collection: str) -> list[str]:
    """Stage of every entry the publishing API holds for the collection's chain."""
    chain_id = collection_chain(fs.pipeline_settings(), collection).chain_id
    chain = f"{fs.settings.api_url}/chains/{chain_id}/entries"
    with httpx.Client(headers={"user-key": fs.api_key}, timeout=10) as client:
        listing = client.get(chain, params={"limit": 1000})
        listing.raise_for_status()
        hashes = [item["entry_hash"] for item in listing.json()["items"]]
        assert len(hashes) == len(set(hashes)) == FILES + 1  # the first entry + documents
        return [client.get(f"{chain}/{h}").raise_for_status().json()["stage"] for h in hashes]


def _run_with_outage(tmp_path: Path, *, down_s: float, ledger_wait_s: float) -> None:
    folder = tmp_path / "docs"
    files = make_files(folder, FILES, tag="node-down")
    collection = "node-down"
    with FaultStack(tmp_path / "data") as fs:
        settings = fs.pipeline_settings(batch_size=10, ledger_wait_s=ledger_wait_s)
        AuditStore(settings.audit_url).close()  # schema in place before the trigger reads it
        with NodeOutage(fs, settings, collection, trigger=_published, down_s=down_s) as outage:
            started = time.monotonic()
            summary = notarize_folder(str(folder), collection, settings, True)
            finished = time.monotonic()
            outage.finish(timeout_s=down_s + 60)
        # The fault hit the batch: the node went down before the run ended and before every
        # document was in a directory block.
        assert started < outage.killed_at < finished
        assert 0 <= outage.ledger_at_kill < FILES
        assert finished >= outage.restarted_at, "the run ended while the node was down"
        assert summary["published"] == FILES and summary["publish_failed"] == 0
        assert summary["documents_with_receipt"] == FILES and summary["documents_waiting"] == 0
        assert_collection_on_ledger(settings, collection, files)
        stages = set(_api_stages(fs, collection))
        assert stages <= {"ledger", "anchor"}, stages  # no row of the API was given up
        print(
            f"\nnode down {down_s:.0f} s: run {finished - started:.1f} s, finished "
            f"{finished - outage.restarted_at:.1f} s after the node was back, "
            f"{outage.ledger_at_kill}/{FILES} in ledger when it went down"
        )


def test_node_down_for_seconds_during_a_batch_the_run_waits_and_finishes(
    tmp_path: Path,
) -> None:
    _run_with_outage(tmp_path, down_s=4.0, ledger_wait_s=60)


@pytest.mark.slow
def test_node_down_for_a_minute_during_a_batch_the_run_waits_and_finishes(
    tmp_path: Path,
) -> None:
    _run_with_outage(tmp_path, down_s=60.0, ledger_wait_s=180)


def test_node_down_longer_than_the_run_waits_collect_finishes(tmp_path: Path) -> None:
    """The run stops waiting while the node is still down; ``collect`` sweeps made after
    the node is back finish the batch.

    The run ends either with a summary counting the documents as still waiting, or (as
    ``flows.pipeline.wait_ledger`` does today when the last sweep met the outage) with the
    retryable ``ServiceUnavailable``, which ``notary notarize`` reports as exit code 3. In
    both cases every document is published and recorded, and nothing is lost.
    """
    folder = tmp_path / "docs"
    files = make_files(folder, FILES, tag="collect")
    collection = "node-down-collect"
    with FaultStack(tmp_path / "data") as fs:
        settings = fs.pipeline_settings(batch_size=10, ledger_wait_s=1.5)
        AuditStore(settings.audit_url).close()
        with NodeOutage(fs, settings, collection, trigger=_published, down_s=6.0) as outage:
            try:
                summary = notarize_folder(str(folder), collection, settings, True)
            except ConnectorError as exc:
                assert exc.retryable, exc
                ended = f"raised {type(exc).__name__}"
            else:
                assert summary["published"] == FILES and summary["documents_waiting"] > 0
                ended = f"returned with {summary['documents_waiting']} still waiting"
            assert outage.restarted_at == 0.0, "the node came back before the run ended"
            with AuditStore(settings.audit_url) as store:
                counts = store.runs.summary(collection)
            assert counts["pending"] == counts["failed"] == 0  # all published, none given up
            assert counts["ledger"] + counts["anchor"] < FILES
            outage.finish(timeout_s=60)

        sweeps: list[dict[str, Any]] = []

        def collected() -> bool:
            result = collect_proofs(settings, collection)
            sweeps.append(result)
            stages = result["stages"]
            return stages["ledger"] + stages["anchor"] == FILES

        wait_until(collected, timeout_s=60, what="collect to finish the batch", interval_s=0.5)
        assert_collection_on_ledger(settings, collection, files)
        print(f"\nthe run {ended}; collect sweeps after the node was back: {len(sweeps)}")
