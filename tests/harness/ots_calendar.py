"""A test double of an OpenTimestamps calendar, and of an Esplora header API beside it.

No public calendar runs here, and a real one needs Bitcoin mainnet, so ``ots_calendar()``
is a **test double**: an ``HttpServer`` that speaks the calendar's HTTP protocol (``POST
/digest``, ``GET /timestamp/<commitment hex>``, as ``ledger.anchor.ots_calendar``
describes) and builds every answer with the ``opentimestamps`` library:

- ``POST /digest``: the digest, an ``OpAppend`` of the calendar's own counter and SHA-256
  (the commitment), and a ``PendingAttestation`` naming this calendar's URL;
- ``GET /timestamp/<hex>``: 404 ("Pending confirmation in Bitcoin blockchain") until the
  test calls ``confirm(height)``; from then on the commitment's path through a Merkle
  tree (double SHA-256, as Bitcoin's) to a fabricated block ``height`` whose header has
  that tree's root as its Merkle root, ending in a ``BitcoinBlockHeaderAttestation``.

The header (``fabricate_header``) is mined at regtest difficulty (bits ``0x207fffff``):
its hash meets its own target, so the ``bitcoin-regtest`` policy places it, while
``bitcoin-mainnet`` has neither the work nor a checkpoint for it ("unverifiable").

``esplora(headers)`` serves those headers the way an Esplora API does (``GET
/block-height/<n>`` -> hash, ``GET /block/<hash>/header`` -> hex).

Faulty calendars: ``fault="garbage"`` (HTTP 200, bytes that are no timestamp),
``"error"`` (HTTP 500), ``"slow"`` (answers after ``delay_s``); a calendar that is down
is a port where nothing listens (``free_port``).
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Literal

from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.op import OpAppend, OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import Timestamp, cat_sha256d, make_merkle_tree

from tests.harness.servers import HttpServer

__all__ = [
    "REGTEST_BITS",
    "CalendarDouble",
    "CalendarFault",
    "EsploraDouble",
    "esplora",
    "fabricate_header",
    "ots_calendar",
]

CalendarFault = Literal["garbage", "error", "slow"]
#: Bitcoin regtest's compact target (``powLimit``): about one hash in two meets it.
REGTEST_BITS = 0x207FFFFF


def _sha256d(data: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def fabricate_header(
    merkle_root: bytes, *, prev: bytes = b"\0" * 32, time_s: int = 1_700_000_000
) -> bytes:
    """An 80-byte Bitcoin header over ``merkle_root`` (internal byte order) whose hash
    meets its own target at ``REGTEST_BITS`` (nonce searched from 0)."""
    target = (REGTEST_BITS & 0xFFFFFF) << (8 * ((REGTEST_BITS >> 24) - 3))
    for nonce in range(1 << 20):
        header = struct.pack("<i32s32sIII", 4, prev, merkle_root, time_s, REGTEST_BITS, nonce)
        if int.from_bytes(_sha256d(header)[::-1], "big") <= target:
            return header
    raise RuntimeError("no nonce meets the regtest target")  # pragma: no cover


def _serialize(timestamp: Timestamp) -> bytes:
    ctx = BytesSerializationContext()
    timestamp.serialize(ctx)
    return bytes(ctx.getbytes())


@dataclass
class _Book:
    """The double's state, shared by its handler threads."""

    url: str = ""
    fault: CalendarFault | None = None
    delay_s: float = 0.0
    submissions: int = 0
    upgrades_asked: int = 0
    pending: dict[bytes, Timestamp] = field(default_factory=dict)
    confirmed: dict[bytes, Timestamp] = field(default_factory=dict)
    headers: dict[int, bytes] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class CalendarDouble(HttpServer):
    """The calendar test double (module docstring); ``submissions`` counts good POSTs,
    ``headers`` holds the fabricated headers by height."""

    def __init__(self, book: _Book, port: int = 0) -> None:
        super().__init__(_handler(book), port)
        self._book = book
        book.url = self.url

    @property
    def submissions(self) -> int:
        return self._book.submissions

    @property
    def upgrades_asked(self) -> int:
        return self._book.upgrades_asked

    @property
    def headers(self) -> dict[int, bytes]:
        return self._book.headers

    def confirm(self, height: int) -> bytes:
        """Put every pending commitment in block ``height`` (fabricated); its header."""
        with self._book.lock:
            leaves = [Timestamp(c) for c in self._book.pending]
            leaves.append(Timestamp(os.urandom(32)))  # another transaction of the block
            root = make_merkle_tree(leaves, binop=cat_sha256d)
            root.attestations.add(BitcoinBlockHeaderAttestation(height))
            header = fabricate_header(root.msg, time_s=1_700_000_000 + height)
            self._book.headers[height] = header
            for leaf in leaves[:-1]:
                self._book.confirmed[leaf.msg] = leaf
            self._book.pending.clear()
            return header


def ots_calendar(
    *, fault: CalendarFault | None = None, delay_s: float = 5.0, port: int = 0
) -> CalendarDouble:
    """A calendar test double (not yet started) on ``port`` (0: any free one)."""
    return CalendarDouble(_Book(fault=fault, delay_s=delay_s if fault == "slow" else 0.0), port)


def _handler(book: _Book) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            digest = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self._faulty() or self.path != "/digest" or not 1 <= len(digest) <= 64:
                return
            with book.lock:
                book.submissions += 1
                stamp = Timestamp(digest)
                commitment = stamp.ops.add(OpAppend(struct.pack(">Q", book.submissions)))
                commitment = commitment.ops.add(OpSHA256())
                commitment.attestations.add(PendingAttestation(book.url))
                book.pending[commitment.msg] = commitment
            self._answer(200, _serialize(stamp))

        def do_GET(self) -> None:
            if self._faulty():
                return
            prefix = "/timestamp/"
            try:
                commitment = bytes.fromhex(self.path.removeprefix(prefix))
            except ValueError:
                commitment = b""
            with book.lock:
                book.upgrades_asked += 1
                done = book.confirmed.get(commitment)
                known = done is not None or commitment in book.pending
            if done is not None:
                self._answer(200, _serialize(done))
            elif known:
                self._answer(404, b"Pending confirmation in Bitcoin blockchain")
            else:
                self._answer(404, b"Not found")

        def _faulty(self) -> bool:
            if book.fault == "slow":
                time.sleep(book.delay_s)
            elif book.fault == "garbage":
                self._answer(200, b"\xf0\x0d" + os.urandom(30))
                return True
            elif book.fault == "error":
                self._answer(500, b"calendar error")
                return True
            return False

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class EsploraDouble(HttpServer):
    """An Esplora-compatible header API test double serving ``headers`` (height ->
    80 bytes, read at each request, so a calendar's later ``confirm`` shows up);
    ``requests`` counts the requests."""

    def __init__(self, headers: dict[int, bytes], port: int = 0) -> None:
        self.requests = 0
        super().__init__(self._make_handler(headers), port)

    def _make_handler(self, headers: dict[int, bytes]) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                by_hash = {_sha256d(h)[::-1].hex(): h for h in headers.values()}
                parts = self.path.strip("/").split("/")
                body: str | None = None
                if len(parts) == 2 and parts[0] == "block-height" and parts[1].isdigit():
                    found = headers.get(int(parts[1]))
                    body = None if found is None else _sha256d(found)[::-1].hex()
                elif len(parts) == 3 and parts[0] == "block" and parts[2] == "header":
                    found = by_hash.get(parts[1])
                    body = None if found is None else found.hex()
                data = (body or "Block not found").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


def esplora(headers: dict[int, bytes], *, port: int = 0) -> EsploraDouble:
    """An Esplora header API test double (not yet started) serving ``headers``."""
    return EsploraDouble(headers, port)
