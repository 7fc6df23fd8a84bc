"""bench.pipeline_scale: the disk check, and a tiny run from files to every figure."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from unittest import mock

import pytest

from bench.common import RESULTS_DIR
from bench.pipeline_scale import check_space, main


def test_too_little_disk_stops_with_the_figures(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"need about [\d.]+ GiB under .* GiB free"):
        check_space(tmp_path, 10**12, 4096)


@pytest.mark.slow
@pytest.mark.e2e
def test_a_tiny_run_records_every_figure_and_cleans_up(tmp_path: Path) -> None:
    name = "pipeline_scale_smoke"
    args = ["--files", "20", "--per-dir", "7", "--modes", "clear", "--dir", str(tmp_path)]
    with mock.patch.dict(os.environ):  # the benchmark sets Prefect's defaults
        main([*args, "--results", name])
    path = RESULTS_DIR / f"{name}.json"
    try:
        [run] = json.loads(path.read_text())["runs"]
    finally:
        path.unlink()
    assert (run["mode"], run["files"]) == ("clear", 20)
    assert run["extra"]["complete"] and run["extra"]["receipts_verified"] == 20
    assert run["entries_published"] == 20  # mode unknown today: one entry per document
    assert run["entry_credits_spent"] >= 20
    assert run["floor_seconds"] > run["extra"]["block_time_s"] > 1.0
    assert run["ratio"] == pytest.approx(run["seconds"] / run["floor_seconds"], abs=0.01)
    assert {"chain", "hash", "publish", "ledger"} <= set(run["stage_seconds"])
    assert run["peak_rss_mb"] > 50 and run["stack_peak_rss_mb"] > 50
    assert list(tmp_path.iterdir()) == []  # files, data folders, Prefect's home: gone


def test_a_process_tree_counts_its_children() -> None:
    import subprocess
    import sys

    from bench.common import _proc_status_mb, process_cpu_s, process_rss_mb, process_tree

    script = "import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); print(c.pid, flush=True); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert process_tree(parent.pid) == [parent.pid, child]
        own = _proc_status_mb(parent.pid, "VmRSS:")
        total = process_rss_mb(parent.pid)
        assert total is not None and own is not None and total > own
        assert process_cpu_s(parent.pid) is not None
    finally:
        parent.kill()
        parent.wait()
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
