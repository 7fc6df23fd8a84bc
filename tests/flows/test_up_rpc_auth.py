"""``notary up --rpc-user --rpc-password-file``: locked JSON-RPC services, found by the pipeline.

``notary up`` runs as a subprocess on free ports. With a user and a password file, the
node, wallet and anchoring service refuse requests without them (401) and answer with
them; the credentials are in ``<data_dir>/rpc-credentials`` (0600), where the pipeline's
``NodeClient`` and ``AnchorClient`` find them; the password is in none of the output.
Started again with ``--no-rpc-auth``, the services are open and the file is gone. Bad
flag combinations are refused before anything starts.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from connectors.anchor import AnchorClient
from connectors.errors import AuthError
from connectors.node import NodeClient
from flows.cli import app
from flows.cli.exit_codes import ExitCode
from flows.settings import PipelineSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.waiting import wait_until

PASSWORD = "correct-horse-battery-staple"
HEIGHTS = {"jsonrpc": "2.0", "id": 1, "method": "heights"}


def _up(tmp_path: Path, name: str, ports: dict[str, int], *flags: str) -> ManagedProcess:
    env = child_env({f"NOTARY_STACK_{k}_PORT": str(v) for k, v in ports.items()})
    argv = [sys.executable, "-m", "flows.cli", "up", "--data-dir", str(tmp_path / "data")]
    process = ManagedProcess(
        name, [*argv, "--no-prefect", "--block-time", "0.5", *flags], env, tmp_path / f"{name}.log"
    )
    process.spawn()
    url = f"http://127.0.0.1:{ports['API']}/v1"

    def api_up() -> bool:
        assert process.alive, process.log_tail()
        return httpx.get(url, timeout=2).status_code in (200, 403)

    wait_until(api_up, 120, 0.2, what="notary up to serve", ignoring=(httpx.TransportError,))
    return process


@pytest.mark.e2e
def test_up_locks_the_rpc_services_and_the_pipeline_gets_in(tmp_path: Path) -> None:
    ports = {name: free_port() for name in ("NODE", "WALLET", "API", "ANCHOR")}
    password_file = tmp_path / "rpc-password"
    password_file.write_text(PASSWORD + "\n")
    node = f"http://127.0.0.1:{ports['NODE']}/v2"
    anchor = f"http://127.0.0.1:{ports['ANCHOR']}/v2"
    data = tmp_path / "data"
    up = _up(
        tmp_path, "up-locked", ports, "--rpc-user", "ops", "--rpc-password-file", str(password_file)
    )
    try:
        for port in ("NODE", "WALLET", "ANCHOR"):
            url = f"http://127.0.0.1:{ports[port]}/v2"
            refused = httpx.post(url, json=HEIGHTS, timeout=5)
            assert refused.status_code == 401 and "www-authenticate" in refused.headers
            wrong = httpx.post(url, json=HEIGHTS, auth=("ops", "wrong"), timeout=5)
            assert wrong.status_code == 401
        assert httpx.post(node, json=HEIGHTS, auth=("ops", PASSWORD), timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{ports['NODE']}/health", timeout=5).status_code == 200
        file = data / "rpc-credentials"
        assert file.read_text() == f"ops:{PASSWORD}\n"
        assert stat.S_IMODE(file.stat().st_mode) == 0o600

        settings = PipelineSettings(data_dir=data, node_url=node, anchor_url=anchor)
        with NodeClient(node, access=settings.node_access()) as client:
            assert client.heights()["directoryblockheight"] >= 0
        with AnchorClient(anchor, access=settings.anchor_access()) as client:
            assert client.call("pow-info")["height"] >= 0
        with NodeClient(node) as client, pytest.raises(AuthError):
            client.heights()
        wait_until(  # the API's worker, the wallet and the anchoring service got in too
            lambda: (
                httpx.post(
                    node,
                    json={"jsonrpc": "2.0", "id": 1, "method": "pending-entries"},
                    auth=("ops", PASSWORD),
                    timeout=5,
                ).status_code
                == 200
            ),
            10,
            0.2,
        )
    finally:
        up.stop()
    output = up.log_tail(None)
    assert "JSON-RPC services locked: user ops" in output
    assert PASSWORD not in output

    opened = _up(tmp_path, "up-open", ports, "--no-rpc-auth")
    try:
        assert httpx.post(node, json=HEIGHTS, timeout=5).status_code == 200
        assert not (data / "rpc-credentials").exists()
    finally:
        opened.stop()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--no-rpc-auth", "--rpc-user", "ops"], "cannot go with"),
        (["--rpc-password-file", "missing-file"], "cannot read"),
        (["--rpc-user", "a:b"], "without ':'"),
    ],
)
def test_bad_rpc_flags_are_refused_before_starting(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        app,
        ["up", "--data-dir", str(tmp_path / "data"), "--no-prefect", *flags],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == ExitCode.USAGE, result.output
    assert message in result.output
