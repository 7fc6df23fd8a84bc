"""OpenTimestamps proofs for anchored blocks: the anchoring service against calendar test
doubles (tests/harness/ots_calendar.py) that speak the calendar protocol over HTTP, a good
one, one that answers garbage, one that is slow and one that is down, and an Esplora
header API double."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import Timestamp

from ledger.anchor.app import AnchorRuntime, build_runtime
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.ots_calendar import CalendarClient, bitcoin_points
from ledger.anchor.ots_stamping import (
    RETRY_BASE_S,
    STALE_ATTEMPTS,
    UPGRADE_BASE_S,
    OtsStamper,
    ots_access,
)
from ledger.anchor.settings import AnchorSettings
from ledger.anchor.state import AnchoredBlock
from ledger.core.clock import ManualClock
from ledger.core.timestamps.ots import parse_ots
from tests.harness.ots_calendar import (
    CalendarDouble,
    EsploraDouble,
    esplora,
    ots_calendar,
)
from tests.harness.ports import free_port
from tests.ledger.anchor.conftest import anchor_settings

pytestmark = pytest.mark.anyio

BLOCKS = 3
UPGRADE_MAX_WAIT = 10_000.0


@dataclass
class Calendars:
    good: CalendarDouble
    other: CalendarDouble
    garbage: CalendarDouble
    slow: CalendarDouble
    headers: EsploraDouble
    down_port: int

    @property
    def down_url(self) -> str:
        return f"http://127.0.0.1:{self.down_port}"


@pytest.fixture
def calendars() -> Iterator[Calendars]:
    with (
        ots_calendar() as good,
        ots_calendar() as other,
        ots_calendar(fault="garbage") as garbage,
        ots_calendar(fault="slow", delay_s=3.0) as slow,
        esplora(good.headers) as source,
    ):
        yield Calendars(good, other, garbage, slow, source, free_port())


@dataclass
class Service:
    runtime: AnchorRuntime
    client: httpx.AsyncClient
    clock: ManualClock
    keymrs: list[bytes]

    async def step(self) -> Any:
        assert self.runtime.ots_stamper is not None
        return await self.runtime.ots_stamper.step()

    async def timestamps(self, height: int) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": "anchor-timestamps"}
        body["params"] = {"height": height}  # type: ignore[assignment]
        return (await self.client.post("/v2", json=body)).json()["result"]

    async def check(self) -> dict[str, Any]:
        checks = (await self.client.get("/health/ready")).json()["checks"]
        return next(c for c in checks if c["name"] == "ots")  # type: ignore[no-any-return]


def _settings(tmp_path: Path, cals: Calendars, urls: list[str], m: int) -> AnchorSettings:
    return anchor_settings(
        tmp_path,
        ots_calendars=",".join(urls),
        ots_min=m,
        ots_headers_url=cals.headers.url,
        ots_timeout_s=1.0,
    )


@contextlib.asynccontextmanager
async def _service(settings: AnchorSettings, clock: ManualClock) -> AsyncIterator[Service]:
    app = create_anchor_app(settings, clock=clock, run_loops=False)
    runtime: AnchorRuntime = app.state.anchor
    keymrs = [hashlib.sha256(b"block %d" % h).digest() for h in range(BLOCKS)]
    runtime.state.add([AnchoredBlock(h, k, os.urandom(32)) for h, k in enumerate(keymrs)], None)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://anchor"
    ) as client:
        yield Service(runtime, client, clock, keymrs)
    await runtime.aclose()


@pytest.fixture
async def service(tmp_path: Path, calendars: Calendars) -> AsyncIterator[Service]:
    urls = [calendars.good.url, calendars.garbage.url, calendars.down_url]
    async with _service(_settings(tmp_path, calendars, urls, 1), ManualClock(1.7e9)) as s:
        yield s


async def test_submit_pending_upgrade_and_header(service: Service, calendars: Calendars) -> None:
    """One submission per block and calendar; pending, then complete with its header."""
    outcome = await service.step()
    assert (outcome.queued, outcome.submitted, outcome.failed) == (BLOCKS, BLOCKS, 2 * BLOCKS)
    assert calendars.good.submissions == BLOCKS
    answer = await service.timestamps(0)
    (pending,) = answer["opentimestamps"]
    assert pending["headers"] == [] and answer["otsstatus"]["state"] == "pending"
    assert answer["final"] is False
    stamp = parse_ots(base64.b64decode(pending["ots"]))
    assert stamp.file_digest == service.keymrs[0]
    kinds = {type(a) for _, a in stamp.timestamp.all_attestations()}
    assert kinds == {PendingAttestation}  # shown as pending, never as attested

    service.clock.advance(UPGRADE_BASE_S)
    assert (await service.step()).completed == 0  # the calendar has no block yet
    header = calendars.good.confirm(812_345)
    service.clock.advance(UPGRADE_BASE_S * 2)
    assert (await service.step()).completed == BLOCKS

    for height in range(BLOCKS):
        answer = await service.timestamps(height)
        (element,) = answer["opentimestamps"]
        assert answer["otsstatus"]["state"] == "complete" and answer["final"] is True
        assert answer["otsstatus"]["bitcoinheights"] == [812_345]
        assert element["headers"] == [header.hex()]
        stamp = parse_ots(base64.b64decode(element["ots"]))
        assert stamp.file_digest == service.keymrs[height]
        ((block, merkle_root),) = bitcoin_points(stamp.timestamp)
        assert header[36:68] == merkle_root  # the op chain ends in the header's Merkle root
        assert any(isinstance(a, BitcoinBlockHeaderAttestation) for _, a in
                   stamp.timestamp.all_attestations())  # fmt: skip
    asked = calendars.good.upgrades_asked
    service.clock.advance(UPGRADE_MAX_WAIT)
    await service.step()
    assert calendars.good.upgrades_asked == asked  # a complete proof is never asked again


async def test_faulty_calendars_show_in_health_and_metrics(service: Service) -> None:
    await service.step()
    check = await service.check()
    assert check["ok"] is True
    assert "3 pending" in check["detail"] and "answer is not a timestamp" in check["detail"]
    assert "ConnectError" in check["detail"]
    metrics = (await service.client.get("/metrics")).text
    assert 'notary_anchor_ots_proofs{state="pending"} 3.0' in metrics
    assert "notary_anchor_ots_failures 6.0" in metrics
    assert metrics.count("notary_anchor_ots_calendar_ok{") == 3


async def test_below_m_of_n_is_retried_and_never_lost(tmp_path: Path, calendars: Calendars) -> None:
    """Two of four must answer: with one good, one garbage, one slow and one down the roots
    wait (degraded, retried after a back-off); when the down calendar comes up they are
    submitted to it (the good one is not asked again) and become pending."""
    urls = [calendars.good.url, calendars.garbage.url, calendars.slow.url, calendars.down_url]
    clock = ManualClock(1.7e9)
    async with _service(_settings(tmp_path, calendars, urls, 2), clock) as service:
        first = await service.step()
        assert (first.submitted, first.failed) == (0, 3 * BLOCKS)
        assert (await service.timestamps(0))["opentimestamps"] == []
        assert (await service.step()).failed == 0  # nothing due before the back-off ends
        for attempt in range(1, STALE_ATTEMPTS):
            clock.advance(RETRY_BASE_S * 2**attempt)
            assert (await service.step()).submitted == 0
        check = await service.check()
        assert check["detail"].startswith(f"degraded: {BLOCKS} roots after")
        assert calendars.good.submissions == BLOCKS
        with ots_calendar(port=calendars.down_port) as revived:
            clock.advance(RETRY_BASE_S * 2**STALE_ATTEMPTS)
            assert (await service.step()).submitted == BLOCKS
            assert revived.submissions == BLOCKS
        assert calendars.good.submissions == BLOCKS
        status = (await service.timestamps(1))["otsstatus"]
        assert status["state"] == "pending"
        assert status["calendars"] == [calendars.good.url, calendars.down_url]


async def test_nothing_is_lost_over_a_restart(tmp_path: Path, calendars: Calendars) -> None:
    """The pending proof is on disk: a new service on the same files upgrades it."""
    settings = _settings(tmp_path, calendars, [calendars.good.url], 1)
    clock = ManualClock(1.7e9)
    async with _service(settings, clock) as service:
        await service.step()
        before = (await service.timestamps(2))["opentimestamps"][0]["ots"]
    header = calendars.good.confirm(7)
    runtime = build_runtime(settings, clock=clock)
    try:
        assert runtime.ots_stamper is not None
        clock.advance(UPGRADE_BASE_S)
        assert (await runtime.ots_stamper.step()).completed == BLOCKS
        assert runtime.ots is not None
        row = runtime.ots.get(2)
        assert row is not None and row.headers == (header,)
        # the same proof, upgraded: the pending part it had is still in it
        old = parse_ots(base64.b64decode(before))
        assert old.timestamp.msg == parse_ots(row.ots).timestamp.msg
    finally:
        await runtime.aclose()
    assert calendars.good.submissions == BLOCKS


async def test_a_header_that_is_not_the_attested_block_is_refused(
    tmp_path: Path, calendars: Calendars
) -> None:
    """A header source whose block at the height has another Merkle root: the proof stays
    pending with the error, and completes once the right header is served."""
    settings = _settings(tmp_path, calendars, [calendars.good.url], 1)
    clock = ManualClock(1.7e9)
    async with _service(settings, clock) as service:
        await service.step()
        header = calendars.good.confirm(9)
        calendars.good.headers[9] = calendars.good.headers[9][:36] + bytes(32) + header[68:]
        clock.advance(UPGRADE_BASE_S)
        assert (await service.step()).completed == 0
        status = (await service.timestamps(0))["otsstatus"]
        assert status["state"] == "pending" and "another Merkle root" in status["lasterror"]
        calendars.good.headers[9] = header
        clock.advance(RETRY_BASE_S)
        assert (await service.step()).completed == BLOCKS


def test_m_cannot_exceed_n(tmp_path: Path) -> None:
    settings = anchor_settings(tmp_path, ots_calendars="http://127.0.0.1:9", ots_min=2)
    with pytest.raises(ValueError, match="ots_min is 2"):
        ots_access(settings)
    assert ots_access(anchor_settings(tmp_path)) is None
    listed = anchor_settings(tmp_path, ots_calendars='["http://a", "http://b"]', ots_min=2)
    assert ots_access(listed) is not None


async def test_a_calendar_named_by_an_answer_is_asked_only_when_allowed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A calendar whose pending attestation names another URL (not configured, not in the
    reference client's list) never makes the service call that URL."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        stamp = Timestamp(request.content)
        stamp.attestations.add(PendingAttestation("http://169.254.169.254/latest"))
        ctx = BytesSerializationContext()
        stamp.serialize(ctx)
        return httpx.Response(200, content=bytes(ctx.getbytes()))

    settings = anchor_settings(tmp_path, ots_calendars="http://calendar.test")
    clock = ManualClock(1.7e9)
    runtime = build_runtime(settings, clock=clock)
    runtime.state.add([AnchoredBlock(0, bytes(32), bytes(32))], None)
    access = ots_access(settings)
    assert access is not None and runtime.ots is not None
    stamper = OtsStamper(
        access,
        anchors=runtime.state,
        store=runtime.ots,
        clock=clock,
        calendars=CalendarClient(transport=httpx.MockTransport(handler)),
    )
    assert (await stamper.step()).submitted == 1
    for _ in range(3):
        clock.advance(UPGRADE_MAX_WAIT)
        await stamper.step()
    assert asked == ["http://calendar.test/digest"]
    assert caplog.text.count("not asking http://169.254.169.254/latest") == 1
    await stamper.aclose()
    await runtime.aclose()
