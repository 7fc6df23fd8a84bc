"""OpenTimestamps on the service side: the calendar protocol, the header source, and the
``.ots`` file the service keeps for a root.

The calendar's HTTP protocol (as the reference client ``opentimestamps-client`` and
``python-opentimestamps``' ``opentimestamps/calendar.py`` speak it):

- ``POST <calendar>/digest`` with the raw digest as the body answers a serialized
  ``Timestamp`` over that digest (ops, then a ``PendingAttestation`` naming the calendar
  that will upgrade it);
- ``GET <calendar>/timestamp/<commitment hex>`` answers the upgraded ``Timestamp`` over the
  commitment (the message at a ``PendingAttestation``), or 404 while the calendar has no
  Bitcoin attestation for it yet.

Both answers carry ``Accept: application/vnd.opentimestamps.v1`` and are read up to
``MAX_ANSWER_BYTES``; anything that does not deserialize over the expected message is a
``CalendarError``. The bytes are handled by the ``opentimestamps`` library (PyPI); the
HTTP goes through ``httpx`` (a transport can be swapped in for tests). The file's bytes
are read and written by ``ledger.core.timestamps.ots`` (``parse_ots``, ``ots_file``), as
the verifier reads them.

The file (``new_stamp``): a ``DetachedTimestampFile`` whose file-hash op is SHA-256 and
whose digest is the 32-byte root (docs/proof-bundle.md, "Version 3"), then, as ``ots
stamp`` does, a 16-byte random nonce appended and SHA-256 again, so that a calendar sees
only that tip. Every calendar's answer is merged at the tip: one ``Timestamp`` per root.

Bitcoin headers (``HeaderSource``): an Esplora-compatible HTTP API (``GET
/block-height/<n>`` answers the block hash as display hex, ``GET /block/<hash>/header``
its 80-byte header as hex). A header is kept only when its double SHA-256 is the hash
asked for and its Merkle root (bytes 36..68) is the message the attestation commits to.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.serialize import BytesDeserializationContext, DeserializationError
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from ledger.anchor.errors import AnchorError

__all__ = [
    "ACCEPT",
    "HEADER_BYTES",
    "MAX_ANSWER_BYTES",
    "NONCE_BYTES",
    "CalendarClient",
    "CalendarError",
    "HeaderSource",
    "PendingPoint",
    "bitcoin_points",
    "merge_at_tip",
    "new_stamp",
    "pending_points",
    "stamp_tip",
]

ACCEPT = "application/vnd.opentimestamps.v1"
#: What the reference client reads of an answer at most.
MAX_ANSWER_BYTES = 10_000
#: The random nonce appended to the root before the tip is hashed.
NONCE_BYTES = 16
#: A Bitcoin block header's size.
HEADER_BYTES = 80


class CalendarError(AnchorError, RuntimeError):
    """A calendar or header source that cannot be used now: unreachable, an HTTP error, or
    an answer that is not what the protocol promises.

    Attributes:
        url: the calendar (or header source) asked, without credentials.
        reason: what went wrong (never the answer's bytes).
    """

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


def new_stamp(root: bytes, *, nonce: bytes | None = None) -> DetachedTimestampFile:
    """A new ``.ots`` over ``root`` (32 bytes): SHA-256 file hash op, digest ``root``, then
    append ``nonce`` (16 random bytes unless given) and SHA-256 (the tip sent to calendars).

    Raises:
        ValueError: ``root`` is not 32 bytes.
    """
    if len(root) != 32:
        raise ValueError(f"an OpenTimestamps root is 32 bytes, not {len(root)}")
    stamp = DetachedTimestampFile(OpSHA256(), Timestamp(root))
    salted = stamp.timestamp.ops.add(
        OpAppend(nonce if nonce is not None else os.urandom(NONCE_BYTES))
    )
    salted.ops.add(OpSHA256())
    return stamp


def stamp_tip(stamp: DetachedTimestampFile) -> Timestamp:
    """The sub-timestamp a calendar is asked about (``new_stamp``'s nonce, then SHA-256).

    Raises:
        ValueError: ``stamp`` was not made by ``new_stamp``.
    """
    (salted,) = stamp.timestamp.ops.values() or [None]
    if salted is None or len(salted.ops) != 1:
        raise ValueError("not a stamp of new_stamp's shape")
    (tip,) = salted.ops.values()
    return tip


def merge_at_tip(stamp: DetachedTimestampFile, answer: Timestamp) -> None:
    """Merge a calendar's ``answer`` (a ``Timestamp`` over the tip) into ``stamp``."""
    stamp_tip(stamp).merge(answer)


@dataclass(frozen=True)
class PendingPoint:
    """A ``PendingAttestation``: the ``calendar`` (its URI) that will upgrade the
    ``timestamp`` (the sub-timestamp whose message is the commitment to ask about)."""

    calendar: str
    timestamp: Timestamp

    @property
    def commitment(self) -> bytes:
        return bytes(self.timestamp.msg)


def pending_points(timestamp: Timestamp) -> Iterator[PendingPoint]:
    """Every ``PendingAttestation`` of ``timestamp`` with the sub-timestamp it sits on."""
    for attestation in timestamp.attestations:
        if isinstance(attestation, PendingAttestation):
            yield PendingPoint(attestation.uri, timestamp)
    for sub in timestamp.ops.values():
        yield from pending_points(sub)


def bitcoin_points(timestamp: Timestamp) -> list[tuple[int, bytes]]:
    """``(height, message)`` of every ``BitcoinBlockHeaderAttestation`` of ``timestamp``,
    by height: the message is the block's Merkle root (internal byte order)."""
    return sorted(
        {
            (int(a.height), bytes(msg))
            for msg, a in timestamp.all_attestations()
            if isinstance(a, BitcoinBlockHeaderAttestation)
        }
    )


def _deserialize(data: bytes, msg: bytes, url: str) -> Timestamp:
    if len(data) > MAX_ANSWER_BYTES:
        raise CalendarError(url, f"answer of more than {MAX_ANSWER_BYTES} bytes")
    try:
        ctx = BytesDeserializationContext(data)
        answer = Timestamp.deserialize(ctx, msg)
        ctx.assert_eof()
    except (DeserializationError, ValueError, TypeError) as exc:
        raise CalendarError(url, f"answer is not a timestamp: {type(exc).__name__}") from exc
    return answer


class CalendarClient:
    """The calendar protocol over ``httpx`` (module docstring).

    Args:
        timeout_s: per request.
        transport: replaces the HTTP transport (tests).
    """

    def __init__(
        self, *, timeout_s: float = 10.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._client = httpx.AsyncClient(
            timeout=timeout_s,
            transport=transport,
            headers={"Accept": ACCEPT, "User-Agent": "notary-anchor"},
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def submit(self, calendar: str, digest: bytes) -> Timestamp:
        """``POST <calendar>/digest``: the calendar's ``Timestamp`` over ``digest``.

        Raises:
            CalendarError: unreachable, not HTTP 200, or not a timestamp over ``digest``.
        """
        url = calendar.rstrip("/") + "/digest"
        answer = await self._request("POST", url, calendar, content=digest)
        if answer is None:
            raise CalendarError(calendar, "HTTP 404")
        return _deserialize(answer, digest, calendar)

    async def upgrade(self, calendar: str, commitment: bytes) -> Timestamp | None:
        """``GET <calendar>/timestamp/<hex>``: the upgraded ``Timestamp`` over
        ``commitment``, or None while the calendar has none (HTTP 404).

        Raises:
            CalendarError: unreachable, another HTTP error, or not a timestamp.
        """
        url = f"{calendar.rstrip('/')}/timestamp/{commitment.hex()}"
        answer = await self._request("GET", url, calendar)
        return None if answer is None else _deserialize(answer, commitment, calendar)

    async def _request(
        self, method: str, url: str, calendar: str, *, content: bytes | None = None
    ) -> bytes | None:
        try:
            response = await self._client.request(method, url, content=content)
        except httpx.HTTPError as exc:
            raise CalendarError(calendar, type(exc).__name__) from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise CalendarError(calendar, f"HTTP {response.status_code}")
        return response.content


class HeaderSource:
    """Bitcoin headers by height from an Esplora-compatible API at ``base_url`` (module
    docstring).

    Args:
        base_url: e.g. ``https://blockstream.info/api``.
        timeout_s: per request.
        transport: replaces the HTTP transport (tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=timeout_s, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def header(self, height: int, merkle_root: bytes) -> bytes:
        """The 80-byte header of the block at ``height`` whose Merkle root is
        ``merkle_root`` (internal byte order).

        Raises:
            CalendarError: unreachable, an HTTP error, a malformed answer, a header whose
                hash is not the one asked for, or whose Merkle root differs (another
                block now at that height).
        """
        block_hash = (await self._text(f"/block-height/{height}")).strip()
        try:
            raw = bytes.fromhex((await self._text(f"/block/{block_hash}/header")).strip())
            hash_ok = hashlib.sha256(hashlib.sha256(raw).digest()).digest()[::-1].hex()
        except ValueError as exc:
            raise CalendarError(self.base_url, "the header is not hex") from exc
        if len(raw) != HEADER_BYTES or hash_ok != block_hash.lower():
            raise CalendarError(self.base_url, f"the header of block {height} does not hash")
        if raw[36:68] != merkle_root:
            raise CalendarError(self.base_url, f"block {height} has another Merkle root")
        return raw

    async def _text(self, path: str) -> str:
        try:
            response = await self._client.get(self.base_url + path)
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            raise CalendarError(self.base_url, f"HTTP {exc.response.status_code}") from exc
        except httpx.HTTPError as exc:
            raise CalendarError(self.base_url, type(exc).__name__) from exc
        if len(response.content) > 1000:
            raise CalendarError(self.base_url, "answer too long")
        return response.text
