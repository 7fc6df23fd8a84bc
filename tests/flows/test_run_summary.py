"""Run summaries add up: every line counts the run's own documents, or says it is a total.

Two ``notarize_folder`` runs of one folder into one collection at the same time, through the
real node, wallet and publishing API (a run once printed "skipped 2000" and "published
now 500" for a 2,000-file folder), and the summary's partition of documents.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import flows.notarize_folder as notarize_folder_module
from connectors.audit import AuditStore, DocumentIn
from flows.cli.commands.notarize import _print_summary
from flows.notarize_folder import notarize_folder
from flows.pipeline import Recorder
from flows.run_summary import RunSummary
from flows.settings import PipelineSettings
from tasks.documents import collection_chain_id

FILES = 20
GATE_S = 120.0


def make_files(root: Path, count: int) -> None:
    for i in range(count):
        path = root / f"sub{i % 3}" / f"file-{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"document {i}\n".encode() * (i + 1))


def partition(summary: dict[str, Any]) -> int:
    """How many hashed documents the summary accounts for, each in exactly one count."""
    return (
        summary["skipped_known"]
        + summary["repeated_in_run"]
        + summary["queued_by_other_runs"]
        + summary["queued"]
    )


def run_in_threads(*calls: Callable[[], dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the calls at once, one thread each; their results in order (re-raises)."""
    results: list[dict[str, Any] | BaseException | None] = [None] * len(calls)

    def target(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # re-raised below, in the test's thread
            results[i] = exc

    threads = [
        threading.Thread(target=target, args=(i,), name=f"run-{i}") for i in range(len(calls))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    out = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        assert result is not None, "a run did not finish"
        out.append(result)
    return out


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_a_run_counts_rows_another_run_queued_and_published_apart(
    tmp_path: Path,
    pipeline_settings: PipelineSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's interleaving, forced: B starts, A records every file (its batch), B
    records them (all known by then) and publishes A's batch, then A publishes (nothing
    left: its batch is no longer pending)."""
    folder = tmp_path / "docs"
    make_files(folder, FILES)
    b_started, a_recorded, b_published = threading.Event(), threading.Event(), threading.Event()
    real_add, real_own_publish = Recorder.add, Recorder._publish
    real_publish = notarize_folder_module.publish_pending

    def add(self: Recorder, docs: Any) -> None:
        if threading.current_thread().name == "run-1":  # B
            b_started.set()
            assert a_recorded.wait(GATE_S)
        else:
            assert b_started.wait(GATE_S)
        real_add(self, docs)

    def own_publish(self: Recorder, ids: Any) -> None:
        if threading.current_thread().name != "run-1":  # A, its batch just recorded
            a_recorded.set()
            assert b_published.wait(GATE_S)
        real_own_publish(self, ids)

    def publish_pending(*args: Any, **kwargs: Any) -> None:
        real_publish(*args, **kwargs)
        if threading.current_thread().name == "run-1":
            b_published.set()

    monkeypatch.setattr(Recorder, "add", add)
    monkeypatch.setattr(Recorder, "_publish", own_publish)
    monkeypatch.setattr(notarize_folder_module, "publish_pending", publish_pending)
    a, b = run_in_threads(
        lambda: notarize_folder(str(folder), "twice", pipeline_settings, True),
        lambda: notarize_folder(str(folder), "twice", pipeline_settings, True),
    )

    # A queued every file; B published them for it: neither counts the other's as its own.
    assert (a["queued"], a["skipped_known"], a["queued_by_other_runs"]) == (FILES, 0, 0)
    assert (a["published"], a["published_for_other_runs"]) == (0, 0)
    assert (b["queued"], b["skipped_known"], b["queued_by_other_runs"]) == (0, 0, FILES)
    assert (b["published"], b["published_for_other_runs"]) == (0, FILES)
    for s in (a, b):
        assert s["documents_seen"] == FILES and partition(s) == FILES
        assert s["documents_in_ledger"] == s["documents_with_receipt"] == FILES
        assert s["documents_waiting"] == s["documents_failed"] == s["publish_failed"] == 0
        assert s["collection_totals"] == {
            "in_ledger": FILES,
            "with_receipt": FILES,
            "waiting": 0,
            "failed": 0,
        }
    with AuditStore(pipeline_settings.audit_url) as store:
        assert len(store.proofs.records(collection="twice")) == FILES

    _print_summary(b | {"wall_seconds": 1.0})
    shown = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert any(f"queued by another run at the same time │ {FILES}" in ln for ln in shown)
    assert any("published now │ 0" in ln for ln in shown)
    assert any(f"finished for other runs (published) │ {FILES}" in ln for ln in shown)
    assert any("skipped (already in the collection before this run) │ 0" in ln for ln in shown)
    assert any(f"collection total: receipts verified │ {FILES}" in ln for ln in shown)


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_two_runs_of_one_folder_at_once_each_account_for_their_own_documents(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    """Ungated: whatever the interleaving, each document is queued once, each run accounts
    for each of its documents once, and no run counts another's rows as its own."""
    folder = tmp_path / "docs"
    make_files(folder, FILES)
    runs = run_in_threads(
        lambda: notarize_folder(str(folder), "racing", pipeline_settings, True),
        lambda: notarize_folder(str(folder), "racing", pipeline_settings, True),
    )
    assert sum(s["queued"] for s in runs) == FILES
    for s in runs:
        assert s["documents_seen"] == FILES and partition(s) == FILES
        assert s["published"] <= s["queued"]
        assert s["documents_with_receipt"] == FILES and s["documents_waiting"] == 0


def test_each_recorded_document_is_counted_once(tmp_path: Path) -> None:
    """``RunSummary.add_recorded`` against a real audit store: known before the run,
    repeated in the run, queued by another run meanwhile, and queued by this run."""
    chain = collection_chain_id("c")
    sha = {name: (name * 64)[:64] for name in "abcd"}
    with AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite'}") as store:
        from tasks.steps import record_documents

        def record(docs: list[DocumentIn]) -> list[int]:
            ids, _ = record_documents.fn(
                store, source="s", collection="c", chain_id=chain, docs=docs
            )
            return ids

        record([DocumentIn("old.txt", sha["a"], 1)])  # before the run
        summary = RunSummary("s", "c", chain)
        record([DocumentIn("other.txt", sha["b"], 1)])  # another run, meanwhile
        docs = [
            DocumentIn("old.txt", sha["a"], 1),
            DocumentIn("other.txt", sha["b"], 1),
            DocumentIn("new.txt", sha["c"], 1),
            DocumentIn("copy-of-new.txt", sha["c"], 1),
            DocumentIn("second.txt", sha["d"], 1),
        ]
        summary.add_recorded(
            docs, record(docs), store.notarizations.notarized_at(chain, sha.values())
        )
        counts = summary.as_dict()
        assert counts["skipped_known"] == 1 and counts["queued_by_other_runs"] == 1
        assert counts["queued"] == 2 and counts["repeated_in_run"] == 1
        assert partition(counts) == len(docs)
        assert len(summary.notarization_ids()) == 4
        summary.add_progress(store.runs.progress, chunk=3)  # two chunks
        assert summary.documents_waiting == len(docs) and summary.documents_in_ledger == 0
        assert not any(key.startswith("_") for key in counts)
