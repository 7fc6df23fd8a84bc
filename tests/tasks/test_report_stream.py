"""The streamed audit report (store read page by page) writes the files of the in-memory one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from connectors.audit import AuditStore, DocumentIn, ReceiptRecord
from tasks import report as rpt
from tasks import report_output as out
from tasks import report_stream
from tasks.documents import batch_members, chain_for
from tests.tasks import test_report as base
from tests.tasks.test_report import T0, Known, fetcher, h, ledger_for

store = base.store  # the fixtures of the in-memory report's tests: SQLite and PostgreSQL
known = base.known
NOW = T0 + timedelta(hours=2)


def add_aggregated(store: AuditStore, known: Known) -> int:
    """A batch of three documents in collection ``agg``, in a directory block (height 9)
    with its receipt stored; the receipt's block joins ``known.dblocks``."""
    record = store.collections.use("agg", "aggregate", chain_namer=chain_for)
    labels = ["m0", "m1", "m2"]
    ids = store.notarizations.upsert_documents(
        "folder:/agg", [DocumentIn(f"agg/{x}.txt", h(x), 10 + i) for i, x in enumerate(labels)]
    )
    root, members = batch_members(record.key, [(i, h(x)) for i, x in zip(ids, labels, strict=True)])
    added = store.batches.record(
        collection="agg", chain_id=record.chain_id, root=root, size=len(members), members=members
    )
    assert added is not None
    batch_id = added[0]
    entry_hash, receipt, dblock = ledger_for("batch", 9)
    store.test_clock.advance(30)  # type: ignore[attr-defined]
    store.notarizations.mark_published({batch_id: entry_hash})
    store.test_clock.advance(30)  # type: ignore[attr-defined]
    store.notarizations.record_ledger({entry_hash: (9, receipt["directoryblockkeymr"])})
    verified = datetime.fromtimestamp(store.test_clock.now(), UTC)  # type: ignore[attr-defined]
    store.proofs.save_receipts([ReceiptRecord.from_node(receipt, verified_at=verified)])
    known.dblocks[9] = dblock
    return batch_id


def in_memory(store: AuditStore, out_dir: Path, fetch: rpt.DblockFetcher, **kw) -> rpt.Report:
    data = rpt.load_report_data(store, collection=kw.pop("collection", None))
    checked = rpt.reverify_receipts(data.proofs, fetch, sample=kw["sample"], seed=kw["seed"])
    report = rpt.build_report(data, now=NOW, reverification=checked)
    out.write_report(report, out_dir)
    return report


def streamed(store: AuditStore, out_dir: Path, fetch: rpt.DblockFetcher, **kw) -> rpt.Report:
    partial = report_stream.stream_report(store, out_dir, now=NOW, page_size=2, **kw)
    report = partial.finish(rpt.reverify_chosen(partial.sampled, fetch))
    out.write_report(report, out_dir)
    return report


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(("sample", "seed"), [(50, 0), (2, 1), (0, 0)])
def test_streamed_files_equal_the_in_memory_files(
    store: AuditStore, known: Known, tmp_path: Path, sample: int, seed: int
) -> None:
    add_aggregated(store, known)
    # The node lacks block 8: b's receipt is rejected (a receipt_rejected problem row).
    fetch = fetcher({k: v for k, v in known.dblocks.items() if k != 8})
    kw = {"sample": sample, "seed": seed}
    whole = in_memory(store, tmp_path / "whole", fetch, **kw)
    paged = streamed(store, tmp_path / "paged", fetch, **kw)

    assert files(tmp_path / "paged") == files(tmp_path / "whole")
    assert set(files(tmp_path / "whole")) == set(rpt.REPORT_FILES.values())
    # The store really crossed pages (2 records each) and held every case.
    s = whole.summary
    assert s["documents"] == 9 and s["batches"] == 1 and paged.summary == s
    assert (s["failed"], s["overdue"]) == (1, 3)
    if sample == 50:
        assert (s["reverified"], s["reverify_rejected"]) == (3, 1)  # the batch's once
        assert "receipt_rejected" in set(whole.problems["problem"])
    assert len(whole.reverification) == min(sample, 3)


def test_streamed_report_keeps_only_the_rows_the_page_shows(
    store: AuditStore, known: Known, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_aggregated(store, known)
    monkeypatch.setattr(report_stream, "HTML_TABLE_ROWS", 3)
    monkeypatch.setattr(out, "HTML_TABLE_ROWS", 3)
    fetch = fetcher(known.dblocks)
    whole = in_memory(store, tmp_path / "whole", fetch, sample=5, seed=0)
    paged = streamed(store, tmp_path / "paged", fetch, sample=5, seed=0)

    assert len(paged.documents) == 3 and len(whole.documents) == 9
    problems = len(whole.problems)
    assert len(paged.problems) == 3 and problems > 3 and paged.problem_count == problems
    assert files(tmp_path / "paged") == files(tmp_path / "whole")
    html = (tmp_path / "paged" / "report.html").read_text()
    assert "First 3 of 9 rows." in html
    assert f"First 3 of {problems} rows; every row is in problems.csv." in html
    assert len(pd.read_csv(tmp_path / "paged" / "documents.csv")) == 9
    assert len(pd.read_csv(tmp_path / "paged" / "problems.csv")) == problems
    assert not list((tmp_path / "paged").glob("*.part"))


def test_an_empty_period_streams_every_file(store: AuditStore, tmp_path: Path) -> None:
    partial = report_stream.stream_report(store, tmp_path / "r", now=NOW, collection="none")
    report = partial.finish(None)
    out.write_report(report, tmp_path / "r")
    in_memory(store, tmp_path / "m", fetcher({}), collection="none", sample=0, seed=0)
    assert files(tmp_path / "r") == files(tmp_path / "m")
    assert report.summary["documents"] == 0


def test_receipt_sample_is_uniform_bounded_and_one_per_receipt(
    store: AuditStore, known: Known
) -> None:
    add_aggregated(store, known)
    proofs = store.proofs.records()
    chosen = {}
    for seed in range(40):
        sample = rpt.ReceiptSample(1, seed=seed)
        sample.add(proofs)
        (one,) = sample.chosen
        chosen[one.notarization.id] = chosen.get(one.notarization.id, 0) + 1
        assert sample.seen == 3  # a, b and the batch (its three members share one receipt)
    assert len(chosen) == 3  # each receipt gets picked by some seed
