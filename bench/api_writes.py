"""Benchmark of the publishing API: accepted writes per second, write latency, read latency.

Usage (from the repository root)::

    python bench/api_writes.py          # writes bench/results/api_writes.json
    python bench/api_writes.py --seconds 5 --chain-entries 1000000 --concurrency 16 --backlog 0

What it does, each server in its own process on a free loopback port:

1. **baseline**: a bare FastAPI endpoint that inserts one row into SQLite per request and
   commits it (WAL, ``synchronous=FULL``, the same durability as the API), answering 202.
2. **api**: the publishing API (``create_app``) on a SQLite file, worker disabled (the
   in-memory twin ledger as gateway), one account. Every client connection creates a chain,
   then posts entries into it (operation 6), each with unique content.
3. **reads**: ``--chain-entries`` entries are inserted directly into one chain of the API
   database (not through HTTP), then GET latency is measured on that chain: the chain, its
   first and last entry, an entry by hash, a page of the entry list at a random offset, and
   a search by external ID.

4. **worker backlog** (``--backlog N``, 0 skips): the bundled stack (real node and wallet)
   accepts N entries with the API worker off, then restarts with it on; the time until
   every entry is revealed, and until every entry is in a directory block, is measured.

Each write run is repeated per ``--concurrency`` level. The JSON notes the load average
(other processes on the machine skew every figure) and whether uvicorn runs with the C
HTTP parser and event loop (``httptools``, ``uvloop``) or the pure-Python ones.

Two load generators drive the same POSTs over keep-alive connections (no pipelining):
``raw`` (a minimal HTTP/1.1 client on asyncio streams; cheap enough that the server is the
bottleneck) and ``httpx`` (``httpx.AsyncClient``, one single-connection client per
worker). On a small machine httpx itself needs about a millisecond of CPU per request,
so its figures show the client's ceiling as much as the server's.

Latencies are per request, from sending the request to the last byte of the answer,
in milliseconds. The JSON result file holds every figure printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.api_load import LoadResult, Request, drive  # noqa: E402
from bench.api_servers import server  # noqa: E402
from bench.raw_http import RawConnection  # noqa: E402
from tests.harness.ports import free_port  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "api_writes.json"
KEY_FILE = "bench-key"


# -- scenarios -------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _entry_body(worker: int, i: int) -> bytes:
    ext = [b64(b"bench"), b64(f"w{worker}-{i}".encode())]
    content = b64(f"document {worker}/{i} {time.time_ns()}".encode() + os.urandom(16))
    return _json({"external_ids": ext, "content": content})


def write_scenario(key: str | None) -> tuple[Any, Callable[[Any, int], Request]]:
    """Setup + request factory of the write load (API when ``key`` is given, else baseline)."""
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["user-key"] = key

    async def setup(send: Any, worker: int) -> str:
        if key is None:
            return "00" * 32
        body = _json({"external_ids": [b64(b"bench"), b64(os.urandom(16))], "content": ""})
        answer = await send("POST", "/v1/chains", headers, body)
        if answer.status != 202:
            raise RuntimeError(f"chain creation answered {answer.status}: {answer.body[:200]!r}")
        return str(json.loads(answer.body)["chain_id"])

    def make(chain_id: str, i: int) -> Request:
        return "POST", f"/v1/chains/{chain_id}/entries", headers, _entry_body(id(chain_id), i)

    return setup, make


def run_writes(port: int, key: str | None, args: argparse.Namespace, client: str) -> dict[str, Any]:
    setup, make = write_scenario(key)
    result = asyncio.run(
        drive(
            port,
            client=client,
            concurrency=args.concurrency,
            seconds=args.seconds,
            warmup_s=args.warmup,
            setup=setup,
            make_request=make,
            ok_status=202,
        )
    )
    return result.summary()


# -- the large chain -------------------------------------------------------------------


@dataclass(frozen=True)
class BigChain:
    chain_id: str
    entry_hashes: list[str]  # a sample
    search_value: bytes
    size: int  # entries, the first included


def prepare_api_database(data_dir: Path, chain_entries: int) -> tuple[str, BigChain]:
    """Create the schema, an account and a chain of ``chain_entries`` entries; return the key."""
    from ledger.api.accounts import create_account
    from ledger.api.db import Database
    from ledger.api.store import accept_chain
    from ledger.core.entry import Entry

    db = Database(f"sqlite:///{data_dir / 'api.sqlite'}")
    try:
        db.create_schema()
        with db.write() as session:
            account, key = create_account(session, "bench")
            first = Entry.first_entry([b"big chain", os.urandom(8)], b"first")
            accept_chain(session, account, first, callback=None, now=time.time())
            account_id = account.id
    finally:
        db.dispose()
    sample = _fill_chain(data_dir / "api.sqlite", first.chain_id, account_id, chain_entries)
    return key, BigChain(first.chain_id.hex(), sample, b"needle", chain_entries + 1)


def _fill_chain(path: Path, chain_id: bytes, account_id: int, count: int) -> list[str]:
    """Insert ``count`` entries (seq 1..count) straight into SQLite, as the API stores them."""
    import hashlib

    from ledger.core.entry import Entry

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    chain_hex, now, sample = chain_id.hex(), time.time(), []
    step = max(1, count // 1000)
    needle_hash = hashlib.sha256(b"needle").hexdigest()
    tag_hash = hashlib.sha256(b"big").hexdigest()
    for start in range(1, count + 1, 20_000):
        entries, tags = [], []
        for seq in range(start, min(count, start + 19_999) + 1):
            ext = (b"big", b"needle") if seq == count // 2 else (b"big", seq.to_bytes(4, "big"))
            entry = Entry(chain_id, ext, f"content {seq}".encode())
            entry_hash = entry.hash().hex()
            if seq % step == 0:
                sample.append(entry_hash)
            ext_json = json.dumps([b64(x) for x in ext])
            entries.append(
                (entry_hash, chain_hex, seq, account_id, ext_json, entry.content, now, now)
            )
            second = needle_hash if seq == count // 2 else hashlib.sha256(ext[1]).hexdigest()
            tags.append((entry_hash, tag_hash))
            tags.append((entry_hash, second))
        conn.executemany(
            "INSERT INTO entries (entry_hash, chain_id, seq, account_id, is_first, external_ids,"
            " content, stage, state, created_at, multi_az_at, attempts, next_attempt_at)"
            " VALUES (?, ?, ?, ?, 0, ?, ?, 'multi_az', 'revealed', ?, ?, 0, 0)",
            entries,
        )
        conn.executemany(
            "INSERT INTO external_id_tags (entry_id, chain_id, account_id, is_first, value_hash)"
            " SELECT id, chain_id, account_id, 0, ? FROM entries WHERE entry_hash = ?",
            [(value_hash, entry_hash) for entry_hash, value_hash in tags],
        )
        conn.commit()
    conn.execute("UPDATE chains SET entry_count = ? WHERE chain_id = ?", (count + 1, chain_hex))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sample


async def _read_latencies(port: int, key: str, chain: BigChain, rounds: int) -> dict[str, Any]:
    conn = await RawConnection.open(port)
    headers = {"user-key": key}
    post_headers = {**headers, "content-type": "application/json"}
    base = f"/v1/chains/{chain.chain_id}"
    count = len(chain.entry_hashes)
    kinds: dict[str, Callable[[int], tuple[str, str, dict[str, str], bytes]]] = {
        "chain": lambda i: ("GET", base, headers, b""),
        "first_entry": lambda i: ("GET", f"{base}/entries/first", headers, b""),
        "last_entry": lambda i: ("GET", f"{base}/entries/last", headers, b""),
        "entry_by_hash": lambda i: (
            "GET",
            f"{base}/entries/{chain.entry_hashes[(i * 7919) % count]}",
            headers,
            b"",
        ),
        "entry_page_at_random_offset": lambda i: (
            "GET",
            f"{base}/entries?limit=100&offset={random.randrange(0, max(1, chain.size - 100))}",
            headers,
            b"",
        ),
        "entry_search": lambda i: (
            "POST",
            f"{base}/entries/search",
            post_headers,
            _json({"external_ids": [b64(chain.search_value)]}),
        ),
    }
    out: dict[str, Any] = {}
    try:
        for name, make in kinds.items():
            result = LoadResult()
            for i in range(rounds + 20):
                method, path, hdrs, body = make(i)
                began = time.perf_counter()
                answer = await conn.request(method, path, hdrs, body)
                elapsed = (time.perf_counter() - began) * 1000
                if answer.status != 200:
                    raise RuntimeError(f"{name}: {answer.status} {answer.body[:200]!r}")
                if i >= 20:  # warm-up
                    result.requests += 1
                    result.ok += 1
                    result.latencies_ms.append(elapsed)
            summary = result.summary()
            out[name] = {k: summary[k] for k in ("requests", "p50_ms", "p99_ms", "max_ms")}
    finally:
        conn.close()
    return out


# -- the worker on the real stack -------------------------------------------------------


def run_backlog(count: int, *, chains: int = 5) -> dict[str, Any]:
    """Accept ``count`` entries with the worker off, restart with it on, time the catch-up.

    Runs the bundled stack (real node + wallet + API in this process, 2 s blocks) twice on
    one data folder: first with ``NOTARY_API_WORKER_ENABLED=false`` to build the backlog
    over HTTP, then normally; returns seconds from the restart until every row is revealed
    and until every row is in a directory block (stage ``ledger`` or later).
    """
    from ledger.stack import Stack, StackSettings, StackThread

    with tempfile.TemporaryDirectory(prefix="bench-backlog-") as tmp:
        settings = StackSettings(
            data_dir=Path(tmp),
            node_port=free_port(),
            wallet_port=free_port(),
            api_port=free_port(),
            block_time_s=2.0,
        )
        key = Stack(settings).prepare()
        os.environ["NOTARY_API_WORKER_ENABLED"] = "false"
        try:
            stack = StackThread(Stack(settings))
            stack.start()
            began = time.perf_counter()
            asyncio.run(_post_backlog(settings.api_port, key, count, chains))
            accept_s = time.perf_counter() - began
            stack.stop()
        finally:
            del os.environ["NOTARY_API_WORKER_ENABLED"]
        stack = StackThread(Stack(settings))
        began = time.perf_counter()
        stack.start()
        try:
            revealed_s, ledger_s = _wait_for_ledger(
                Path(tmp) / "api" / "api.sqlite", count + chains, began
            )
        finally:
            stack.stop()
    return {
        "entries": count + chains,
        "accept_s": round(accept_s, 2),
        "revealed_after_restart_s": revealed_s,
        "in_ledger_after_restart_s": ledger_s,
    }


async def _post_backlog(port: int, key: str, count: int, chains: int) -> None:
    headers = {"user-key": key, "content-type": "application/json"}
    first = await RawConnection.open(port)
    chain_ids = []
    for _ in range(chains):
        body = _json({"external_ids": [b64(b"backlog"), b64(os.urandom(8))]})
        answer = await first.request("POST", "/v1/chains", headers, body)
        chain_ids.append(json.loads(answer.body)["chain_id"])
    first.close()
    numbers = iter(range(count))

    async def poster() -> None:
        conn = await RawConnection.open(port)
        try:
            for i in numbers:
                path = f"/v1/chains/{chain_ids[i % chains]}/entries"
                answer = await conn.request("POST", path, headers, _entry_body(0, i))
                if answer.status != 202:
                    raise RuntimeError(f"backlog post answered {answer.status}")
        finally:
            conn.close()

    await asyncio.gather(*(poster() for _ in range(16)))


def _wait_for_ledger(path: Path, total: int, began: float) -> tuple[float | None, float | None]:
    revealed_s = None
    deadline = began + 300
    with contextlib.closing(sqlite3.connect(path)) as db:
        while time.perf_counter() < deadline:
            states = dict(db.execute("SELECT state, COUNT(*) FROM entries GROUP BY state"))
            stages = dict(db.execute("SELECT stage, COUNT(*) FROM entries GROUP BY stage"))
            now = round(time.perf_counter() - began, 2)
            if revealed_s is None and states.get("pending", 0) + states.get("committed", 0) == 0:
                revealed_s = now
            if stages.get("ledger", 0) + stages.get("anchor", 0) >= total:
                return revealed_s, now
            time.sleep(0.05)
    return revealed_s, None


# -- main ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.5, help="unmeasured seconds first")
    parser.add_argument(
        "--concurrency", default="16,32", help="keep-alive connections (comma-separated levels)"
    )
    parser.add_argument("--chain-entries", type=int, default=100_000)
    parser.add_argument("--read-rounds", type=int, default=300, help="GETs per read kind")
    parser.add_argument("--clients", default="raw,httpx", help="load generators to run")
    parser.add_argument(
        "--backlog", type=int, default=3000, help="entries of the worker backlog run (0: skip)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    results = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {args.out}")
    return 0


def _server_stack() -> dict[str, str]:
    """What uvicorn will use here: its C parser and loop when installed ("auto")."""
    import importlib.util

    def have(name: str) -> bool:
        return importlib.util.find_spec(name) is not None

    return {
        "http": "httptools" if have("httptools") else "h11",
        "loop": "uvloop" if have("uvloop") else "asyncio",
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    levels = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            **_server_stack(),
        },
        "settings": {
            "seconds": args.seconds,
            "concurrency": levels,
            "chain_entries": args.chain_entries,
        },
        "writes": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        base_dir, api_dir = Path(tmp) / "baseline", Path(tmp) / "api"
        base_dir.mkdir()
        api_dir.mkdir()
        began = time.perf_counter()
        key, chain = prepare_api_database(api_dir, args.chain_entries)
        results["settings"]["chain_fill_s"] = round(time.perf_counter() - began, 1)
        for client in clients:
            for level in levels:
                run_args = argparse.Namespace(**{**vars(args), "concurrency": level})
                with server("baseline", base_dir) as port:
                    base = run_writes(port, None, run_args, client)
                _show(f"baseline {client} c={level}", base)
                with server("api", api_dir) as port:
                    api = run_writes(port, key, run_args, client)
                _show(f"api {client} c={level}", api)
                results["writes"][f"{client}_c{level}"] = {"baseline": base, "api": api}
        with server("api", api_dir) as port:
            reads = asyncio.run(_read_latencies(port, key, chain, args.read_rounds))
        results["reads"] = reads
        for name, figures in reads.items():
            print(
                f"read {name:28s} p50 {figures['p50_ms']:7.2f} ms  p99 {figures['p99_ms']:7.2f} ms"
            )
    if args.backlog > 0:
        results["worker_backlog"] = run_backlog(args.backlog)
        print(f"worker backlog: {results['worker_backlog']}")
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def _show(label: str, s: dict[str, Any]) -> None:
    print(
        f"{label:22s} {s['per_second']:8.1f} accepted/s  p50 {s['p50_ms']} ms  "
        f"p99 {s['p99_ms']} ms  statuses {s['statuses']}"
    )


if __name__ == "__main__":
    sys.exit(main())
