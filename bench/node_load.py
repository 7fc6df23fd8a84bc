"""Load generation for bench/node_ingest.py: a minimal HTTP/1.1 client, signed commit +
reveal pairs, an open-loop (fixed rate) and a closed-loop (as fast as answered) driver.

The load generator shares the machine's two cores with the node, so it is kept cheap: one
keep-alive connection per client, bodies encoded before a phase starts, uvloop when
installed.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.raw_http import RawConnection
from ledger import devnet
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.jsonrpc.wire import request_object

KEY = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))


@dataclass(frozen=True)
class Pair:
    """One entry's requests, encoded: the commit, the reveal and both as one batch."""

    entry_hash: bytes
    commit: dict[str, Any]
    reveal: dict[str, Any]

    def bodies(self) -> tuple[bytes, bytes]:
        return orjson.dumps(self.commit), orjson.dumps(self.reveal)


def pair_stream(chain_id: bytes, count: int, tag: str, payload_bytes: int) -> Iterator[Pair]:
    """``count`` signed commit-entry + reveal-entry pairs into ``chain_id``, each entry unique."""
    for i in range(count):
        content = f"{tag}:{i}:".encode().ljust(payload_bytes, b".")
        entry = Entry(chain_id, (b"bench",), content)
        commit = CommitEntry.create(KEY, entry, timestamp_ms=int(time.time() * 1000))
        yield Pair(
            entry.hash(),
            request_object(2 * i, "commit-entry", {"message": commit.marshal().hex()}),
            request_object(2 * i + 1, "reveal-entry", {"entry": entry.marshal().hex()}),
        )


def make_pairs(chain_id: bytes, count: int, tag: str, payload_bytes: int) -> list[Pair]:
    """``pair_stream`` signed in advance (a phase then measures the node, not the signing)."""
    return list(pair_stream(chain_id, count, tag, payload_bytes))


def check(reply: Any) -> None:
    for item in reply if isinstance(reply, list) else [reply]:
        if not isinstance(item, dict) or "result" not in item:
            raise RuntimeError(f"node refused a call: {item}")


@dataclass
class Latencies:
    """Per-call latencies in seconds."""

    values: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        if not self.values:
            return {}
        ordered = sorted(self.values)

        def pct(p: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

        return {
            "calls": len(ordered),
            "p50_ms": pct(0.50),
            "p90_ms": pct(0.90),
            "p99_ms": pct(0.99),
            "max_ms": round(ordered[-1] * 1000, 2),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
        }


async def create_chains(port: int, count: int, tag: str) -> list[bytes]:
    conn = RawConnection(port)
    chains = []
    for i in range(count):
        first = Entry.first_entry([b"bench", tag.encode(), str(i).encode()], b"chain")
        commit = CommitChain.create(KEY, first, timestamp_ms=int(time.time() * 1000))
        check(
            await conn.post_json(
                "/v2",
                orjson.dumps(
                    [
                        request_object(1, "commit-chain", {"message": commit.marshal().hex()}),
                        request_object(2, "reveal-chain", {"entry": first.marshal().hex()}),
                    ]
                ),
            )
        )
        chains.append(first.chain_id)
    conn.close()
    return chains


async def open_loop(port: int, pairs: list[Pair], rate: float, paired: bool) -> dict[str, Any]:
    """Entry ``i`` due at ``start + i / rate``; latency per call (see module doc)."""
    latencies = Latencies()
    slow: list[tuple[float, float]] = []  # (seconds into the phase, latency)
    pool: asyncio.Queue[RawConnection] = asyncio.Queue()
    for _ in range(64):
        pool.put_nowait(RawConnection(port))
    bodies = [(orjson.dumps([p.commit, p.reveal]), b"") if paired else p.bodies() for p in pairs]
    start = time.perf_counter()

    async def one(i: int) -> None:
        due = start + i / rate
        conn = await pool.get()
        try:
            first, second = bodies[i]
            check(await conn.post_json("/v2", first))
            t1 = time.perf_counter()
            latencies.values.append(t1 - due)
            slow.append((due - start, t1 - due))
            if second:
                check(await conn.post_json("/v2", second))
                latencies.values.append(time.perf_counter() - t1)
                slow.append((t1 - start, latencies.values[-1]))
        finally:
            pool.put_nowait(conn)

    tasks = []
    for i in range(len(bodies)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    achieved = len(bodies) / (time.perf_counter() - start)
    while not pool.empty():
        pool.get_nowait().close()
    return {
        "achieved_entries_per_s": round(achieved, 1),
        "latency_per_call": latencies.summary(),
        "slow_windows": slow_windows(slow),
    }


def slow_windows(calls: list[tuple[float, float]], over_s: float = 0.05) -> list[str]:
    """Where the calls slower than ``over_s`` started, by 0.5 s window: ``"t=12.5s: 40
    calls, max 180 ms"`` for the ten worst windows in time order (block boundaries and
    other stalls show up as windows one block time apart)."""
    windows: dict[float, list[float]] = {}
    for at, latency in calls:
        if latency > over_s:
            windows.setdefault(round(at * 2) / 2, []).append(latency)
    worst = sorted(windows.items(), key=lambda w: -len(w[1]))[:10]
    return [
        f"t={at:.1f}s: {len(values)} calls, max {max(values) * 1000:.0f} ms"
        for at, values in sorted(worst)
    ]


async def closed_loop(port: int, per_client: list[Iterable[Pair]], batch: int) -> dict[str, Any]:
    """Each client sends its next request as soon as the last one is answered."""
    latencies = Latencies()
    sent = [0]

    async def client(pairs: Iterable[Pair]) -> None:
        conn = RawConnection(port)
        source = iter(pairs)
        while chunk := list(itertools.islice(source, max(batch, 1))):
            sent[0] += len(chunk)
            if batch > 0:
                body = orjson.dumps([r for p in chunk for r in (p.commit, p.reveal)])
                t0 = time.perf_counter()
                check(await conn.post_json("/v2", body))
                latencies.values.append(time.perf_counter() - t0)
                continue
            for body in chunk[0].bodies():
                t0 = time.perf_counter()
                check(await conn.post_json("/v2", body))
                latencies.values.append(time.perf_counter() - t0)
        conn.close()

    start = time.perf_counter()
    await asyncio.gather(*(client(p) for p in per_client))
    elapsed = time.perf_counter() - start
    entries = sent[0]
    what = "per batch request" if batch > 0 else "per call"
    return {
        "entries": entries,
        "seconds": round(elapsed, 2),
        "entries_per_s": round(entries / elapsed, 1),
        f"latency_{what.replace(' ', '_')}": latencies.summary(),
    }


async def heights(port: int) -> Any:
    """The node's ``heights`` result (raises OSError while it does not listen)."""
    conn = RawConnection(port)
    try:
        return (await conn.post_json("/v2", orjson.dumps(request_object(1, "heights", {}))))[
            "result"
        ]
    finally:
        conn.close()


def run(coro: Any) -> Any:
    """Run ``coro`` on a new event loop (uvloop when installed: a cheaper load generator)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
