"""Audit reports: numbers against the audit store (SQLite and PostgreSQL), files, re-verification."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text

from connectors.audit import (
    AnchorRecord,
    AuditStore,
    DocumentIn,
    NewNotarization,
    ReceiptRecord,
)
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.clock import ManualClock
from ledger.core.entry import Entry
from ledger.core.proof.steps import Step
from ledger.core.receipt import build_receipt
from tasks import report as rpt
from tasks import report_output as out
from tests.harness.postgres import PG_URL, fresh_schema

START_S = 1_700_000_000.0
T0 = datetime.fromtimestamp(START_S, UTC)
CHAIN_ID = hashlib.sha256(b"report-chain").digest()


def h(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


# -- a store with known rows, events, receipts and an anchor ----------------------------


@dataclass
class Known:
    """Ids of the known rows and the directory blocks (height -> raw bytes) they are in."""

    ids: dict[str, int]
    dblocks: dict[int, bytes]
    entry_hashes: dict[str, str]


def ledger_for(label: str, height: int) -> tuple[str, dict, bytes]:
    """A one-entry block at ``height``: (entry hash hex, node receipt object, dblock bytes)."""
    entry = Entry(CHAIN_ID, (), label.encode())
    eblock = EntryBlock.build(chain_id=CHAIN_ID, height=height, entries=[(entry.hash(), 0)])
    genesis = DirectoryBlock.build(
        prev=None,
        network_id=0xFA92E5A4,
        timestamp_min=28_000_000 + height * 10,
        admin_lookup_hash=bytes([1]) * 32,
        ec_header_hash=bytes([2]) * 32,
        fblock_key_mr=bytes([3]) * 32,
        entry_blocks=[(CHAIN_ID, eblock.key_mr())],
    )
    dblock = dataclasses.replace(genesis, height=height)
    receipt = build_receipt(entry.hash(), eblock, dblock)
    return entry.hash().hex(), receipt.to_json(), dblock.marshal()


def build_known(store: AuditStore, clock: ManualClock) -> Known:
    """Collection c1: a anchored, b in ledger (multi_az skipped), c published, d failed,
    e pending; collection c2: x published. Every row was created at T0."""
    labels = ["a", "b", "c", "d", "e"]
    doc_ids = store.notarizations.upsert_documents(
        "folder:/drop", [DocumentIn(f"docs/{x}.pdf", h(x), 100 + i) for i, x in enumerate(labels)]
    )
    ids = store.notarizations.add(
        [
            NewNotarization(d, "c1", CHAIN_ID.hex(), h(x))
            for d, x in zip(doc_ids, labels, strict=True)
        ]
    )
    (x_doc,) = store.notarizations.upsert_documents(
        "folder:/other", [DocumentIn("x.txt", h("x"), 1)]
    )
    (x_id,) = store.notarizations.add([NewNotarization(x_doc, "c2", CHAIN_ID.hex(), h("x"))])
    by_label = dict(zip(labels, ids, strict=True)) | {"x": x_id}
    ledgers = {"a": ledger_for("a", 7), "b": ledger_for("b", 8)}
    entry_hashes = {x: ledgers[x][0] if x in ledgers else h(f"entry-{x}") for x in by_label}
    clock.advance(10)
    store.notarizations.mark_published({by_label[x]: entry_hashes[x] for x in ("a", "b", "c", "x")})
    clock.advance(10)
    store.notarizations.mark_failed(
        {by_label["d"]: "rejected: 422 entry too large"}, retryable=False
    )
    clock.advance(5)
    store.notarizations.mark_stage([entry_hashes["a"]], "multi_az")
    clock.advance(45)
    store.notarizations.record_ledger(
        {ledgers[x][0]: (7 if x == "a" else 8, ledgers[x][1]["directoryblockkeymr"]) for x in "ab"}
    )
    verified = datetime.fromtimestamp(clock.now(), UTC)
    store.proofs.save_receipts(
        [ReceiptRecord.from_node(ledgers[x][1], verified_at=verified) for x in "ab"]
    )
    clock.advance(600)
    anchors = {
        "directoryblockheight": 7,
        "directoryblockkeymr": ledgers["a"][1]["directoryblockkeymr"],
        "anchor_pow": {"transactionhash": h("tx7"), "blockhash": h("blk7"), "confirmations": 2},
    }
    store.proofs.record_anchors([AnchorRecord.from_node(anchors, verified_at=verified)])
    return Known(by_label, {7: ledgers["a"][2], 8: ledgers["b"][2]}, entry_hashes)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AuditStore]:
    clock = ManualClock(START_S)
    if request.param == "sqlite":
        with AuditStore(f"sqlite:///{tmp_path / 'audit.db'}", clock=clock) as audit:
            audit.test_clock = clock  # type: ignore[attr-defined]
            yield audit
        return
    request.getfixturevalue("postgres_url")
    with (
        fresh_schema(prefix="test_report") as schema,
        AuditStore(PG_URL, clock=clock, schema=schema) as audit,
    ):
        audit.test_clock = clock  # type: ignore[attr-defined]
        yield audit


@pytest.fixture
def known(store: AuditStore) -> Known:
    return build_known(store, store.test_clock)  # type: ignore[attr-defined]


def fetcher(blocks: dict[int, bytes], calls: list[int] | None = None) -> rpt.DblockFetcher:
    def fetch(height: int) -> bytes:
        if calls is not None:
            calls.append(height)
        if height not in blocks:
            raise LookupError(height)
        return blocks[height]

    return fetch


def c1_report(store: AuditStore, known: Known, **kw) -> rpt.Report:
    data = rpt.load_report_data(store, collection="c1")
    checked = rpt.reverify_receipts(data.proofs, fetcher(known.dblocks), sample=50)
    return rpt.build_report(data, now=T0 + timedelta(hours=2), reverification=checked, **kw)


# -- numbers ------------------------------------------------------------------------------


def test_stage_counts_and_verification_numbers_match_the_store(
    store: AuditStore, known: Known
) -> None:
    report = c1_report(store, known)
    s = report.summary
    assert s["stages"] == store.runs.summary("c1")
    assert s["documents"] == len(store.proofs.records(collection="c1")) == 5
    assert s["receipts_stored"] == store.runs.receipt_count("c1") == 2
    assert s["anchors_stored"] == len(store.proofs.anchors(collection="c1")) == 1
    assert (s["failed"], s["overdue"], s["without_receipt"]) == (1, 2, 0)
    assert (s["reverified"], s["reverify_ok"], s["reverify_rejected"]) == (2, 2, 0)
    everything = rpt.build_report(rpt.load_report_data(store), now=T0)
    assert everything.summary["stages"] == store.runs.summary()
    assert everything.summary["documents"] == 6


def test_stage_times_come_from_the_stage_events(store: AuditStore, known: Known) -> None:
    docs = c1_report(store, known).documents.set_index("notarization_id")
    a, b, c, d = (docs.loc[known.ids[x]] for x in "abcd")
    assert [a[f"{s}_s"] for s in rpt.LATENCY_STAGES] == [10, 15, 45, 600, 670]
    assert (b["published_s"], b["ledger_s"], b["total_s"]) == (10, 60, 70)
    assert pd.isna(b["multi_az_s"]) and pd.isna(b["anchor_s"])
    assert (c["published_s"], c["total_s"]) == (10, 10)
    assert pd.isna(d["total_s"])
    events = store.notarizations.events(known.ids["a"])
    assert a["ledger_at"] == [e.at for e in events if e.stage == "ledger"][0]
    assert a["anchored_at"] == T0 + timedelta(seconds=670)


def test_status_per_stage(store: AuditStore, known: Known) -> None:
    docs = c1_report(store, known).documents.set_index("notarization_id")
    columns = [f"status_{s}" for s in rpt.STAGES]
    status = {x: list(docs.loc[known.ids[x], columns]) for x in "abcde"}
    assert status["a"] == ["done", "done", "done", "done"]
    assert status["b"] == ["done", "skipped", "done", "waiting"]
    assert status["c"] == ["done", "overdue", "not reached", "not reached"]
    assert status["d"] == ["failed", "not reached", "not reached", "not reached"]
    assert status["e"] == ["overdue", "not reached", "not reached", "not reached"]
    a = docs.loc[known.ids["a"]]
    assert (a["anchor_transaction_id"], a["anchor_confirmations"]) == (h("tx7"), 2)


def test_latency_summary_per_stage(store: AuditStore, known: Known) -> None:
    latencies = c1_report(store, known).latencies.set_index("stage")
    assert list(latencies.index) == list(rpt.LATENCY_STAGES)
    assert latencies.loc["published", ["count", "median_s", "max_s"]].tolist() == [3, 10, 10]
    assert latencies.loc["multi_az", ["count", "median_s"]].tolist() == [1, 15]
    assert latencies.loc["ledger", ["count", "mean_s", "median_s", "max_s"]].tolist() == [
        2,
        52.5,
        52.5,
        60,
    ]
    assert latencies.loc["anchor", ["count", "median_s"]].tolist() == [1, 600]
    assert latencies.loc["total", ["count", "median_s", "max_s"]].tolist() == [3, 70, 670]


def test_failed_and_overdue_follow_the_thresholds(store: AuditStore, known: Known) -> None:
    problems = c1_report(store, known).problems
    found = {(r.notarization_id, r.problem) for r in problems.itertuples()}
    assert found == {
        (known.ids["d"], "failed"),
        (known.ids["c"], "overdue"),
        (known.ids["e"], "overdue"),
    }
    failed = problems[problems["problem"] == "failed"].iloc[0]
    assert failed["detail"] == "rejected: 422 entry too large"
    loose = rpt.OverdueThresholds.from_mapping({"pending": None, "published": 7200})
    assert c1_report(store, known, thresholds=loose).summary["overdue"] == 0
    strict = rpt.OverdueThresholds.from_mapping({"ledger": 60})
    overdue = c1_report(store, known, thresholds=strict).problems.query("problem == 'overdue'")
    assert set(overdue["notarization_id"]) == {known.ids[x] for x in "bce"}
    b = overdue.set_index("notarization_id").loc[known.ids["b"]]
    assert (b["detail"], b["waited_s"], b["limit_s"]) == ("waiting for anchor", 7130, 60)


def test_thresholds_reject_unknown_stages_and_negative_limits() -> None:
    with pytest.raises(ValueError, match="stage"):
        rpt.OverdueThresholds.from_mapping({"anchor": 5})
    with pytest.raises(ValueError, match=">= 0"):
        rpt.OverdueThresholds.from_mapping({"pending": -1})
    assert rpt.OverdueThresholds().limit_s("anchor") is None


def test_period_selects_rows_by_creation_time(store: AuditStore, known: Known) -> None:
    clock = store.test_clock  # type: ignore[attr-defined]
    clock.advance(3600)
    late_doc = store.notarizations.upsert_documents(
        "folder:/drop", [DocumentIn("late.pdf", h("late"), 1)]
    )
    (late,) = store.notarizations.add(
        [NewNotarization(late_doc[0], "c1", CHAIN_ID.hex(), h("late"))]
    )
    cut = T0 + timedelta(minutes=30)
    after = rpt.load_report_data(store, collection="c1", since=cut)
    assert [p.notarization.id for p in after.proofs] == [late]
    before = rpt.load_report_data(store, collection="c1", until=cut)
    assert len(before.proofs) == 5
    report = rpt.build_report(after, now=T0 + timedelta(hours=2))
    assert report.summary["since"] == "2023-11-14T22:43:20Z"
    assert report.summary["stages"]["pending"] == 1


def test_parse_moment() -> None:
    assert rpt.parse_moment("2024-03-01") == datetime(2024, 3, 1, tzinfo=UTC)
    assert rpt.parse_moment("2024-03-01", end_of_day=True) == datetime(2024, 3, 2, tzinfo=UTC)
    assert rpt.parse_moment("2024-03-01T12:30:00Z") == datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    assert rpt.parse_moment("2024-03-01T12:30:00+02:00") == datetime(2024, 3, 1, 10, 30, tzinfo=UTC)
    assert rpt.parse_moment("2024-03-01T12:30") == datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    assert rpt.parse_moment(None) is None
    assert rpt.parse_moment("-7d", now=T0) == T0 - timedelta(days=7)
    assert rpt.parse_moment("-1.5h", now=T0) == T0 - timedelta(minutes=90)
    assert rpt.parse_moment("-30m", now=T0) == T0 - timedelta(minutes=30)
    with pytest.raises(ValueError, match="not a date"):
        rpt.parse_moment("last tuesday")


# -- re-verification ----------------------------------------------------------------------


def tamper_receipt(store: AuditStore, notarization_id: int, *, column_too: bool) -> None:
    """Flip one Merkle node's ``top`` in the stored raw receipt (and the column, if asked)."""
    (proof,) = [p for p in store.proofs.records() if p.notarization.id == notarization_id]
    assert proof.receipt is not None
    raw = json.loads(json.dumps(proof.receipt.raw))
    raw["merklebranch"][0]["top"] = h("forged")
    values = {"raw": json.dumps(raw), "i": notarization_id}
    sets = "raw = :raw"
    if column_too:
        sets += ", merkle_branch = :branch"
        values["branch"] = json.dumps(raw["merklebranch"])
    cast = "CAST(:raw AS JSONB)" if store.engine.dialect.name == "postgresql" else ":raw"
    sets = sets.replace(":raw", cast).replace(":branch", cast.replace(":raw", ":branch"))
    with store.engine.begin() as conn:
        conn.execute(text(f"UPDATE receipts SET {sets} WHERE notarization_id = :i"), values)


def test_reverification_accepts_untouched_receipts_once_per_block(
    store: AuditStore, known: Known
) -> None:
    calls: list[int] = []
    checked = rpt.reverify_receipts(
        store.proofs.records(), fetcher(known.dblocks, calls), sample=10
    )
    assert list(checked.columns) == list(rpt.REVERIFY_COLUMNS)
    assert list(checked["status"]) == ["ok", "ok"]
    assert list(checked["notarization_id"]) == [known.ids["a"], known.ids["b"]]
    assert sorted(calls) == [7, 8]


def test_reverification_flags_a_tampered_stored_receipt(store: AuditStore, known: Known) -> None:
    tamper_receipt(store, known.ids["b"], column_too=True)
    tamper_receipt(store, known.ids["a"], column_too=False)
    report = c1_report(store, known)
    checked = report.reverification.set_index("notarization_id")
    b = checked.loc[known.ids["b"]]
    assert (b["status"], b["step"]) == ("rejected", Step.RECEIPT)
    assert "Merkle" in b["message"]
    a = checked.loc[known.ids["a"]]
    assert (a["status"], a["step"]) == ("rejected", 0)
    assert "merkle branch" in a["message"]
    assert report.summary["reverify_rejected"] == 2
    rejected = report.problems.query("problem == 'receipt_rejected'")
    assert set(rejected["notarization_id"]) == {known.ids["a"], known.ids["b"]}


def test_reverification_flags_a_branch_column_changed_after_storing(
    store: AuditStore, known: Known
) -> None:
    # the raw receipt keeps a digest of its branch (stored once, in the column): a changed
    # column no longer has it, and the report still sees the two disagree
    (proof,) = [p for p in store.proofs.records() if p.notarization.id == known.ids["a"]]
    assert proof.receipt is not None
    branch = json.loads(json.dumps(proof.receipt.merkle_branch))
    branch[0]["top"] = h("forged")
    cast = "CAST(:b AS JSONB)" if store.engine.dialect.name == "postgresql" else ":b"
    with store.engine.begin() as conn:
        conn.execute(
            text(f"UPDATE receipts SET merkle_branch = {cast} WHERE notarization_id = :i"),
            {"b": json.dumps(branch), "i": known.ids["a"]},
        )
    checked = c1_report(store, known).reverification.set_index("notarization_id")
    a = checked.loc[known.ids["a"]]
    assert (a["status"], a["step"]) == ("rejected", 0)
    assert "merkle branch" in a["message"]
    assert checked.loc[known.ids["b"]]["status"] == "ok"


def test_reverification_flags_a_block_the_node_does_not_have(
    store: AuditStore, known: Known
) -> None:
    checked = rpt.reverify_receipts(
        store.proofs.records(), fetcher({7: known.dblocks[7]}), sample=10
    )
    assert list(checked["status"]) == ["ok", "rejected"]
    assert checked["step"].iloc[1] == Step.DIRECTORY_BLOCK
    swapped = rpt.reverify_receipts(
        store.proofs.records(), fetcher({7: known.dblocks[8], 8: known.dblocks[8]})
    )
    assert list(swapped["status"]) == ["rejected", "ok"]


def test_unreachable_node_marks_samples_unavailable(store: AuditStore, known: Known) -> None:
    def down(height: int) -> bytes:
        raise ConnectionError("connection refused")

    checked = rpt.reverify_receipts(store.proofs.records(), down, sample=10)
    assert list(checked["status"]) == ["unavailable", "unavailable"]
    assert "connection refused" in checked["message"].iloc[0]


def test_sample_is_bounded_and_reproducible(store: AuditStore, known: Known) -> None:
    proofs = store.proofs.records()
    fetch = fetcher(known.dblocks)
    one = rpt.reverify_receipts(proofs, fetch, sample=1, seed=3)
    assert len(one) == 1
    assert one.equals(rpt.reverify_receipts(proofs, fetch, sample=1, seed=3))
    assert rpt.reverify_receipts(proofs, fetch, sample=0).empty


# -- files --------------------------------------------------------------------------------


class _Resources(HTMLParser):
    """Collects tags and attribute values that could load something from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for _name, value in attrs:
            lowered = (value or "").strip().lower()
            if "http:" in lowered or "https:" in lowered or lowered.startswith("//"):
                self.external.append(f"{tag}: {value}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def read_header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        return next(csv.reader(handle))


def test_files_have_stable_columns_and_match_the_frames(
    store: AuditStore, known: Known, tmp_path: Path
) -> None:
    report = c1_report(store, known)
    paths = out.write_report(report, tmp_path / "out")
    assert set(paths) == set(rpt.REPORT_FILES)
    assert read_header(paths["documents"]) == [
        "notarization_id", "collection", "source", "path", "sha256", "size_bytes", "chain_id",
        "entry_hash", "stage", "status_published", "status_multi_az", "status_ledger",
        "status_anchor", "created_at", "published_at", "multi_az_at", "ledger_at", "anchored_at",
        "published_s", "multi_az_s", "ledger_s", "anchor_s", "total_s", "attempts", "error",
        "dblock_height", "dblock_keymr", "receipt_verified_at", "anchor_transaction_id",
        "anchor_block_hash", "anchor_confirmations", "anchor_verified_at", "overdue",
        "waiting_for", "waited_s", "rfc3161_timestamps", "opentimestamps",
    ]  # fmt: skip
    assert read_header(paths["latencies"]) == [
        "stage",
        "count",
        "mean_s",
        "median_s",
        "p95_s",
        "max_s",
    ]
    assert read_header(paths["problems"]) == [
        "notarization_id", "collection", "path", "sha256", "stage", "problem", "detail",
        "waited_s", "limit_s",
    ]  # fmt: skip
    assert read_header(paths["reverification"]) == [
        "notarization_id", "path", "entry_hash", "dblock_height", "status", "step", "message",
    ]  # fmt: skip
    docs = pd.read_csv(paths["documents"], dtype=str, keep_default_na=False).set_index(
        "notarization_id"
    )
    a = docs.loc[str(known.ids["a"])]
    assert (a["stage"], a["dblock_height"], a["anchored_at"]) == (
        "anchor",
        "7",
        "2023-11-14T22:24:30Z",
    )
    assert a["created_at"] == "2023-11-14T22:13:20Z"
    assert json.loads(paths["summary"].read_text()) == json.loads(
        json.dumps(report.summary, default=str)
    )


def test_html_is_self_contained(store: AuditStore, known: Known, tmp_path: Path) -> None:
    url_doc = store.notarizations.upsert_documents(
        "table:http://example.org/rows", [DocumentIn("https://x/<script>doc</script>", h("u"), 1)]
    )
    store.notarizations.add([NewNotarization(url_doc[0], "c1", CHAIN_ID.hex(), h("u"))])
    paths = out.write_report(c1_report(store, known), tmp_path)
    page = paths["html"].read_text(encoding="utf-8")
    parser = _Resources()
    parser.feed(page)
    assert parser.external == []
    assert not parser.tags & {"script", "link", "iframe", "object", "embed", "base"}
    assert "svg" in parser.tags or 'src="data:image/png;base64,' in page
    assert "https://x/&lt;script&gt;doc&lt;/script&gt;" in page  # document text is escaped
    assert "style" in parser.tags and "rejected: 422 entry too large" in "".join(parser.text)


class _Links(HTMLParser):
    """Every ``<a href>`` of a page, with the text of its row's path cell."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")


def test_html_links_anchored_documents_to_their_bundle_and_the_page(
    store: AuditStore, known: Known, tmp_path: Path
) -> None:
    """The links are the exporter's paths, relative to the report folder."""
    from flows.audit_report import proof_links
    from tasks.proofs import bundle_relpath

    report_dir, proofs_dir = tmp_path / "reports" / "c1", tmp_path / "my proofs"
    links = proof_links(report_dir, str(proofs_dir))
    assert links == out.ProofLinks("../../my proofs")
    paths = out.write_report(c1_report(store, known), report_dir, proofs=links)
    parser = _Links()
    parser.feed(paths["html"].read_text(encoding="utf-8"))
    bundles = [href for href in parser.hrefs if href.endswith(".proof.json")]
    # only document a is anchored (build_known)
    expected = proofs_dir / bundle_relpath("c1", "docs/a.pdf", h("a"), T0)  # created at T0
    stamp = f"{T0:%Y%m%dT%H%M%SZ}-{h('a')[:8]}"
    assert bundles == [f"../../my%20proofs/c1/docs/a.pdf.{stamp}.proof.json"]
    resolved = (report_dir / bundles[0].replace("%20", " ")).resolve()
    assert resolved == expected.resolve()
    pages = {href for href in parser.hrefs if href.endswith("verify.html")}
    assert pages == {"../../my%20proofs/verify.html"}
    plain = out.write_report(c1_report(store, known), tmp_path / "plain")["html"].read_text()
    assert ".proof.json" not in plain and "verify.html" not in plain


def test_svg_chart_draws_two_bars_per_stage() -> None:
    latencies = pd.DataFrame(
        [["published", 3, 10.0, 10.0, 10.0, 10.0], ["ledger", 2, 52.5, 52.5, 59.0, 60.0]],
        columns=list(rpt.LATENCY_COLUMNS),
    )
    svg = out.svg_chart(latencies)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 4 and "ledger" in svg and "59 s" in svg
    assert "http" not in svg


def test_png_chart_when_matplotlib_is_installed() -> None:
    pytest.importorskip("matplotlib")
    latencies = pd.DataFrame([["ledger", 2, 1.0, 1.0, 2.0, 2.0]], columns=list(rpt.LATENCY_COLUMNS))
    assert out.latency_chart(latencies).startswith(
        '<img alt="stage latencies" src="data:image/png;base64,'
    )


def test_empty_period_still_writes_every_file(store: AuditStore, tmp_path: Path) -> None:
    report = rpt.build_report(rpt.load_report_data(store, collection="none"), now=T0)
    paths = out.write_report(report, tmp_path)
    assert report.summary["documents"] == 0 and set(report.summary["stages"].values()) == {0}
    assert "No document in this period." in paths["html"].read_text()
    assert read_header(paths["documents"])[0] == "notarization_id"


def test_markdown_and_table_summaries(store: AuditStore, known: Known) -> None:
    report = c1_report(store, known)
    rows = {r["stage"]: r for r in out.stage_table(report)}
    assert rows["ledger"] == {
        "stage": "ledger",
        "documents": 1,
        "reached": 2,
        "median_s": 52.5,
        "p95_s": 59.25,
    }
    assert rows["failed"] == {"stage": "failed", "documents": 1}
    assert rows["anchor"]["median_s"] == 600 and type(rows["anchor"]["median_s"]) is float
    assert report.summary["latency_s"]["multi_az"] == {"count": 1, "median": 15.0, "p95": 15.0}
    empty = rpt.build_report(rpt.load_report_data(store, collection="none"), now=T0)
    assert empty.summary["latency_s"]["ledger"] == {"count": 0, "median": None, "p95": None}
    json.dumps(empty.summary, allow_nan=False)
    markdown = out.summary_markdown(report)
    assert "## Audit report: c1" in markdown and "| overdue | 2 |" in markdown
    assert "| ledger | 1 | 2 | 52.5 | 59.25 |" in markdown
    assert "| anchors verified under trust policy | not stated |" in markdown
    report.summary["trust_policy"] = "bitcoin-mainnet"  # as the audit-report flow sets it
    assert "| anchors verified under trust policy | bitcoin-mainnet |" in out.summary_markdown(
        report
    )


def test_seconds_text() -> None:
    assert [out.seconds_text(v) for v in (0.42, 12.5, 190, 18_360, 172_800)] == [
        "0.42 s", "12.5 s", "3.2 min", "5.1 h", "2.0 d",
    ]  # fmt: skip
