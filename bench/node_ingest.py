"""Ingest benchmark of the ledger node: commit + reveal pairs over loopback JSON-RPC.

Usage (from the repository root)::

    python bench/node_ingest.py                    # ~1 minute, default figures
    python bench/node_ingest.py --entries 1000000  # the million-entry RSS check

What it does, in one run:

1. Cost floor: the same work the node must do per entry (commit unmarshal, canonical
   ed25519 check, txid, entry unmarshal and hash, journal rows written to SQLite in WAL
   mode with ``synchronous=FULL``, one transaction per group) in a tight loop, no server.
2. Starts ``python -m ledger.node`` as a subprocess (``NOTARY_NODE_*`` env, fresh data dir,
   short block time) and creates one chain per client.
3. Throughput, batched: ``--clients`` concurrent clients each send JSON-RPC batches of
   ``--batch`` commit-entry + reveal-entry pairs as fast as replies come back, until
   ``--entries`` entries are acknowledged. Every reply is checked.
4. Throughput, single calls: the same with one HTTP request per call (``--single-entries``).
5. Latency at a fixed rate: an open-loop schedule of ``--rate`` entries per second for
   ``--latency-s`` seconds, p50 / p99 / max per call measured from the scheduled send time
   (no coordinated omission); once with a commit call then a reveal call per entry, once
   with both in one JSON-RPC batch per entry.
6. Peak RSS of the node (``VmHWM``), its CPU time per entry, blocks produced, a sample of
   acks, the machine's load average (other processes share the two cores).

uvicorn serves the node with uvloop and httptools when they are importable (``--http`` is
reported in the results); without them it falls back to asyncio and h11, which costs
roughly a third of the single-call throughput.

Figures are printed and written to ``bench/results/node_ingest.json``. Every reply counted
was sent by the node only after its journal write was committed (``synchronous=FULL``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ledger import devnet  # noqa: E402
from ledger.core.addresses import seed_from_ec_secret  # noqa: E402
from ledger.core.commit import CommitChain, CommitEntry  # noqa: E402
from ledger.core.entry import Entry  # noqa: E402
from ledger.core.keys import SigningKey  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "node_ingest.json"


# -- a minimal keep-alive HTTP/1.1 client (the load generator must stay cheap) -------------


class HttpConnection:
    """One keep-alive HTTP/1.1 connection posting JSON bodies to ``/v2``."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """Send one POST, return ``(status, body)``."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"POST /v2 HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.writer.write(head + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the node closed the connection")
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        return status, await self.reader.readexactly(length) if length else b""

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self.writer.wait_closed()
            self.writer = None


# -- message generation ----------------------------------------------------------------------


@dataclass
class Generator:
    """Builds signed commit-entry + reveal-entry pairs for one chain, each entry unique."""

    key: SigningKey
    chain_id: bytes
    payload_bytes: int
    tag: int
    counter: int = 0

    def pair(self) -> tuple[Entry, CommitEntry]:
        self.counter += 1
        content = f"{self.tag}:{self.counter}:".encode().ljust(self.payload_bytes, b".")
        entry = Entry(self.chain_id, (b"bench",), content)
        commit = CommitEntry.create(self.key, entry, timestamp_ms=int(time.time() * 1000))
        return entry, commit


def rpc(method: str, params: dict[str, Any], request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def pair_requests(entry: Entry, commit: CommitEntry, base_id: int) -> list[dict[str, Any]]:
    return [
        rpc("commit-entry", {"message": commit.marshal().hex()}, base_id),
        rpc("reveal-entry", {"entry": entry.marshal().hex()}, base_id + 1),
    ]


def check_reply(reply: Any) -> None:
    if not isinstance(reply, dict) or "result" not in reply:
        raise RuntimeError(f"node refused a call: {reply}")


# -- measurements ----------------------------------------------------------------------------


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


def cost_floor(pairs: int, group: int, payload_bytes: int, data_dir: Path) -> dict[str, Any]:
    """The per-entry work of the node without any server, in a tight loop."""
    key = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
    gen = Generator(key, bytes(32), payload_bytes, tag=0)
    messages = []
    for _ in range(pairs):
        entry, commit = gen.pair()
        messages.append((commit.marshal(), entry.marshal()))
    conn = sqlite3.connect(data_dir / "floor.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE commits (txid BLOB PRIMARY KEY, entry_hash BLOB NOT NULL, raw BLOB NOT NULL,"
        " received_ms INTEGER NOT NULL, block_height INTEGER, revealed INTEGER NOT NULL DEFAULT 0,"
        " seq INTEGER NOT NULL) WITHOUT ROWID"
    )
    conn.execute("CREATE INDEX commits_entry ON commits(entry_hash)")
    conn.execute("CREATE INDEX commits_open ON commits(revealed, block_height)")
    conn.execute(
        "CREATE TABLE pending_reveals (entry_hash BLOB PRIMARY KEY, raw BLOB NOT NULL,"
        " received_ms INTEGER NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID"
    )
    start = time.perf_counter()
    seq = 0
    for offset in range(0, pairs, group):
        commit_rows, reveal_rows = [], []
        for raw_commit, raw_entry in messages[offset : offset + group]:
            commit = CommitEntry.unmarshal(raw_commit)
            commit.verify()
            entry = Entry.unmarshal(raw_entry)
            ehash = entry.hash()
            seq += 2
            now = int(time.time() * 1000)
            commit_rows.append((commit.txid(), commit.entry_hash, commit.marshal(), now, seq))
            reveal_rows.append((ehash, raw_entry, now, seq + 1))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO commits(txid, entry_hash, raw, received_ms, seq) VALUES (?,?,?,?,?)",
            commit_rows,
        )
        conn.executemany(
            "INSERT INTO pending_reveals(entry_hash, raw, received_ms, seq) VALUES (?,?,?,?)",
            reveal_rows,
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    # the same loop split by step, to show where a single core's time goes
    parts = _floor_parts(messages[: min(pairs, 5000)])
    return {
        "entries": pairs,
        "group_pairs": group,
        "entries_per_s": round(pairs / elapsed, 1),
        "us_per_entry": round(elapsed / pairs * 1e6, 1),
        "us_per_entry_by_step": parts,
    }


def _floor_parts(messages: list[tuple[bytes, bytes]]) -> dict[str, float]:
    n = len(messages)
    result: dict[str, float] = {}
    t = time.perf_counter()
    commits = [CommitEntry.unmarshal(c) for c, _ in messages]
    result["commit_unmarshal"] = time.perf_counter() - t
    t = time.perf_counter()
    for c in commits:
        c.verify()
    result["signature_check"] = time.perf_counter() - t
    t = time.perf_counter()
    for c in commits:
        c.txid()
    result["txid"] = time.perf_counter() - t
    t = time.perf_counter()
    for _, e in messages:
        Entry.unmarshal(e).hash()
    result["entry_unmarshal_and_hash"] = time.perf_counter() - t
    return {k: round(v / n * 1e6, 2) for k, v in result.items()}


# -- the node subprocess -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_node(
    data_dir: Path, port: int, block_time_s: float, synchronous: str
) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        {
            "NOTARY_NODE_DATA_DIR": str(data_dir),
            "NOTARY_NODE_PORT": str(port),
            "NOTARY_NODE_BLOCK_TIME_S": str(block_time_s),
            "NOTARY_NODE_SQLITE_SYNCHRONOUS": synchronous,
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
        }
    )
    proc = subprocess.Popen([sys.executable, "-m", "ledger.node"], cwd=ROOT, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("the node exited at start-up") from None
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the node did not start listening")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def node_has_fast_http(env_pythonpath: str | None) -> dict[str, bool]:
    """Whether the node's interpreter can import uvloop / httptools (uvicorn uses them)."""
    code = "import importlib.util as u; print(int(bool(u.find_spec('uvloop'))), int(bool(u.find_spec('httptools'))))"
    env = dict(os.environ)
    if env_pythonpath:
        env["PYTHONPATH"] = env_pythonpath
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    uv, ht = out.stdout.split()
    return {"uvloop": uv == "1", "httptools": ht == "1"}


def rss_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak) of a process in KiB, from ``/proc``."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0])
    return values


# -- load phases -------------------------------------------------------------------------------


async def call(conn: HttpConnection, body: Any) -> Any:
    status, data = await conn.post(orjson.dumps(body))
    if status not in (200, 400):
        raise RuntimeError(f"HTTP {status}: {data[:200]!r}")
    return orjson.loads(data)


async def create_chains(port: int, key: SigningKey, count: int, run_tag: str) -> list[bytes]:
    conn = HttpConnection("127.0.0.1", port)
    chains = []
    for i in range(count):
        first = Entry.first_entry([b"bench", run_tag.encode(), str(i).encode()], b"chain")
        commit = CommitChain.create(key, first, timestamp_ms=int(time.time() * 1000))
        batch = [
            rpc("commit-chain", {"message": commit.marshal().hex()}, 1),
            rpc("reveal-chain", {"entry": first.marshal().hex()}, 2),
        ]
        for reply in await call(conn, batch):
            check_reply(reply)
        chains.append(first.chain_id)
    await conn.close()
    return chains


async def saturate(
    port: int, generators: list[Generator], *, entries: int, batch: int
) -> tuple[float, Latencies, list[bytes]]:
    """Closed loop: each client sends its next request as soon as the last one is answered."""
    latencies = Latencies()
    sample: list[bytes] = []
    remaining = [entries]

    async def client(gen: Generator) -> None:
        conn = HttpConnection("127.0.0.1", port)
        while remaining[0] > 0:
            take = min(max(batch, 1), remaining[0])
            remaining[0] -= take
            pairs = [gen.pair() for _ in range(take)]
            if batch > 0:
                body = [r for i, (e, c) in enumerate(pairs) for r in pair_requests(e, c, 2 * i)]
                t0 = time.perf_counter()
                replies = await call(conn, body)
                latencies.values.extend([time.perf_counter() - t0] * len(body))
                for reply in replies:
                    check_reply(reply)
            else:
                for entry, commit in pairs:
                    for request in pair_requests(entry, commit, 1):
                        t0 = time.perf_counter()
                        check_reply(await call(conn, request))
                        latencies.values.append(time.perf_counter() - t0)
            if len(sample) < 200:
                sample.append(pairs[-1][0].hash())
        await conn.close()

    start = time.perf_counter()
    await asyncio.gather(*(client(g) for g in generators))
    return time.perf_counter() - start, latencies, sample


async def fixed_rate(
    port: int,
    generators: list[Generator],
    *,
    rate: float,
    seconds: float,
    connections: int,
    paired: bool = False,
) -> tuple[Latencies, float]:
    """Open loop: entry i is due at ``start + i / rate``; latency counts from that instant.

    ``paired``: the commit and the reveal go in one JSON-RPC batch (one HTTP request per
    entry); otherwise two calls, the reveal sent when the commit is acknowledged.
    """
    latencies = Latencies()
    pool: asyncio.Queue[HttpConnection] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(HttpConnection("127.0.0.1", port))
    total = int(rate * seconds)
    start = time.perf_counter()

    async def one(i: int) -> None:
        due = start + i / rate
        entry, commit = generators[i % len(generators)].pair()
        conn = await pool.get()
        try:
            commit_req, reveal_req = pair_requests(entry, commit, 1)
            if paired:
                for reply in await call(conn, [commit_req, reveal_req]):
                    check_reply(reply)
                latencies.values.append(time.perf_counter() - due)
                return
            check_reply(await call(conn, commit_req))
            t1 = time.perf_counter()
            latencies.values.append(t1 - due)
            check_reply(await call(conn, reveal_req))
            latencies.values.append(time.perf_counter() - t1)
        finally:
            pool.put_nowait(conn)

    tasks = []
    for i in range(total):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    achieved = total / (time.perf_counter() - start)
    while not pool.empty():
        await pool.get_nowait().close()
    return latencies, achieved


async def node_status(port: int, sample: list[bytes], chain_id: bytes) -> dict[str, Any]:
    conn = HttpConnection("127.0.0.1", port)
    heights = (await call(conn, rpc("heights", {}, 1)))["result"]
    statuses: dict[str, int] = {}
    for ehash in sample:
        params = {"hash": ehash.hex(), "chainid": chain_id.hex()}
        ack = (await call(conn, rpc("ack", params, 1)))["result"]
        status = ack["entrydata"]["status"]
        statuses[status] = statuses.get(status, 0) + 1
    await conn.close()
    return {"heights": heights, "sample_ack_statuses": statuses}


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--entries", type=int, default=60_000, help="entries in the batched phase")
    p.add_argument("--single-entries", type=int, default=6_000, help="entries, single-call phase")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (one chain each)")
    p.add_argument("--batch", type=int, default=32, help="commit+reveal pairs per JSON-RPC batch")
    p.add_argument("--rate", type=float, default=1000.0, help="entries/s of the latency phase")
    p.add_argument("--latency-s", type=float, default=15.0, help="length of the latency phase")
    p.add_argument("--block-time-s", type=float, default=6.0, help="node block time")
    p.add_argument("--payload-bytes", type=int, default=200, help="entry content bytes")
    p.add_argument("--floor-entries", type=int, default=20_000, help="entries of the cost floor")
    p.add_argument("--synchronous", default="FULL", help="SQLite synchronous of the node")
    p.add_argument("--out", type=Path, default=RESULTS)
    return p.parse_args(argv)


async def run(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    key = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
    port = free_port()
    node = start_node(data_dir / "node", port, args.block_time_s, args.synchronous)
    try:
        tag = str(time.time_ns())
        chains = await create_chains(port, key, args.clients, tag)
        gens = [Generator(key, c, args.payload_bytes, tag=i) for i, c in enumerate(chains)]
        report: dict[str, Any] = {}
        sample: list[bytes] = []

        async def closed_loop(name: str, entries: int, batch: int) -> None:
            cpu0, load0 = cpu_s(node.pid), loadavg()
            elapsed, lat, got = await saturate(port, gens, entries=entries, batch=batch)
            sample.extend(got)
            report[name] = {
                "entries": entries,
                "batch_pairs": batch,
                "clients": args.clients,
                "seconds": round(elapsed, 2),
                "entries_per_s": round(entries / elapsed, 1),
                "node_cpu_us_per_entry": round((cpu_s(node.pid) - cpu0) / entries * 1e6, 1),
                "loadavg_before_after": [load0, loadavg()],
                "latency_per_call": lat.summary(),
            }
            print(f"{name}: {report[name]}", flush=True)

        async def open_loop(name: str, paired: bool) -> None:
            cpu0, load0 = cpu_s(node.pid), loadavg()
            lat, achieved = await fixed_rate(
                port, gens, rate=args.rate, seconds=args.latency_s, connections=64, paired=paired
            )
            report[name] = {
                "target_entries_per_s": args.rate,
                "achieved_entries_per_s": round(achieved, 1),
                "seconds": args.latency_s,
                "calls": "one batch [commit, reveal] per entry"
                if paired
                else "commit, then reveal",
                "node_cpu_share": round((cpu_s(node.pid) - cpu0) / args.latency_s, 2),
                "loadavg_before_after": [load0, loadavg()],
                "latency_per_call": lat.summary(),
            }
            print(f"{name}: {report[name]}", flush=True)

        await closed_loop("batched", args.entries, args.batch)
        if args.single_entries:
            await closed_loop("single_calls", args.single_entries, 0)
        if args.latency_s > 0:
            await open_loop("fixed_rate_single_calls", paired=False)
            await open_loop("fixed_rate_paired", paired=True)
        report["node_memory_kib"] = rss_kib(node.pid)
        report["node_state"] = await node_status(port, sample[:100], chains[0])
        return report
    finally:
        node.terminate()
        try:
            node.wait(timeout=30)
        except subprocess.TimeoutExpired:
            node.kill()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="node-ingest-") as tmp:
        data_dir = Path(tmp)
        floor = cost_floor(
            args.floor_entries, args.batch * args.clients, args.payload_bytes, data_dir
        )
        print(f"cost floor (no server, one core): {floor}", flush=True)
        report = asyncio.run(run(args, data_dir))
    report["cost_floor"] = floor
    report["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report["machine"] = {
        "cpus": os.cpu_count(),
        "node_fast_http": node_has_fast_http(
            os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        ),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    mem = report["node_memory_kib"]
    print(
        f"node RSS now {mem.get('VmRSS', 0) / 1024:.0f} MiB, peak {mem.get('VmHWM', 0) / 1024:.0f} MiB"
    )
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
