"""Ingest benchmark of the ledger node: commit + reveal pairs over loopback JSON-RPC.

Usage (from the repository root)::

    python bench/node_ingest.py                          # ~2 minutes, the headline figures
    python bench/node_ingest.py --baseline-root /tmp/old # A/B: rounds alternate old and this tree
    python bench/node_ingest.py --entries 1000000 --latency-s 0 --single-entries 0 --restart
                                                         # RSS after 1M entries, restart time
    python bench/node_ingest.py --filter-entries 1000000 # replay filter rebuild on start-up only

What one run measures (every reply counted was sent only after its journal write was
committed with ``synchronous=FULL``; every reply is checked):

1. Cost floor: the node's per-entry work without a server, on one core, in a tight loop:
   hex decode, commit unmarshal, canonical ed25519 check, txid, entry unmarshal and hash,
   the two journal rows and the entry index row written into the node's own schema (WAL,
   ``synchronous=FULL``, one transaction per group of ``clients * batch`` entries).
2. For each node tree (this one, and ``--baseline-root`` if given), ``--rounds`` times with
   the order alternating (this machine is shared: only same-run comparisons mean much):
   start ``python -m ledger.node`` (fresh data dir, ``--block-time-s`` blocks), create one
   chain per client, then
   - latency: an open-loop schedule of ``--rate`` entries/s for ``--latency-s`` s over a
     pool of connections (entry ``i`` is due at ``start + i / rate``; the commit's latency
     counts from that instant, so a stalled node is not hidden by a waiting client), the
     commit call then the reveal call; optionally (``--paired``) both in one batch;
   - sustained: ``--clients`` closed-loop clients each sending batches of ``--batch``
     commit + reveal pairs, ``--entries`` entries in all: the highest rate the node keeps
     up durably; its ratio to the cost floor is reported, by wall-clock rate and by CPU
     per entry (the floor and the node run at different moments of a shared machine);
   - single calls: the same, one HTTP request per call (``--single-entries``).
   Messages are signed before each phase (beyond 50,000 per client, as they are sent), so
   the load generator's CPU during a phase is mostly HTTP and JSON. The latency phase lists
   its slowest half-second windows (stalls one block time apart point at block
   boundaries). Node RSS (``VmRSS``/``VmHWM``), CPU per entry and the machine's load
   average are recorded. ``--restart`` then stops the node and times its restart on the
   same data (until ``heights`` answers), twice.
3. ``--filter-entries N``: a store with N synthetic commit + reveal journal rows (settled by
   the tip's journal floor, so start-up only rebuilds the replay filter) is opened by each
   tree's ``NodeService.open()``; this tree is timed without and with its filter snapshot.

``--profile FILE`` records the node (this tree, first round) with py-spy during the latency
phase. Results go to ``bench/results/node_ingest.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.node_load import (  # noqa: E402
    Pair,
    closed_loop,
    create_chains,
    heights,
    make_pairs,
    open_loop,
    pair_stream,
    run,
)
from ledger.core.commit import CommitEntry  # noqa: E402
from ledger.core.entry import Entry  # noqa: E402
from ledger.core.hashing import entry_hash  # noqa: E402
from ledger.node.rules import INSERT_JOURNAL, KIND_COMMIT, KIND_REVEAL  # noqa: E402
from ledger.node.store import connect, insert_rows  # noqa: E402
from tests.harness.ports import free_port  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "node_ingest.json"
LATENCY_GOAL_MS = 50.0
SUSTAINED_GOAL = 3000.0

# -- the cost floor ----------------------------------------------------------------------------


def cost_floor(pairs: list[Pair], group: int, data_dir: Path) -> dict[str, Any]:
    """The node's per-entry work without any server, on one core (see module doc)."""
    messages = [(p.commit["params"]["message"], p.reveal["params"]["entry"]) for p in pairs]
    conn = connect(data_dir / "floor.sqlite")
    start, cpu_start = time.perf_counter(), time.process_time()
    seq = 0
    for offset in range(0, len(messages), group):
        journal, index = [], []
        now = int(time.time() * 1000)
        for commit_hex, entry_hex in messages[offset : offset + group]:
            commit = CommitEntry.unmarshal(bytes.fromhex(commit_hex))
            commit.verify()
            raw = bytes.fromhex(entry_hex)
            Entry.unmarshal(raw)
            ehash = entry_hash(raw)
            journal.append((seq + 1, KIND_COMMIT, commit.txid(), commit.marshal(), now))
            journal.append((seq + 2, KIND_REVEAL, ehash, raw, now))
            index.append((ehash, 1, seq + 2, seq + 1))
            seq += 2
        conn.execute("BEGIN IMMEDIATE")
        insert_rows(conn, INSERT_JOURNAL, journal)
        insert_rows(
            conn,
            "INSERT INTO entry_index(entry_hash, height, reveal_seq, commit_seq) VALUES (?,?,?,?)",
            index,
        )
        conn.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    conn.close()
    return {
        "entries": len(messages),
        "group_entries": group,
        "entries_per_s": round(len(messages) / elapsed, 1),
        "us_per_entry": round(elapsed / len(messages) * 1e6, 1),
        "cpu_us_per_entry": round(cpu / len(messages) * 1e6, 1),
    }


# -- the node process --------------------------------------------------------------------------


@dataclass
class Node:
    """``python -m ledger.node`` of the source tree ``root`` on ``data_dir``."""

    root: Path
    data_dir: Path
    args: argparse.Namespace
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start and wait until ``heights`` answers; returns the seconds that took."""
        self.port = free_port()
        env = dict(os.environ)
        env.update(
            {
                "NOTARY_NODE_DATA_DIR": str(self.data_dir),
                "NOTARY_NODE_PORT": str(self.port),
                "NOTARY_NODE_BLOCK_TIME_S": str(self.args.block_time_s),
                "NOTARY_NODE_SQLITE_SYNCHRONOUS": self.args.synchronous,
                "PYTHONPATH": str(self.root),
            }
        )
        env.update(dict(item.split("=", 1) for item in self.args.node_env))
        started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "ledger.node"], cwd=self.root, env=env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the node exited at start-up")
            with contextlib.suppress(OSError, RuntimeError, asyncio.IncompleteReadError):
                run(heights(self.port))
                return time.perf_counter() - started
            time.sleep(0.02)
        raise RuntimeError("the node did not answer")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None

    def cpu_s(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mib(self) -> dict[str, float]:
        assert self.proc is not None
        values = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name + "_mib"] = round(int(rest.split()[0]) / 1024, 1)
        return values


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


@contextlib.contextmanager
def py_spy(pid: int, out: Path | None) -> Iterator[None]:
    """Record ``pid`` with py-spy (threads, native frames off) while the block runs."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if out is None or not Path(exe).exists():
        yield
        return
    fmt = "speedscope" if out.suffix == ".json" else "flamegraph"
    cmd = [exe, "record", "-p", str(pid), "-o", str(out), "-f", fmt, "-r", "200", "--threads"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.send_signal(2)
        proc.wait(timeout=60)


# -- one round against one tree ----------------------------------------------------------------


def run_round(node: Node, args: argparse.Namespace, profile: Path | None) -> dict[str, Any]:
    report: dict[str, Any] = {"start_s": round(node.start(), 2)}
    assert node.proc is not None
    try:
        tag = str(time.time_ns())
        chains = run(create_chains(node.port, args.clients, tag))

        def phase(name: str, coro_factory: Any, entries: int) -> None:
            cpu0, load0 = node.cpu_s(), loadavg()
            started = time.perf_counter()
            result = run(coro_factory())
            cpu = node.cpu_s() - cpu0
            result["node_cpu_us_per_entry"] = round(cpu / max(entries, 1) * 1e6, 1)
            result["node_cpu_share"] = round(cpu / (time.perf_counter() - started), 2)
            result["loadavg_before_after"] = [load0, loadavg()]
            report[name] = result
            print(f"  {name}: {json.dumps(result)}", flush=True)

        if args.latency_s > 0:
            total = int(args.rate * args.latency_s)
            for paired in (False, True) if args.paired else (False,):
                pairs = [
                    p
                    for i, c in enumerate(chains)
                    for p in make_pairs(
                        c, total // len(chains) + 1, f"{tag}l{paired}{i}", args.payload_bytes
                    )
                ]
                pairs = pairs[:total]
                name = "latency_paired" if paired else "latency"
                with py_spy(node.proc.pid, profile if not paired else None):
                    phase(
                        name, lambda p=pairs, b=paired: open_loop(node.port, p, args.rate, b), total
                    )
                report[name]["offered_entries_per_s"] = args.rate
        for name, entries, batch in (
            ("sustained", args.entries, args.batch),
            ("single_calls", args.single_entries, 0),
        ):
            if entries <= 0:
                continue
            per = -(-entries // len(chains))
            # more than a few minutes of entries are signed as they are sent (memory)
            make: Any = make_pairs if per <= 50_000 else pair_stream
            per_client = [
                make(c, per, f"{tag}{name}{i}", args.payload_bytes) for i, c in enumerate(chains)
            ]
            phase(
                name, lambda p=per_client, b=batch: closed_loop(node.port, p, b), per * len(chains)
            )
        report["node_memory"] = node.memory_mib()
        report["heights"] = run(heights(node.port))
        if args.restart:
            restarts = []
            for _ in range(2):
                node.stop()
                restarts.append(round(node.start(), 2))
            report["restart_s"] = restarts
            print(f"  restart: {restarts} s", flush=True)
    finally:
        node.stop()
    return report


# -- replay filter rebuild ---------------------------------------------------------------------

_OPEN_CODE = """
import asyncio, sys, time
from ledger.core.clock import SystemClock
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.node.store import Store
settings = NodeSettings(data_dir=sys.argv[1])
store = Store(settings.db_path)
service = NodeService(settings, store, SystemClock())
started = time.perf_counter()
service.open()
print(round(time.perf_counter() - started, 3))
if hasattr(service, "save_commit_filter"):  # what a node leaves behind when it stops
    asyncio.run(service.save_commit_filter())
service.close()
"""


def filter_rebuild(
    args: argparse.Namespace, trees: dict[str, Path], data_dir: Path
) -> dict[str, Any]:
    """Seconds of ``NodeService.open()`` on a store of ``--filter-entries`` synthetic entries."""
    store_dir = data_dir / "filter"
    subprocess.run(
        [sys.executable, "-c", _OPEN_CODE, str(store_dir)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    conn = connect(store_dir / "node.sqlite")
    conn.execute("BEGIN")
    seq = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM journal").fetchone()[0]
    for at in range(0, args.filter_entries, 20_000):
        rows = []
        for i in range(at, min(at + 20_000, args.filter_entries)):
            rows.append((seq + 1, KIND_COMMIT, os.urandom(32), os.urandom(136), i))
            rows.append((seq + 2, KIND_REVEAL, os.urandom(32), os.urandom(250), i))
            seq += 2
        insert_rows(conn, INSERT_JOURNAL, rows)
    conn.execute("UPDATE dblocks SET floor_seq=?", (seq,))  # settled: start-up replays none
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()

    def open_s(root: Path) -> float:
        out = subprocess.run(
            [sys.executable, "-c", _OPEN_CODE, str(store_dir)],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            check=True,
            capture_output=True,
            text=True,
        )
        return float(out.stdout.split()[-1])

    result: dict[str, Any] = {"entries": args.filter_entries}
    for r in range(args.rounds):
        for name in list(trees) if r % 2 == 0 else list(trees)[::-1]:
            for snapshot in store_dir.glob("*.txfilter"):
                snapshot.unlink()  # a cold start: the full rebuild
            result.setdefault(f"{name}_open_s", []).append(open_s(trees[name]))
            if name == "current":  # its first open left a snapshot behind
                result.setdefault("current_with_snapshot_open_s", []).append(open_s(ROOT))
    print(f"filter rebuild: {json.dumps(result)}", flush=True)
    return result


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--entries", type=int, default=40_000, help="entries of the sustained phase")
    p.add_argument("--single-entries", type=int, default=3_000, help="entries, single-call phase")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (one chain each)")
    p.add_argument("--batch", type=int, default=32, help="commit+reveal pairs per JSON-RPC batch")
    p.add_argument("--rate", type=float, default=1000.0, help="offered entries/s, latency phase")
    p.add_argument("--latency-s", type=float, default=15.0, help="length of the latency phase")
    p.add_argument("--paired", action="store_true", help="also the latency phase with batches")
    p.add_argument("--block-time-s", type=float, default=6.0, help="node block time")
    p.add_argument("--payload-bytes", type=int, default=200, help="entry content bytes")
    p.add_argument("--floor-entries", type=int, default=10_000, help="entries of the cost floor")
    p.add_argument("--synchronous", default="FULL", help="SQLite synchronous of the node")
    p.add_argument("--baseline-root", type=Path, help="another source tree to compare with")
    p.add_argument("--rounds", type=int, default=0, help="rounds per tree (default 1, A/B 2)")
    p.add_argument("--restart", action="store_true", help="time restarts on the same data")
    p.add_argument("--filter-entries", type=int, default=0, help="replay filter rebuild only")
    p.add_argument("--node-env", action="append", default=[], help="KEY=VALUE for the node")
    p.add_argument(
        "--profile", type=Path, help="py-spy output (.svg or .json) of the latency phase"
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    args.rounds = args.rounds or (2 if args.baseline_root else 1)
    return args


def median_of(rounds: list[dict[str, Any]], *path: str) -> float | None:
    values = []
    for r in rounds:
        value: Any = r
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            values.append(value)
    return round(statistics.median(values), 2) if values else None


def summarize(report: dict[str, Any], floor: dict[str, Any] | None) -> dict[str, Any]:
    """Per tree: the medians over its rounds of the headline figures, and the goals met."""
    summary: dict[str, Any] = {}
    for tree, rounds in report["rounds"].items():
        sustained = median_of(rounds, "sustained", "entries_per_s")
        sustained_cpu = median_of(rounds, "sustained", "node_cpu_us_per_entry")
        p99 = median_of(rounds, "latency", "latency_per_call", "p99_ms")
        summary[tree] = {
            "latency_p50_ms": median_of(rounds, "latency", "latency_per_call", "p50_ms"),
            "latency_p99_ms": p99,
            "latency_achieved_entries_per_s": median_of(
                rounds, "latency", "achieved_entries_per_s"
            ),
            "latency_cpu_us_per_entry": median_of(rounds, "latency", "node_cpu_us_per_entry"),
            "sustained_entries_per_s": sustained,
            "sustained_cpu_us_per_entry": sustained_cpu,
            # sustained rate over the floor's rate; on a busy machine the two were measured
            # under different loads, so also CPU per entry, floor over node
            "floor_ratio": round(sustained / floor["entries_per_s"], 3)
            if sustained and floor
            else None,
            "floor_ratio_cpu": round(floor["cpu_us_per_entry"] / sustained_cpu, 3)
            if sustained_cpu and floor
            else None,
            "rss_mib": median_of(rounds, "node_memory", "VmRSS_mib"),
            "peak_rss_mib": median_of(rounds, "node_memory", "VmHWM_mib"),
            "p99_under_50_ms": None if p99 is None else p99 < LATENCY_GOAL_MS,
            "sustains_3000_per_s": None if sustained is None else sustained >= SUSTAINED_GOAL,
        }
    return summary


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    trees = {"current": ROOT}
    if args.baseline_root:
        trees["baseline"] = args.baseline_root.resolve()
    report: dict[str, Any] = {"rounds": {name: [] for name in trees}}
    floor = None
    with tempfile.TemporaryDirectory(prefix="node-ingest-") as tmp:
        data_dir = Path(tmp)
        if args.filter_entries:
            report["filter_rebuild"] = filter_rebuild(args, trees, data_dir)
        else:
            if args.floor_entries:
                pairs = make_pairs(bytes(32), args.floor_entries, "floor", args.payload_bytes)
                floor = cost_floor(pairs, args.batch * args.clients, data_dir)
                report["cost_floor"] = floor
                print(f"cost floor (no server, one core): {floor}", flush=True)
            order = list(trees)
            for r in range(args.rounds):
                for name in order if r % 2 == 0 else order[::-1]:
                    print(f"round {r + 1}, {name} ({trees[name]})", flush=True)
                    node = Node(trees[name], data_dir / f"{name}-{r}", args)
                    profile = args.profile if name == "current" and r == 0 else None
                    report["rounds"][name].append(run_round(node, args, profile))
                    shutil.rmtree(node.data_dir, ignore_errors=True)
            report["summary"] = summarize(report, floor)
    report["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for name, figures in report.get("summary", {}).items():
        print(f"{name}: {json.dumps(figures)}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
