"""Fault: the publishing API's entry credit address runs dry under load, then is funded.

The API pays with an address of its own, bought a few credits' worth through the wallet
(a coin transaction from the development network's funded coin address). Writer threads
append entries through the REST API without pause; the credits run out in the middle of
the load. Proven:

1. every write is answered ``202``, also while the address is dry;
2. the API says so: its credit status turns ``funded: false`` (``dry_since``, the balance,
   the queue), the log says it once, and the writes accepted meanwhile stay at
   ``multi_az`` on read, with no attempt used, and none of them reaches a block;
3. once the address is funded again (credits bought while the writers go on), the API
   notices by itself (balance look-ups with back-off) and logs it once;
4. every write answered ``202`` reaches ``ledger`` in the API and is in the node's entry
   blocks exactly once (``LedgerAudit``: every block read and its links checked).

Figures printed (``-s``): writes accepted in all and while unfunded, the time from the
funding to the API noticing it and to every write at ``ledger``. The CI test keeps the
address dry for a few seconds; ``-m slow`` for half a minute under more writers.
"""

from __future__ import annotations

import base64
import logging
import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from ledger import devnet
from ledger.api.app import services_of
from ledger.api.models import EntryRow
from ledger.api.services import Services
from tests.harness.metrics import Samples
from tests.harness.waiting import wait_until
from tests.reliability.ledger_audit import LedgerAudit

from .fault_stack import FaultStack, rpc

pytestmark = pytest.mark.e2e

#: Credits of a new chain whose first entry is under 1 KiB (docs/formats.md §1.4).
CHAIN_CREDITS = 11


@dataclass
class Writes:
    """Entries answered ``202`` (entry hash hex -> Unix time of the answer), and the rest."""

    acked: dict[str, float] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def write_loop(url: str, key: str, tag: str, writes: Writes, stop: threading.Event) -> None:
    """Append small entries (one credit each) one after the other until ``stop``."""
    rng = random.Random(tag)
    with httpx.Client(timeout=30.0, headers={"user-key": key}) as http:
        number = 0
        while not stop.is_set():
            body = {
                "external_ids": [_b64(tag.encode()), _b64(str(number).encode())],
                "content": _b64(rng.randbytes(rng.randrange(200))),
            }
            number += 1
            response = http.post(url, json=body)
            with writes.lock:
                if response.status_code == 202:
                    writes.acked[response.json()["entry_hash"]] = time.time()
                else:
                    writes.unexpected.append(f"{response.status_code} {response.text[:200]}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def wallet(fs: FaultStack, method: str, params: dict[str, Any] | None = None) -> Any:
    answer = rpc(fs.settings.wallet_url, method, params)
    assert "result" in answer, (method, answer)
    return answer["result"]


def buy_credits(fs: FaultStack, ec_address: str, credits: int) -> None:
    """Buy ``credits`` for ``ec_address`` with the development coins; returns once the node
    has acknowledged the transaction (the balance counts it from then on)."""
    rate = rpc(fs.settings.node_url, "entry-credit-rate")["result"]["rate"]
    name = f"buy-{time.monotonic_ns()}"
    coins = devnet.DEV_FCT_ADDRESS
    wallet(fs, "new-transaction", {"tx-name": name})
    wallet(fs, "add-input", {"tx-name": name, "address": coins, "amount": credits * rate})
    wallet(fs, "add-ec-output", {"tx-name": name, "address": ec_address, "amount": credits * rate})
    wallet(fs, "add-fee", {"tx-name": name, "address": coins})
    wallet(fs, "sign-transaction", {"tx-name": name})
    request = wallet(fs, "compose-transaction", {"tx-name": name})
    answer = rpc(fs.settings.node_url, request["method"], request["params"])
    assert "result" in answer, answer


def api_rows(svc: Services) -> dict[str, int]:
    """Rows of the API database per ``stage`` (and ``max_attempts``)."""
    with svc.db.read() as session:
        counts = dict(
            session.execute(select(EntryRow.stage, func.count()).group_by(EntryRow.stage)).all()
        )
        counts["max_attempts"] = session.scalar(select(func.max(EntryRow.attempts))) or 0
    return counts


def funded_latency_s(svc: Services, *, before: float) -> float:
    """Median seconds from ``202`` to ``ledger`` of the writes accepted before ``before``
    (Unix time): the same run's baseline, while the address paid."""
    query = select(EntryRow.ledger_at - EntryRow.created_at).where(
        EntryRow.created_at < before, EntryRow.ledger_at.is_not(None)
    )
    with svc.db.read() as session:
        return float(statistics.median(session.scalars(query).all()))


@dataclass
class DryFigures:
    """What one run measured (printed)."""

    accepted: int
    accepted_unfunded: int
    held_at_most: int
    noticed_s: float
    caught_up_s: float
    baseline_latency_s: float
    missing: int
    duplicates: int


def run_dry(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    *,
    writers: int,
    paid_entries: int,
    dry_s: float,
    writing_after_funding_s: float,
) -> DryFigures:
    caplog.set_level(logging.INFO, logger="ledger.api.outbox.credit_gate")
    overrides = {"credit_retry_base_s": 0.25, "credit_retry_max_s": 2.0}
    with FaultStack(tmp_path / "data", api_overrides=overrides) as fs:
        ec = wallet(fs, "generate-ec-address")["public"]
        buy_credits(fs, ec, CHAIN_CREDITS + paid_entries)
        fs.stop_api()
        fs.start_api(ec_address=ec)  # the API now pays with this address
        assert fs.api_app is not None
        svc = services_of(fs.api_app)
        headers = {"user-key": fs.api_key}
        chain = httpx.post(
            f"{fs.settings.api_url}/chains",
            json={"external_ids": [_b64(b"credits dry")]},
            headers=headers,
            timeout=30,
        )
        assert chain.status_code == 202, chain.text
        chain_id, first = chain.json()["chain_id"], chain.json()["entry_hash"]

        writes, stop = Writes(), threading.Event()
        url = f"{fs.settings.api_url}/chains/{chain_id}/entries"
        threads = [
            threading.Thread(
                target=write_loop, args=(url, fs.api_key, f"w{i}", writes, stop), daemon=True
            )
            for i in range(writers)
        ]
        for thread in threads:
            thread.start()
        try:
            # 1-2. the credits run out under load; the writes go on
            wait_until(lambda: not svc.credit_status().funded, 60, what="the address to run dry")
            time.sleep(dry_s)
            held = svc.credit_status()
            assert not held.funded and held.dry_since is not None
            assert held.queued_writes > 0 and held.balance_ec is not None
            assert held.balance_ec < 1 + CHAIN_CREDITS
            rows = api_rows(svc)
            assert rows["max_attempts"] == 0, rows  # holding used no attempt
            with writes.lock:
                dry_acked = [h for h, t in writes.acked.items() if t >= held.dry_since]
            assert dry_acked, "no write was accepted while the address was dry"
            with httpx.Client(headers=headers, timeout=30) as http:
                for entry_hash in random.Random(0).sample(dry_acked, min(20, len(dry_acked))):
                    body = http.get(f"{url}/{entry_hash}").json()
                    assert body["stage"] == "multi_az" and "failure" not in body, body
            with LedgerAudit(fs.settings.node_url) as early:
                early.scan()
                on_ledger = {h.hex() for h in early.entries}
            assert not on_ledger & set(dry_acked), "a held write reached a block"
            # the dry state is loud: readiness and metrics say so too
            base = fs.settings.api_url.removesuffix("/v1")
            readiness = httpx.get(f"{base}/health/ready", timeout=30)
            assert readiness.status_code == 503, readiness.text
            checks = {c["name"]: c for c in readiness.json()["checks"]}
            assert not checks["entry_credits"]["ok"], checks["entry_credits"]
            assert "dry" in checks["entry_credits"]["detail"]
            metrics = Samples.parse(httpx.get(f"{base}/metrics", timeout=30).text)
            assert metrics.value("notary_api_entry_credits_funded") == 0
            assert metrics.value("notary_api_entry_credits_dry_seconds") > 0

            # 3. funded again while the writers go on
            funded_at = time.time()  # the funding transaction is sent now
            buy_credits(fs, ec, 1_000_000)
            wait_until(lambda: svc.credit_status().funded, 30, what="the API to notice")
            noticed_s = time.time() - funded_at
            time.sleep(writing_after_funding_s)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        assert not writes.unexpected, writes.unexpected[:5]
        unfunded = sum(1 for t in writes.acked.values() if held.dry_since <= t < funded_at)

        # 4. every 202 in the API at ledger, and in the node's blocks exactly once
        every = set(writes.acked) | {first}

        def caught_up() -> bool:
            rows = api_rows(svc)
            return rows.get("ledger", 0) + rows.get("anchor", 0) == len(every)

        wait_until(caught_up, 120, what=lambda: f"every write at ledger: {api_rows(svc)}")
        caught_up_s = time.time() - funded_at
        with LedgerAudit(fs.settings.node_url) as audit:
            missing = audit.wait_for({bytes.fromhex(h) for h in every}, timeout_s=60)
            duplicates = audit.duplicates()
        assert not missing and not duplicates, (len(missing), len(duplicates))
        assert api_rows(svc)["max_attempts"] == 0
        assert svc.credit_status().queued_writes == 0
        funded_again = Samples.parse(httpx.get(f"{base}/metrics", timeout=30).text)
        assert funded_again.value("notary_api_entry_credits_funded") == 1
        baseline_s = funded_latency_s(svc, before=held.dry_since)
    changes = [
        (r.levelname, r.getMessage().split(":")[0])
        for r in caplog.records
        if r.name == "ledger.api.outbox.credit_gate"
    ]
    assert [level for level, _ in changes] == ["WARNING", "INFO"], changes
    figures = DryFigures(
        accepted=len(writes.acked),
        accepted_unfunded=unfunded,
        held_at_most=held.queued_writes,
        noticed_s=round(noticed_s, 2),
        caught_up_s=round(caught_up_s, 2),
        baseline_latency_s=round(baseline_s, 2),
        missing=len(missing),
        duplicates=len(duplicates),
    )
    print(
        f"\ncredits dry ({writers} writers, {paid_entries} entries paid for, dry "
        f"{dry_s:.0f} s): {figures.accepted} writes accepted, {figures.accepted_unfunded} of "
        f"them while unfunded ({figures.held_at_most} held at the status check); funding "
        f"(from sending its transaction) noticed after {figures.noticed_s} s, every write at ledger {figures.caught_up_s} s "
        f"after funding (baseline: median 202-to-ledger {figures.baseline_latency_s} s of the "
        f"writes paid before the drain); missing {figures.missing}, duplicates "
        f"{figures.duplicates}"
    )
    return figures


def test_writes_are_held_while_the_address_is_dry_and_all_land_once_funded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_dry(tmp_path, caplog, writers=2, paid_entries=40, dry_s=3, writing_after_funding_s=1)


@pytest.mark.slow
def test_half_a_minute_dry_under_more_writers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_dry(tmp_path, caplog, writers=4, paid_entries=300, dry_s=30, writing_after_funding_s=5)
