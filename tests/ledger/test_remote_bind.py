"""Binding beyond loopback: refused without locks and TLS; the README's remote example
works, seen from a second machine (a network namespace on a veth pair).

The remote example (``notary up --rpc-auth --host 0.0.0.0 --tls-*``, README "Securing the
JSON-RPC services") runs in a child process; a client in the namespace reaches it only at
this machine's veth address. Every service is ready over HTTPS; without credentials, with
a wrong password or key, over plain HTTP or without trusting the authority, nothing
answers but the refusal; with them, the call goes through. The stack's own clients dial
loopback, so its readiness (``/health/ready``, which checks each service's links) is the
proof that they reach each other through the certificate.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.exit_codes import ExitCode
from tests.harness.netns import Netns, network_namespace
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.tls import TlsFiles, issue_certificate
from tests.harness.waiting import wait_until

PROBE = Path(__file__).with_name("remote_probe.py")
SERVICES = ("node", "wallet", "api", "anchor")


# -- refusals (no service starts) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "named", "not_named"),
    [
        ([], ["--rpc-auth", "--tls-cert-file"], []),
        (["--rpc-auth"], ["--tls-cert-file"], ["--rpc-auth"]),
        (["--tls"], ["--rpc-auth"], ["--tls-cert-file"]),
    ],
    ids=["nothing", "locked-no-tls", "tls-not-locked"],
)
@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])  # noqa: S104 - the point
def test_up_beyond_loopback_names_what_is_missing_and_starts_nothing(
    tmp_path: Path, host: str, flags: list[str], named: list[str], not_named: list[str]
) -> None:
    tls = issue_certificate(tmp_path / "tls")
    args = ["up", "--data-dir", str(tmp_path / "data"), "--host", host, "--no-prefect"]
    for flag in flags:
        args += (
            ["--tls-cert-file", str(tls.cert_file), "--tls-key-file", str(tls.key_file)]
            if flag == "--tls"
            else [flag]
        )
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == ExitCode.USAGE, result.output
    text = " ".join(result.output.split())
    assert f"refusing to listen on {host} (beyond loopback)" in text
    assert all(flag in text for flag in named), text
    assert all(flag not in text for flag in not_named), text
    assert not (tmp_path / "data" / "wallet").exists()  # nothing was laid out


def test_prefect_stays_on_loopback_unless_given_a_host_with_its_own_auth(tmp_path: Path) -> None:
    args = ["up", "--data-dir", str(tmp_path / "data"), "--prefect-host", "0.0.0.0"]  # noqa: S104
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == ExitCode.USAGE
    assert "without its own authentication: add --prefect-auth-file" in result.output


# -- the remote example on a second address ----------------------------------------------------


@pytest.fixture
def netns() -> Iterator[Netns]:
    with network_namespace() as net:
        yield net


@pytest.mark.e2e
def test_the_readme_remote_example_works_from_another_machine_and_only_as_it_should(
    tmp_path: Path, netns: Netns
) -> None:
    tls = _certificate(tmp_path, netns)
    ports = {name: free_port() for name in SERVICES}
    data = tmp_path / "data"
    env = child_env({f"NOTARY_STACK_{n.upper()}_PORT": str(p) for n, p in ports.items()})
    argv = [sys.executable, "-m", "flows.cli", "up", "--data-dir", str(data)]
    argv += ["--rpc-auth", "--host", "0.0.0.0", "--no-prefect", "--block-time", "1"]  # noqa: S104
    argv += ["--tls-cert-file", str(tls.cert_file), "--tls-key-file", str(tls.key_file)]
    argv += ["--tls-ca-file", str(tls.ca_file)]
    up = ManagedProcess("notary-up-remote", argv, env, tmp_path / "up.log")
    up.spawn()
    try:
        ready_url = f"https://{netns.host_address}:{ports['api']}/health/ready"
        wait_until(
            lambda: httpx.get(ready_url, verify=str(tls.ca_file), timeout=2).status_code == 200,
            120,
            0.25,
            what="the remote stack's API to be ready",
            ignoring=(httpx.HTTPError,),
        )
        seen = _probe(netns, tls, data, ports)
    finally:
        up.stop()
        log = up.log_tail()
    print(log)  # the start-up lines, for the record
    print(json.dumps(seen, indent=1, sort_keys=True))
    for name in SERVICES:
        row = seen[name]
        assert row["ready"] == 200 and row["ready_body"]["status"] == "ready", (name, row)
        assert row["plain http"] in ("RemoteProtocolError", "ReadError", 400), (name, row)
        assert row["untrusted certificate"] == "ConnectError", (name, row)
    for name in ("node", "wallet", "anchor"):
        assert seen[name]["no credentials"] == seen[name]["wrong password"] == 401
        assert seen[name]["credentials"] == 200, (name, seen[name])
    api = seen["api"]
    assert (api["no key"], api["wrong key"], api["key"]) == (403, 403, 200)
    assert "https://127.0.0.1:" in log  # the stack dials itself on loopback


def _certificate(tmp_path: Path, netns: Netns) -> TlsFiles:
    """A certificate naming loopback (the stack's own clients) and the remote address."""
    tls = issue_certificate(tmp_path / "tls")
    cert = tls.authority.issue_cert("127.0.0.1", "localhost", netns.host_address)
    cert.private_key_pem.write_to_path(str(tls.key_file))
    cert.cert_chain_pems[0].write_to_path(str(tls.cert_file))
    return tls


def _probe(netns: Netns, tls: TlsFiles, data: Path, ports: dict[str, int]) -> dict[str, dict]:
    """What a client in the namespace gets from each service (``remote_probe.py``)."""
    credentials = (data / "rpc-credentials").read_text().strip()
    key = (data / "api-key").read_text().strip()
    argv = [sys.executable, str(PROBE), netns.host_address, str(tls.ca_file), credentials, key]
    done = netns.run([*argv, json.dumps(ports)], timeout_s=120, env=child_env())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
