"""Independent timestamps in the audit store and the report, as they arrive: the anchoring
service (in process, over HTTP) with an OpenTimestamps calendar test double and an
Esplora header double (tests/harness/ots_calendar.py), the ``collect`` sweep's
``sweep_timestamps`` through the real ``AnchorClient``, and the repository on every
backend."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.anchor import AnchorClient
from connectors.audit import AnchorRecord, AuditStore, BlockTimestamps, TsaTimestamp
from ledger.anchor.app import AnchorRuntime
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.ots_stamping import UPGRADE_BASE_S
from ledger.anchor.state import AnchoredBlock
from ledger.core.clock import ManualClock
from tasks.report import build_report, load_report_data
from tasks.timestamp_sweep import sweep_timestamps
from tests.connectors.test_audit_store import START_S, h, to_ledger
from tests.harness.ots_calendar import esplora, ots_calendar
from tests.harness.servers import AppServer
from tests.ledger.anchor.conftest import anchor_settings


@pytest.fixture
def store(backend: dict) -> Iterator[AuditStore]:
    clock = ManualClock(START_S)
    with AuditStore(backend["url"], clock=clock, schema=backend.get("schema")) as audit:
        yield audit


def anchored(store: AuditStore, labels: list[str], height: int) -> list[int]:
    ids = to_ledger(store, labels, height)
    raw = {
        "directoryblockheight": height,
        "directoryblockkeymr": h(f"db{height}"),
        "anchor_pow": {"transactionhash": h(f"tx{height}"), "blockhash": h(f"b{height}")},
    }
    at = datetime(2026, 1, 1, tzinfo=UTC)
    store.proofs.record_anchors([AnchorRecord.from_node(raw, verified_at=at)])
    return ids


def answer(height: int, **extra: object) -> dict[str, object]:
    return {
        "directoryblockheight": height,
        "keymr": h(f"db{height}"),
        "rfc3161": [
            {
                "tsa": "http://tsa.test/tsr",
                "token": "AA==",
                "gentime": "2026-12-02T04:00:00+00:00",
                "serial": "7",
                "subject": "CN=notary test TSA",
            }
        ],
        "waiting": [],
        **extra,
    }


def test_blocks_wait_until_final_and_rows_are_replaced(store: AuditStore) -> None:
    anchored(store, ["a", "b"], 7)
    anchored(store, ["c"], 8)
    to_ledger(store, ["d"], 9)  # not anchored: its timestamps are not asked for yet
    assert store.timestamps.awaiting() == [(7, h("db7")), (8, h("db8"))]
    pending = {"state": "pending", "bitcoinheights": [], "calendars": ["http://c"]}
    first = BlockTimestamps.from_answer(answer(7, otsstatus=pending, final=False))
    assert store.timestamps.record([first]) == 1
    assert store.timestamps.awaiting() == [(7, h("db7")), (8, h("db8"))]
    done = {"state": "complete", "bitcoinheights": [812_345], "calendars": ["http://c"]}
    store.timestamps.record([BlockTimestamps.from_answer(answer(7, otsstatus=done, final=True))])
    assert store.timestamps.awaiting() == [(8, h("db8"))]
    (stored,) = store.timestamps.of_blocks([7, 99]).values()
    assert stored.rfc3161 == (
        TsaTimestamp("http://tsa.test/tsr", "2026-12-02T04:00:00+00:00", "7", "CN=notary test TSA"),
    )
    assert (stored.ots_state, stored.ots_bitcoin_heights, stored.final) == (
        "complete",
        (812_345,),
        True,
    )
    assert stored.ots_text() == "Bitcoin block 812345"
    assert stored.rfc3161_text() == "CN=notary test TSA at 2026-12-02T04:00:00+00:00"


def test_a_tsa_still_waited_for_is_stored_with_its_last_error_and_reported(
    store: AuditStore,
) -> None:
    anchored(store, ["a"], 7)
    failing = {"tsa": "http://bad.test/tsr", "attempts": 3, "lasterror": "check 7 (signature)"}
    silent = {"tsa": "http://down.test/tsr", "attempts": 0, "lasterror": None}
    store.timestamps.record(
        [BlockTimestamps.from_answer(answer(7, waiting=[failing, silent], final=False))]
    )
    (stored,) = store.timestamps.of_blocks([7]).values()
    assert [(w.tsa, w.attempts, w.last_error) for w in stored.tsa_waiting] == [
        ("http://bad.test/tsr", 3, "check 7 (signature)"),
        ("http://down.test/tsr", 0, None),
    ]
    assert stored.rfc3161_text() == (
        "CN=notary test TSA at 2026-12-02T04:00:00+00:00;"
        " waiting for http://bad.test/tsr (3 attempts, last: check 7 (signature));"
        " waiting for http://down.test/tsr (0 attempts)"
    )
    assert store.timestamps.awaiting() == [(7, h("db7"))]  # asked again at the next sweep


def test_an_answer_from_before_final_is_final_when_nothing_waits() -> None:
    assert BlockTimestamps.from_answer(answer(3)).final is True
    waiting = answer(3, waiting=[{"tsa": "http://t", "attempts": 1, "lasterror": "x"}])
    assert BlockTimestamps.from_answer(waiting).final is False
    with pytest.raises(ValueError, match="anchor-timestamps"):
        BlockTimestamps.from_answer({"keymr": None})


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_sweep_records_timestamps_as_they_arrive_and_the_report_shows_them(
    tmp_path: Path, store: AuditStore
) -> None:
    """Pending after the calendars answered, ``Bitcoin block N`` once upgraded; the
    report's rows say so; a final block is not asked again."""
    ids = anchored(store, ["a", "b"], 7)
    clock = ManualClock(1.7e9)
    with ots_calendar() as calendar, esplora(calendar.headers) as headers:
        settings = anchor_settings(
            tmp_path, ots_calendars=calendar.url, ots_headers_url=headers.url
        )
        app = create_anchor_app(settings, clock=clock, run_loops=False)
        runtime: AnchorRuntime = app.state.anchor
        keymr = bytes.fromhex(h("db7"))
        runtime.state.add([AnchoredBlock(7, keymr, os.urandom(32))], None)
        assert runtime.ots_stamper is not None
        with AppServer(app, name="anchor") as server:
            client = AnchorClient(f"{server.url}/v2")
            server.run(runtime.ots_stamper.step())
            first = sweep_timestamps(store, client)
            assert (first.blocks_asked, first.recorded, first.final) == (1, 1, 0)
            report = build_report(load_report_data(store), now=datetime.now(UTC))
            rows = report.documents.set_index("notarization_id")
            assert list(rows.loc[ids, "opentimestamps"]) == ["pending", "pending"]
            assert list(rows.loc[ids, "rfc3161_timestamps"]) == ["", ""]

            calendar.confirm(812_345)
            clock.advance(UPGRADE_BASE_S)
            server.run(runtime.ots_stamper.step())
            second = sweep_timestamps(store, client)
            assert (second.recorded, second.final) == (1, 1)
            assert sweep_timestamps(store, client).blocks_asked == 0
            client.close()
    report = build_report(load_report_data(store), now=datetime.now(UTC))
    rows = report.documents.set_index("notarization_id")
    assert list(rows.loc[ids, "opentimestamps"]) == ["Bitcoin block 812345"] * 2
