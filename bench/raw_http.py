"""One keep-alive HTTP/1.1 connection for load generators, kept minimal.

The benchmarks that load a service share the machine's two cores with it, so their client
does as little as it can: one request at a time on one connection (no pipelining), the
answer read by its ``content-length``. Only for the project's own services on loopback.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Answer", "RawConnection"]


@dataclass
class Answer:
    """An HTTP answer: its status code and its body (bytes)."""

    status: int
    body: bytes


class RawConnection:
    """One keep-alive HTTP/1.1 connection to ``127.0.0.1:port``, opened on first use."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        """A connection already connected (so that opening is not part of a timing)."""
        conn = cls(port)
        await conn._connect()
        return conn

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self._reader, self._writer

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> Answer:
        """Send one request and read its whole answer."""
        reader, writer = await self._connect()
        lines = [f"{method} {path} HTTP/1.1", "host: 127.0.0.1"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body or method == "POST":
            lines.append(f"content-length: {len(body)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return Answer(int(status_line.split()[1]), await reader.readexactly(length))

    async def post_json(self, path: str, body: bytes) -> Any:
        """POST a JSON ``body``; the decoded JSON answer (HTTP 200 or 400 expected).

        Raises:
            RuntimeError: any other status, with the start of the body.
        """
        answer = await self.request("POST", path, {"content-type": "application/json"}, body)
        if answer.status not in (200, 400):
            raise RuntimeError(f"HTTP {answer.status}: {answer.body[:200]!r}")
        return orjson.loads(answer.body)

    def close(self) -> None:
        """Close the connection (a later request opens a new one)."""
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
