"""How long ``notary backup`` copies a store, and what its writer feels meanwhile.

Usage: ``python -m bench.backup_pause [--mib 200] [--runs 3]``. Writes
``bench/results/backup_pause.json``. A WAL-mode store of about ``--mib`` MiB (set up as
the services' stores are, ``synchronous=FULL``) takes one small commit every 2 ms from a
writer thread; ``ledger.backup.take_backup`` copies it in the middle. Figures: the backup's
time and how long its read snapshot was held, and the writer's commit latency (median,
p99, slowest) during the backup beside the same figures in the seconds before it, in the
same run (the baseline). A writer that were blocked would show no commit during it.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import Figure, print_table, write_results
from ledger.backup import StoreSpec, take_backup

_ROW_BYTES = 4000


def make_store(path: Path, mib: int) -> sqlite3.Connection:
    """A WAL store of about ``mib`` MiB, checkpointed; the writer's connection."""
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body BLOB)")
    row = os.urandom(_ROW_BYTES)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (?, ?)", ((i, row) for i in range(mib * 256)))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return conn


def one_run(root: Path, mib: int) -> dict[str, float]:
    store = root / "data" / "node" / "node.sqlite"
    conn = make_store(store, mib)
    commits: list[tuple[float, float]] = []
    stop = threading.Event()

    def writer() -> None:
        n = 10**9
        while not stop.is_set():
            started = time.perf_counter()
            conn.execute("INSERT INTO t VALUES (?, ?)", (n, b"x" * 200))
            commits.append((started, time.perf_counter()))
            n += 1
            stop.wait(0.002)

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(3.0)
    began = time.perf_counter()
    spec = StoreSpec.sqlite("node", "node/node.sqlite", store)
    report = take_backup([spec], root / "backup", data_dir=root / "data")
    ended = time.perf_counter()
    time.sleep(1.0)
    stop.set()
    thread.join()
    conn.close()
    before = [end - start for start, end in commits if end < began]
    during = [end - start for start, end in commits if start < ended and end > began]
    record = report.manifest.stores[0]
    return {
        "store_mib": record.size / 2**20,
        "backup_s": ended - began,
        "snapshot_s": record.copy_s or 0.0,
        "commits_during": len(during),
        "median_during_ms": statistics.median(during) * 1000,
        "median_before_ms": statistics.median(before) * 1000,
        "p99_during_ms": _p99(during) * 1000,
        "p99_before_ms": _p99(before) * 1000,
        "max_during_ms": max(during) * 1000,
        "max_before_ms": max(before) * 1000,
    }


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.99 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.backup_pause")
    parser.add_argument("--mib", type=int, default=200, help="store size, MiB")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="backup-pause-") as folder:
            runs.append(one_run(Path(folder), args.mib))
    worst = {key: max(run[key] for run in runs) for key in runs[0]}
    mib = runs[0]["store_mib"]

    def during_before(label: str, key: str, **extra: Any) -> Figure:
        """Commit latency ``key`` during the backup against before it (worst run)."""
        return Figure(
            f"{label} commit during / before",
            worst[f"{key}_during_ms"],
            "ms",
            baseline=worst[f"{key}_before_ms"],
            baseline_name="before the backup",
            higher_is_better=False,
            extra=extra,
        )

    figures = [
        Figure("backup of the store", worst["backup_s"], "s", extra={"store_mib": mib}),
        Figure("read snapshot held", worst["snapshot_s"], "s", higher_is_better=False),
        Figure(
            "commits during the backup (a blocked writer makes none)",
            min(run["commits_during"] for run in runs),
            "commits",
        ),
        during_before("median", "median"),
        during_before("p99", "p99"),
        during_before("slowest", "max", runs=runs),
    ]
    print_table(f"notary backup of a {mib:.0f} MiB live store (worst of {args.runs})", figures)
    print(write_results("backup_pause", figures))


if __name__ == "__main__":
    main()
