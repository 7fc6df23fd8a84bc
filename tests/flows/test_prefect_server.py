"""``notary up`` runs a Prefect server that the other commands find and reuse."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flows.cli.prefect_server import prepare_prefect, server_answers
from flows.settings import PipelineSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess
from tests.harness.servers import AppServer
from tests.harness.waiting import wait_until


@pytest.fixture
def clean_prefect_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)


@pytest.fixture
def health_server() -> Iterator[str]:
    """A stand-in Prefect API answering ``GET /api/health``; yields its API URL."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    app = Starlette(routes=[Route("/api/health", lambda _r: JSONResponse(True))])
    with AppServer(app) as server:
        yield f"{server.url}/api"


@pytest.mark.usefixtures("clean_prefect_env")
def test_commands_use_the_server_notary_up_wrote_when_it_answers(
    tmp_path: Path, health_server: str
) -> None:
    settings = PipelineSettings(data_dir=tmp_path)
    settings.prefect_api_url_file.write_text(health_server + "\n")
    assert prepare_prefect(settings) == health_server
    assert os.environ["PREFECT_API_URL"] == health_server


@pytest.mark.usefixtures("clean_prefect_env")
def test_a_stale_url_file_is_ignored(tmp_path: Path) -> None:
    settings = PipelineSettings(data_dir=tmp_path)
    settings.prefect_api_url_file.write_text(f"http://127.0.0.1:{free_port()}/api\n")
    assert prepare_prefect(settings) is None
    assert "PREFECT_API_URL" not in os.environ


def test_a_users_prefect_api_url_wins(
    tmp_path: Path, health_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.example:4200/api")
    settings = PipelineSettings(data_dir=tmp_path)
    settings.prefect_api_url_file.write_text(health_server + "\n")
    assert prepare_prefect(settings) == "http://prefect.example:4200/api"


# -- the real thing: `notary up` in a child process ----------------------------------------


def notary(*args: str, env: dict[str, str], timeout_s: float = 180) -> tuple[int, float, str]:
    """Run the ``notary`` command line; returns (exit code, wall seconds, output)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    return done.returncode, time.perf_counter() - start, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.e2e
def test_notarize_reuses_the_prefect_server_of_notary_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(20):
        (folder / f"f{i}.txt").write_text(f"document {i}\n")
    ports = {name: free_port() for name in ("NODE", "WALLET", "API", "ANCHOR")}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "NOTARY_"))}
    env |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    env |= {f"NOTARY_STACK_{name}_PORT": str(port) for name, port in ports.items()}
    env |= {
        "NOTARY_API_URL": f"http://127.0.0.1:{ports['API']}/v1",
        "NOTARY_NODE_URL": f"http://127.0.0.1:{ports['NODE']}/v2",
        "NOTARY_ANCHOR_URL": f"http://127.0.0.1:{ports['ANCHOR']}/v2",
    }
    prefect_port = free_port()
    up = ManagedProcess(
        "notary-up",
        [sys.executable, "-m", "flows.cli", "up", "--data-dir", str(data), "--block-time", "1"]
        + ["--prefect-port", str(prefect_port)],
        env,
        tmp_path / "up.log",
    )
    up.spawn()
    url_file = PipelineSettings(data_dir=data).prefect_api_url_file
    api_url = f"http://127.0.0.1:{prefect_port}/api"
    try:
        wait_until(url_file.exists, 180, 0.2, what="notary up to write the Prefect server's URL")
        assert url_file.read_text().strip() == api_url and server_answers(api_url)
        assert (data / "callback-secret").stat().st_mode & 0o777 == 0o600

        timings: dict[str, list[float]] = {"reused server": [], "temporary server": []}
        for run in range(2):
            code, seconds, output = notary(
                "notarize",
                str(folder),
                "--collection",
                f"c{run}",
                "--data-dir",
                str(data),
                env=env,
            )
            assert code == 0, output
            timings["reused server"].append(seconds)
        flow_runs = httpx.post(f"{api_url}/flow_runs/filter", json={}).json()
        assert sum(r["name"] and r["state_type"] == "COMPLETED" for r in flow_runs) >= 2

        url_file.rename(url_file.with_suffix(".hidden"))  # as without `--prefect`
        # A loaded 2-core machine needs more than Prefect's default 20 s to start one.
        env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "180"
        for run in range(2):
            code, seconds, output = notary(
                "notarize",
                str(folder),
                "--collection",
                f"t{run}",
                "--data-dir",
                str(data),
                env=env,
            )
            assert code == 0, output
            timings["temporary server"].append(seconds)
        url_file.with_suffix(".hidden").rename(url_file)
    finally:
        up.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):  # the check below fails then
            up.wait(60)
        up.kill9()  # anything still running
    assert up.returncode == 0, up.log_tail(chars=None)
    assert not url_file.exists() and not server_answers(api_url)
    with capsys.disabled():
        for what, values in timings.items():
            shown = ", ".join(f"{v:.1f} s" for v in values)
            print(f"\nnotary notarize (20 files, 1 s blocks), {what}: {shown}")
