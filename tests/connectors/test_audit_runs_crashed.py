"""Runs that die are closed: a run whose process was killed, or whose heartbeat stopped,
is marked ``crashed`` by the next run, with the reason, and listed for reports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import update

from connectors.audit import AuditStore
from connectors.audit.sql import runs_table
from flows.run_heartbeat import RunHeartbeat
from ledger.core.clock import ManualClock

START_S = 1_780_000_000.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_S)


def test_a_run_killed_with_sigkill_is_marked_crashed_by_the_next_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'audit.sqlite'}"
    AuditStore(url).close()  # migrated once, here
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from connectors.audit import AuditStore
                store = AuditStore({url!r})
                print(store.runs.start("notarize_folder", parameters={{"folder": "/x"}}))
                sys.stdout.flush()
                time.sleep(120)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    killed_id = int(child.stdout.readline())
    with AuditStore(url) as store:
        assert store.runs.get(killed_id)["status"] == "running"  # type: ignore[index]
        assert store.runs.close_crashed() == []  # alive: left running
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)

        next_id = store.runs.start("collect_proofs")

        killed = store.runs.get(killed_id)
        assert killed is not None and killed["status"] == "crashed"
        assert killed["pid"] == child.pid and killed["finished_at"] is not None
        assert killed["counts"] == {"crashed": f"process {child.pid} on {killed['host']} is gone"}
        assert store.runs.get(next_id)["status"] == "running"  # type: ignore[index]
        (listed,) = store.runs.crashed()
        assert listed["id"] == killed_id and listed["flow"] == "notarize_folder"
        assert "is gone" in listed["reason"]


def test_a_run_of_another_host_is_crashed_once_its_heartbeat_is_stale(
    store: AuditStore, clock: ManualClock
) -> None:
    elsewhere = store.runs.start("notarize_table")
    with store.engine.begin() as conn:  # as a worker on another machine records it
        conn.execute(
            update(runs_table).where(runs_table.c.id == elsewhere).values(host="worker-7", pid=1)
        )
    clock.advance(200)
    store.runs.heartbeat(elsewhere)
    clock.advance(200)  # 200 s since its last beat: alive
    assert store.runs.close_crashed(stale_after_s=300) == []
    clock.advance(101)
    assert store.runs.close_crashed(stale_after_s=300) == [elsewhere]
    run = store.runs.get(elsewhere)
    assert run is not None and run["status"] == "crashed"
    assert run["counts"]["crashed"].startswith("no heartbeat from worker-7 since ")
    assert store.runs.close_crashed(stale_after_s=300) == []  # closed once
    store.runs.heartbeat(elsewhere)  # a late beat does not reopen it
    assert store.runs.get(elsewhere)["status"] == "crashed"  # type: ignore[index]


def test_a_finished_run_and_this_process_s_runs_are_never_crashed(
    store: AuditStore, clock: ManualClock
) -> None:
    done = store.runs.start("notarize_folder")
    store.runs.finish(done, counts={"published": 1})
    mine = store.runs.start("watch")
    assert store.runs.close_crashed(is_alive=lambda _pid: False) == []
    clock.advance(10_000)
    assert store.runs.close_crashed(stale_after_s=300) == [mine]  # stale all the same
    assert store.runs.get(done)["status"] == "completed"  # type: ignore[index]


def test_the_heartbeat_thread_renews_the_run_until_stopped(
    store: AuditStore, clock: ManualClock
) -> None:
    run_id = store.runs.start("notarize_folder")
    first = store.runs.get(run_id)["heartbeat_at"]  # type: ignore[index]
    clock.advance(60)
    with RunHeartbeat(store, run_id, interval_s=0.05):
        deadline = time.monotonic() + 5
        while store.runs.get(run_id)["heartbeat_at"] == first:  # type: ignore[index]
            assert time.monotonic() < deadline, "no heartbeat recorded"
            time.sleep(0.02)
    beat = store.runs.get(run_id)["heartbeat_at"]  # type: ignore[index]
    assert (beat - first).total_seconds() == 60
    clock.advance(60)
    time.sleep(0.2)  # stopped: no more beats
    assert store.runs.get(run_id)["heartbeat_at"] == beat  # type: ignore[index]
    with pytest.raises(ValueError):
        RunHeartbeat(store, run_id, interval_s=0)


def test_processes_of_this_host_are_told_alive_or_gone() -> None:
    from connectors.audit.runs import process_alive

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert process_alive(os.getpid())
    assert not process_alive(int(done.stdout))
