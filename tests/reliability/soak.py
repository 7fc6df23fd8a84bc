"""Soak: a steady write load at half the measured capacity, with faults, for minutes on end.

Usage (``make soak``; not part of CI)::

    python -m tests.reliability.soak [--minutes 10] [--rate N] [--fault-every 60]

1. Starts node, wallet, publishing API and anchoring as separate processes
   (``tests.harness.services.LedgerProcesses``, SQLite ``synchronous=FULL``, 0.5 s blocks).
2. Measures capacity: unpaced writers POST entries through the REST API for
   ``--probe-seconds``; the soak rate is half the accepted writes per second (or ``--rate``).
3. Paced writers hold that rate for ``--minutes`` while a fault is injected every
   ``--fault-every`` seconds, rotating through: SIGKILL of the node, of the wallet, of the
   API (each restarted after a pause), and the node stopped for ``--outage-seconds``.
4. Every 5 s the RSS of each service process is sampled.
5. At the end, waits until every write the API answered 202 is in the node's blocks and
   checks: none missing, none twice, every block links (``LedgerAudit``).

Memory is "flat" when, for each service process that lived at least three minutes, the
RSS of its last minute is within 15 % (plus 10 MiB) of its RSS one minute after it
started. Writes the figures to ``bench/results/soak.json`` and exits 1 on any lost or
duplicated write, broken link or memory growth.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ledger.core.entry import Entry
from tests.harness.services import LedgerProcesses, entry_body
from tests.reliability.ledger_audit import LedgerAudit

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "soak.json"
SAMPLE_EVERY_S = 5.0
KILLABLE = ("node", "wallet", "api")


@dataclass
class Load:
    """What the writers sent and what the API acknowledged (shared between threads)."""

    acked: set[bytes] = field(default_factory=set)
    latencies_ms: list[float] = field(default_factory=list)
    refused: int = 0  # 429/503 and connection errors: the write was sent again
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _post(http: httpx.Client, url: str, entry: Entry, load: Load, stop: threading.Event) -> None:
    """POST until answered 202 (a refused or unanswered write is sent again: the entry
    hash makes a repeat harmless, and the ledger check proves it)."""
    while not stop.is_set():
        started = time.perf_counter()
        try:
            response = http.post(url, json=entry_body(entry))
        except httpx.TransportError:
            with load.lock:
                load.refused += 1
            stop.wait(0.1)
            continue
        if response.status_code == 202:
            with load.lock:
                load.acked.add(entry.hash())
                load.latencies_ms.append((time.perf_counter() - started) * 1000)
            return
        if response.status_code in (429, 503):
            with load.lock:
                load.refused += 1
            stop.wait(0.05)
            continue
        with load.lock:
            load.unexpected.append(f"{response.status_code} {response.text[:200]}")
        return


def _writer(
    ledger: LedgerProcesses,
    chain_id: bytes,
    load: Load,
    stop: threading.Event,
    rate: float | None,
    seed: int,
) -> None:
    """Append to ``chain_id`` at ``rate`` writes/s (``None``: as fast as answered)."""
    rng = random.Random(seed)
    url = f"{ledger.api_url}/chains/{chain_id.hex()}/entries"
    tag = f"soak-{seed}".encode()
    next_at = time.monotonic()
    with httpx.Client(timeout=10.0, headers={"user-key": ledger.api_key}) as http:
        number = 0
        while not stop.is_set():
            if rate is not None:
                next_at += 1.0 / rate
                delay = next_at - time.monotonic()
                if delay > 0:
                    stop.wait(delay)
                elif delay < -1.0:
                    next_at = time.monotonic()  # after an outage: no burst to catch up
            entry = Entry(chain_id, (tag, str(number).encode()), rng.randbytes(rng.randrange(256)))
            number += 1
            _post(http, url, entry, load, stop)


def _chains(ledger: LedgerProcesses, count: int, load: Load) -> list[bytes]:
    never = threading.Event()
    chains = []
    with httpx.Client(timeout=10.0, headers={"user-key": ledger.api_key}) as http:
        for index in range(count):
            first = Entry.first_entry(
                (b"soak", str(time.time()).encode(), str(index).encode()), b""
            )
            _post(http, f"{ledger.api_url}/chains", first, load, never)
            chains.append(first.chain_id)
    return chains


def _run_writers(
    ledger: LedgerProcesses,
    chains: list[bytes],
    load: Load,
    *,
    seconds: float,
    rate: float | None,
    during: Callable[[threading.Event], threading.Thread] | None = None,
) -> None:
    """Run one writer per chain for ``seconds``; ``during(stop)`` starts a side thread
    (the fault injector) that is joined before this returns."""
    stop = threading.Event()
    per_writer = None if rate is None else rate / len(chains)
    threads = [
        threading.Thread(
            target=_writer, args=(ledger, chain, load, stop, per_writer, i), daemon=True
        )
        for i, chain in enumerate(chains)
    ]
    for thread in threads:
        thread.start()
    side = during(stop) if during is not None else None
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(30)
    if side is not None:
        side.join()  # a fault in progress ends with its service restarted


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@dataclass
class Lifetime:
    """RSS samples of one run of one service: (seconds since soak start, MiB)."""

    service: str
    pid: int
    samples: list[tuple[float, float]] = field(default_factory=list)

    def growth(self) -> tuple[float, float] | None:
        """(RSS one minute in, mean RSS of the last minute) for runs of 3 min or more."""
        if not self.samples or self.samples[-1][0] - self.samples[0][0] < 180:
            return None
        start = self.samples[0][0]
        early = [m for t, m in self.samples if 60 <= t - start < 70]
        late = [m for t, m in self.samples if t >= self.samples[-1][0] - 60]
        if not early or not late:
            return None
        return early[0], sum(late) / len(late)


class Faults:
    """Injects one fault every ``every_s`` seconds, rotating; samples RSS meanwhile."""

    def __init__(self, ledger: LedgerProcesses, every_s: float, outage_s: float) -> None:
        self.ledger, self.every_s, self.outage_s = ledger, every_s, outage_s
        self.log: list[str] = []
        self.lifetimes: list[Lifetime] = []
        self._current: dict[str, Lifetime] = {}
        self._started = time.monotonic()

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run ``run(stop)`` in a thread of its own; the thread."""
        thread = threading.Thread(target=self.run, args=(stop,), name="faults", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Sample RSS and inject faults until ``stop`` is set."""
        plan = [*(("kill", name) for name in KILLABLE), ("outage", "node")]
        next_fault = time.monotonic() + self.every_s
        turn = 0
        while not stop.is_set():
            self._sample()
            if time.monotonic() >= next_fault:
                kind, name = plan[turn % len(plan)]
                turn += 1
                self._inject(kind, name)
                next_fault = time.monotonic() + self.every_s
            stop.wait(SAMPLE_EVERY_S)

    def _inject(self, kind: str, name: str) -> None:
        at = round(time.monotonic() - self._started, 1)
        self.ledger.kill9(name)
        pause = self.outage_s if kind == "outage" else random.uniform(0.5, 3.0)
        time.sleep(pause)
        self.ledger.restart(name)
        self.log.append(f"{at:7.1f} s  {kind:6} {name} ({pause:.1f} s down)")
        print(f"  fault: {self.log[-1]}", flush=True)

    def _sample(self) -> None:
        now = time.monotonic() - self._started
        for name in self.ledger.names:
            pid = self.ledger.process(name).pid
            rss = None if pid is None else _rss_mib(pid)
            if pid is None or rss is None:
                continue
            life = self._current.get(name)
            if life is None or life.pid != pid:
                life = Lifetime(name, pid)
                self._current[name] = life
                self.lifetimes.append(life)
            life.samples.append((now, rss))


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=None, help="writes/s (default: half)")
    parser.add_argument("--probe-seconds", type=float, default=20.0)
    parser.add_argument("--fault-every", type=float, default=60.0, help="seconds")
    parser.add_argument("--outage-seconds", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    with (
        tempfile.TemporaryDirectory(prefix="notary-soak-") as tmp,
        LedgerProcesses(Path(tmp), anchor=True) as ledger,
    ):
        load = Load()
        chains = _chains(ledger, args.writers, load)
        rate = args.rate
        if rate is None:
            probe = Load()
            _run_writers(ledger, chains, probe, seconds=args.probe_seconds, rate=None)
            load.acked |= probe.acked
            capacity = len(probe.acked) / args.probe_seconds
            rate = capacity / 2
            print(f"capacity {capacity:.0f} writes/s; soaking at {rate:.0f}/s", flush=True)
        faults = Faults(ledger, args.fault_every, args.outage_seconds)
        soak = Load()
        started = time.monotonic()
        _run_writers(
            ledger,
            chains,
            soak,
            seconds=args.minutes * 60,
            rate=rate,
            during=faults.start,
        )
        elapsed = time.monotonic() - started
        acked = load.acked | soak.acked
        with LedgerAudit(ledger.node_url) as audit:
            missing = audit.wait_for(acked, timeout_s=120)
            duplicates = audit.duplicates()
        figures = _figures(args, rate, elapsed, soak, acked, missing, duplicates, faults)
    _print(figures, faults)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"figures written to {args.out}")
    failed = (
        figures["missing"]
        or figures["duplicates"]
        or figures["unexpected_answers"]
        or not figures["memory_flat"]
    )
    return 1 if failed else 0


def _figures(
    args: argparse.Namespace,
    rate: float,
    elapsed: float,
    soak: Load,
    acked: set[bytes],
    missing: set[bytes],
    duplicates: dict[bytes, int],
    faults: Faults,
) -> dict[str, Any]:
    memory = []
    flat = True
    for life in faults.lifetimes:
        growth = life.growth()
        if growth is None:
            continue
        early, late = growth
        ok = late <= early * 1.15 + 10
        flat &= ok
        memory.append(
            {"service": life.service, "pid": life.pid, "rss_1min_mib": round(early, 1)}
            | {"rss_last_min_mib": round(late, 1), "flat": ok}
        )
    return {
        "minutes": round(elapsed / 60, 2),
        "target_rate": round(rate, 1),
        "achieved_rate": round(len(soak.acked) / elapsed, 1),
        "writes_acknowledged": len(acked),
        "missing": len(missing),
        "duplicates": len(duplicates),
        "unexpected_answers": soak.unexpected[:20],
        "refused_and_resent": soak.refused,
        "p50_ms": round(_percentile(soak.latencies_ms, 0.5), 1),
        "p99_ms": round(_percentile(soak.latencies_ms, 0.99), 1),
        "faults": faults.log,
        "memory": memory,
        "memory_flat": flat,
        "args": {k: str(v) for k, v in vars(args).items()},
    }


def _print(figures: dict[str, Any], faults: Faults) -> None:
    print()
    for key in (
        "minutes",
        "target_rate",
        "achieved_rate",
        "writes_acknowledged",
        "missing",
        "duplicates",
        "refused_and_resent",
        "p50_ms",
        "p99_ms",
        "memory_flat",
    ):
        print(f"  {key:22} {figures[key]}")
    print(f"  {'faults injected':22} {len(faults.log)}")
    for row in figures["memory"]:
        print(
            f"  rss {row['service']:7} pid {row['pid']:<7} {row['rss_1min_mib']:7.1f} -> "
            f"{row['rss_last_min_mib']:7.1f} MiB {'flat' if row['flat'] else 'GROWING'}"
        )


if __name__ == "__main__":
    sys.exit(main())
