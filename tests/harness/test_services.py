"""The process harness itself: services come back over their data, nothing outlives it."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import httpx
import pytest

from tests.harness.processes import child_env, settings_env
from tests.harness.services import LedgerProcesses
from tests.harness.waiting import WaitTimeout, wait_until

pytestmark = pytest.mark.e2e

#: A process that starts a grandchild, prints the grandchild's pid, and waits.
PARENT_OF_SLEEPER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
    "print('grandchild', child.pid, flush=True)\n"
    "time.sleep(300)\n"
)


def _running(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "Z" not in state.split()[1:2]


def _height(url: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "heights"}
    return int(httpx.post(url, json=body, timeout=5).json()["result"]["directoryblockheight"])


def test_settings_become_the_environment_their_class_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.stack import Stack, StackSettings
    from ledger.wallet.settings import WalletSettings

    wired = Stack(StackSettings(data_dir=tmp_path, wallet_port=18089)).wallet_settings()
    env = settings_env(wired)
    assert env["NOTARY_WALLET_PORT"] == "18089"
    assert "NOTARY_WALLET_PASSPHRASE" not in env  # unset: the default applies
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert WalletSettings() == wired  # secrets and lists included


def test_a_killed_service_restarts_over_its_data_and_nothing_outlives_the_harness(
    tmp_path: Path,
) -> None:
    pids: list[int] = []
    with (
        pytest.raises(RuntimeError, match="the test failed here"),
        LedgerProcesses(tmp_path / "ledger") as ledger,
    ):
        with contextlib.suppress(WaitTimeout):  # checked just below
            wait_until(lambda: _height(ledger.node_url) >= 2, 30, 0.1)
        before = _height(ledger.node_url)
        assert before >= 2
        killed = ledger.process("node").pid
        assert ledger.kill9("node") and not ledger.alive("node")
        assert not ledger.kill9("node")  # already dead: nothing hit
        ledger.restart("node")
        assert ledger.process("node").pid != killed
        assert _height(ledger.node_url) >= before  # the saved blocks are still there
        assert ledger.kills() == {"node": 1, "wallet": 0, "api": 0}

        parent = ledger.launch("parent", [sys.executable, "-c", PARENT_OF_SLEEPER], child_env())
        with contextlib.suppress(WaitTimeout):  # the parse below fails if it never came
            wait_until(lambda: "grandchild" in parent.log_tail(), 30)
        grandchild = int(parent.log_tail().split("grandchild")[1].split()[0])
        pids = [ledger.process(name).pid or 0 for name in ledger.names]
        pids += [parent.pid or 0, grandchild]
        assert all(_running(pid) for pid in pids)
        raise RuntimeError("the test failed here")
    with contextlib.suppress(WaitTimeout):  # the orphaned grandchild is reaped by init
        wait_until(lambda: not any(_running(pid) for pid in pids), 10)
    assert not [pid for pid in pids if _running(pid)], "a process outlived the harness"
