"""The calendar protocol's edges (``ledger.anchor.ots_calendar``): what a calendar or a
header source may answer that must not be kept, and the ``.ots`` the service builds.

Answers are served by ``httpx.MockTransport`` handlers (test doubles, each bending one
thing) or by the calendar test double of tests/harness/ots_calendar.py."""

from __future__ import annotations

import hashlib
import os

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentimestamps.core.notary import PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import Timestamp

from ledger.anchor.ots_calendar import (
    MAX_ANSWER_BYTES,
    CalendarClient,
    CalendarError,
    HeaderSource,
    merge_at_tip,
    new_stamp,
    pending_points,
    stamp_tip,
)
from ledger.core.timestamps.ots import ots_file, parse_ots
from tests.harness.ots_calendar import fabricate_header

pytestmark = pytest.mark.anyio

CAL = "http://calendar.test"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _pending(msg: bytes, uri: str = CAL) -> bytes:
    stamp = Timestamp(msg)
    tip = stamp.ops.add(OpAppend(b"\x01")).ops.add(OpSHA256())
    tip.attestations.add(PendingAttestation(uri))
    ctx = BytesSerializationContext()
    stamp.serialize(ctx)
    return bytes(ctx.getbytes())


def _client(answer: httpx.Response) -> CalendarClient:
    return CalendarClient(transport=httpx.MockTransport(lambda request: answer))


async def test_a_good_answer_is_merged_at_the_tip() -> None:
    stamp = new_stamp(os.urandom(32))
    tip = stamp_tip(stamp).msg
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=_pending(request.content))

    client = CalendarClient(transport=httpx.MockTransport(handler))
    merge_at_tip(stamp, await client.submit(CAL, tip))
    (request,) = seen
    assert (request.method, str(request.url), request.content) == ("POST", f"{CAL}/digest", tip)
    assert request.headers["Accept"] == "application/vnd.opentimestamps.v1"
    assert [p.calendar for p in pending_points(stamp.timestamp)] == [CAL]
    assert parse_ots(ots_file(stamp)) == stamp
    await client.aclose()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (httpx.Response(500), "HTTP 500"),
        (httpx.Response(404), "HTTP 404"),
        (httpx.Response(200, content=b"\x00garbage"), "not a timestamp"),
        (httpx.Response(200, content=b""), "not a timestamp"),
        (httpx.Response(200, content=b"\xf0" * (MAX_ANSWER_BYTES + 1)), "more than"),
    ],
)
async def test_an_unusable_submission_answer_is_refused(
    answer: httpx.Response, reason: str
) -> None:
    client = _client(answer)
    with pytest.raises(CalendarError, match=reason) as caught:
        await client.submit(CAL, bytes(32))
    assert caught.value.url == CAL
    await client.aclose()


async def test_an_answer_with_trailing_bytes_is_refused() -> None:
    client = _client(httpx.Response(200, content=_pending(bytes(32)) + b"\x00"))
    with pytest.raises(CalendarError, match="not a timestamp"):
        await client.submit(CAL, bytes(32))
    await client.aclose()


async def test_an_upgrade_is_none_while_pending_and_unreachable_is_an_error() -> None:
    client = _client(httpx.Response(404, content=b"Pending confirmation in Bitcoin blockchain"))
    assert await client.upgrade(CAL, bytes(32)) is None
    await client.aclose()

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = CalendarClient(transport=httpx.MockTransport(down))
    with pytest.raises(CalendarError, match="ConnectError"):
        await client.upgrade(CAL, bytes(32))
    await client.aclose()


def _esplora(header: bytes, *, claimed_hash: str | None = None) -> HeaderSource:
    real = hashlib.sha256(hashlib.sha256(header).digest()).digest()[::-1].hex()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/api/block-height/"):
            return httpx.Response(200, text=claimed_hash or real)
        return httpx.Response(200, text=header.hex())

    return HeaderSource("http://esplora.test/api", transport=httpx.MockTransport(handler))


async def test_a_header_is_kept_only_when_it_hashes_and_holds_the_merkle_root() -> None:
    root = os.urandom(32)
    header = fabricate_header(root)
    source = _esplora(header)
    assert await source.header(5, root) == header
    with pytest.raises(CalendarError, match="another Merkle root"):
        await source.header(5, bytes(32))
    await source.aclose()
    lying = _esplora(header, claimed_hash="00" * 32)
    with pytest.raises(CalendarError, match="does not hash"):
        await lying.header(5, root)
    await lying.aclose()
    short = _esplora(header[:79])
    with pytest.raises(CalendarError, match="does not hash"):
        await short.header(5, root)
    await short.aclose()


def test_a_root_is_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        new_stamp(bytes(31))


@given(
    root=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=16, max_size=16),
    calendars=st.lists(
        st.sampled_from(["http://a.test", "http://b.test", "https://c.test"]),
        max_size=3,
        unique=True,
    ),
)
def test_the_ots_round_trips_with_any_answers_merged(
    root: bytes, nonce: bytes, calendars: list[str]
) -> None:
    stamp = new_stamp(root, nonce=nonce)
    tip = stamp_tip(stamp)
    assert tip.msg == hashlib.sha256(root + nonce).digest()
    for uri in calendars:
        answer = Timestamp(tip.msg)
        answer.ops.add(OpAppend(uri.encode())).attestations.add(PendingAttestation(uri))
        merge_at_tip(stamp, answer)
    if not calendars:
        return  # nothing to serialize before a calendar answered
    again = parse_ots(ots_file(stamp))
    assert again == stamp and again.file_digest == root
    assert sorted(p.calendar for p in pending_points(again.timestamp)) == sorted(calendars)
