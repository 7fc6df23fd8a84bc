"""The publishing API benchmark's load generator: workers on keep-alive connections.

``drive`` runs a number of workers, each on one connection (``raw``: ``bench.raw_http``;
``httpx``: one single-connection ``httpx.AsyncClient``), for a warm-up and then a measured
time, and counts what the measured part answered (``LoadResult``: latencies in
milliseconds, statuses, requests per second).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.raw_http import Answer, RawConnection

__all__ = ["LoadResult", "Request", "drive", "percentile"]

Request = tuple[str, str, dict[str, str], bytes]  # method, path, headers, body


@dataclass
class LoadResult:
    requests: int = 0
    ok: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {
            "requests": self.requests,
            "accepted": self.ok,
            "seconds": round(self.seconds, 3),
            "per_second": round(self.ok / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": percentile(lat, 50),
            "p90_ms": percentile(lat, 90),
            "p99_ms": percentile(lat, 99),
            "max_ms": round(lat[-1], 2) if lat else None,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
        }


def percentile(values: list[float], pct: float) -> float | None:
    """The ``pct`` percentile of sorted ``values`` (nearest rank), rounded to 0.01."""
    if not values:
        return None
    index = min(len(values) - 1, int(round(pct / 100 * (len(values) - 1))))
    return round(values[index], 2)


async def drive(
    port: int,
    *,
    client: str,
    concurrency: int,
    seconds: float,
    warmup_s: float,
    setup: Callable[[Callable[..., Any], int], Any],
    make_request: Callable[[Any, int], Request],
    ok_status: int,
) -> LoadResult:
    """Run ``concurrency`` workers for ``warmup_s + seconds``; count only after the warm-up.

    ``setup(send, worker)`` prepares a worker's state (``send`` sends one request);
    ``make_request(state, i)`` gives the i-th request of that worker.
    """
    result = LoadResult()
    start = time.perf_counter()
    measure_from, stop_at = start + warmup_s, start + warmup_s + seconds

    async def worker(index: int) -> None:
        send, close = await _sender(client, port)
        try:
            state = await setup(send, index)
            i = 0
            while True:
                method, path, headers, body = make_request(state, i)
                i += 1
                began = time.perf_counter()
                if began >= stop_at:
                    return
                answer = await send(method, path, headers, body)
                ended = time.perf_counter()
                if began >= measure_from:
                    result.requests += 1
                    result.statuses[answer.status] = result.statuses.get(answer.status, 0) + 1
                    result.latencies_ms.append((ended - began) * 1000)
                    result.ok += answer.status == ok_status
        finally:
            await close()

    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    result.seconds = time.perf_counter() - max(measure_from, start)
    return result


async def _sender(client: str, port: int) -> tuple[Any, Any]:
    if client == "raw":
        conn = await RawConnection.open(port)

        async def send_raw(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
            return await conn.request(method, path, headers, body)

        async def close_raw() -> None:
            conn.close()

        return send_raw, close_raw
    import httpx

    http = httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", limits=httpx.Limits(max_connections=1), timeout=60
    )

    async def send_httpx(method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        response = await http.request(method, path, headers=headers, content=body or None)
        return Answer(response.status_code, response.content)

    return send_httpx, http.aclose
