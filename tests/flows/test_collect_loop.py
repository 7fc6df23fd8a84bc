"""The collector loop of ``notary collect --listen``: back-off schedule and wake-ups.

The sweep itself (``collect_proofs``) is replaced by a scripted stand-in: these tests are
about when the loop sweeps, not what a sweep does (``test_collect_callbacks.py`` runs the
real thing).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import flows.collect_proofs as collect_module
from connectors.errors import ServiceUnavailable
from flows.collect_proofs import collect_until_stopped
from flows.settings import PipelineSettings


def result(*, recorded: int = 0, waiting: int = 0, anchored: int = 0) -> dict[str, Any]:
    return {
        "ledger_recorded": recorded,
        "ledger_waiting": waiting,
        "receipts_rejected": 0,
        "anchored": anchored,
        "anchor_blocks_waiting": 0,
        "errors": [],
    }


class Script:
    """Stands in for ``collect_proofs``: returns (or raises) the scripted outcomes in turn,
    then sets ``stop``."""

    def __init__(self, outcomes: list[Any], stop: threading.Event) -> None:
        self.outcomes, self.stop, self.calls = list(outcomes), stop, 0

    def __call__(self, settings: PipelineSettings, collection: str | None) -> dict[str, Any]:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if not self.outcomes:
            self.stop.set()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def test_pause_doubles_while_entries_wait_and_resets_after_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    stop = threading.Event()
    down = ServiceUnavailable("node down")
    script = Script(
        [
            result(waiting=5),  # nothing moved: 2 -> 4
            result(waiting=5),  # 4 -> 8
            down,  # a failed sweep backs off too: 8 -> 10 (the cap)
            result(waiting=5),  # stays at the cap
            result(recorded=3, waiting=2),  # progress: back to the first interval
            result(),  # nothing waits: the longest pause (a callback or the tick ends it)
        ],
        stop,
    )
    pauses: list[float] = []

    def record_pause(delay_s: float, *, stop: threading.Event, wake: threading.Event) -> bool:
        pauses.append(delay_s)
        return False

    monkeypatch.setattr(collect_module, "collect_proofs", script)
    monkeypatch.setattr(collect_module, "_pause", record_pause)
    settings = PipelineSettings(
        data_dir=tmp_path, collect_first_interval_s=2, collect_interval_s=10
    )

    totals = collect_until_stopped(settings, stop=stop)

    assert pauses == [4, 8, 10, 10, 2, 10]
    assert totals.sweeps == 5 and totals.failed_sweeps == 1 and totals.ledger_recorded == 3
    assert totals.errors == ["sweep failed: node down"]


def test_a_wake_sweeps_at_once_and_stopping_is_not_counted_as_a_callback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    stop, wake = threading.Event(), threading.Event()
    sweeps: list[tuple[float, bool]] = []
    script = Script([result(), result(recorded=1), result()], threading.Event())

    def on_sweep(outcome: dict[str, Any], woken: bool) -> None:
        sweeps.append((time.monotonic(), woken))
        if len(sweeps) == 1:
            wake.set()  # a callback arrives during the pause after the first sweep
        elif len(sweeps) == 2:
            stop.set()
            wake.set()  # what the signal handler does: ends the pause at once

    monkeypatch.setattr(collect_module, "collect_proofs", script)
    settings = PipelineSettings(
        data_dir=tmp_path, collect_first_interval_s=60, collect_interval_s=60
    )
    start = time.monotonic()
    totals = collect_until_stopped(settings, stop=stop, wake=wake, on_sweep=on_sweep)

    assert [woken for _at, woken in sweeps] == [False, True]
    assert sweeps[1][0] - start < 5, "the wake-up did not wait for the 60 s pause"
    assert time.monotonic() - start < 5, "stopping did not end the pause"
    assert totals.sweeps == 2 and totals.woken_by_callback == 1


def test_listening_without_the_apis_callback_secret_is_a_usage_error(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from flows.cli import app

    (tmp_path / "api-key").write_text("key\n")
    result = CliRunner().invoke(app, ["collect", "--listen", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "no callback secret" in result.output and "notary up" in result.output
