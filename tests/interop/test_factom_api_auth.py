"""``factom-api`` (``Factomd``, ``FactomWalletd``) against locked services, over HTTP and TLS.

factomd and factom-walletd take an RPC user and password and a TLS certificate;
``factom-api`` sends ``username``/``password`` as HTTP basic authentication and verifies
the server with ``certfile``. So do these services (docs/jsonrpc.md §1.1):

- over HTTP, the bundled stack locked with a password: with the right credentials every
  call works (a chain and an entry made through the wallet and the node, the wallet's
  secrets read); without them, or with a wrong password, the client raises its
  ``FactomAPIError`` carrying the 401 answer (``WWW-Authenticate: Basic``, no detail);
- over TLS, node, wallet (whose node link trusts the same authority) and anchoring
  service as processes with a certificate from a throw-away authority (``trustme``): the
  client that trusts it gets in with the right credentials and is refused with a wrong
  one; a client that does not trust it fails the handshake; plain HTTP gets no answer.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import requests
from factom import Factomd, FactomWalletd
from factom.exceptions import FactomAPIError
from pydantic import SecretStr

from connectors.anchor import AnchorClient
from connectors.errors import AuthError
from ledger import devnet
from ledger.anchor.settings import AnchorSettings
from ledger.jsonrpc.credentials import RpcAccess
from ledger.node.settings import NodeSettings
from ledger.stack import Stack
from ledger.wallet.settings import WalletSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env, settings_env
from tests.harness.tls import issue_certificate
from tests.harness.waiting import wait_until
from tests.interop.conftest import PASSWORD, USER

pytestmark = pytest.mark.e2e


def _clients(
    node: str, wallet: str, *, password: str | None = PASSWORD, certfile: str | None = None
) -> tuple[Factomd, FactomWalletd]:
    user = USER if password is not None else None
    factomd = Factomd(
        host=node,
        ec_address=devnet.DEV_EC_ADDRESS,
        fct_address=devnet.DEV_FCT_ADDRESS,
        username=user,
        password=password,
        certfile=certfile,
    )
    walletd = FactomWalletd(
        host=wallet,
        ec_address=devnet.DEV_EC_ADDRESS,
        fct_address=devnet.DEV_FCT_ADDRESS,
        username=user,
        password=password,
        certfile=certfile,
    )
    return factomd, walletd


def _refused(call: object) -> None:
    assert callable(call)
    with pytest.raises(FactomAPIError) as raised:
        call()
    response = raised.value.response
    assert response is not None and response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith('Basic realm="notary ')
    assert PASSWORD not in response.text


# -- over HTTP: the bundled stack, locked -----------------------------------------------------


def _origins(stack: Stack) -> tuple[str, str]:
    s = stack.settings
    return f"http://{s.host}:{s.node_port}", f"http://{s.host}:{s.wallet_port}"


def test_with_the_credentials_factom_api_works(locked_stack: Stack) -> None:
    factomd, walletd = _clients(*_origins(locked_stack))
    assert factomd.properties()["factomdapiversion"] == "2.0"
    made = walletd.new_chain(factomd, [b"locked", uuid.uuid4().hex.encode()], b"first", sleep=0)
    assert made["message"] == "Entry Reveal Success"
    entry = walletd.new_entry(factomd, made["chainid"], [b"second"], b"two", sleep=0)
    wait_until(
        lambda: factomd.entry(entry["entryhash"])["content"] == b"two",
        60,
        0.1,
        what="the entry in a block",
        ignoring=(FactomAPIError,),
    )
    backup = walletd.wallet_backup()
    assert len(backup["wallet-seed"].split()) == 12


def test_without_or_with_a_wrong_password_factom_api_gets_401(locked_stack: Stack) -> None:
    node, wallet = _origins(locked_stack)
    for password in (None, "wrong", PASSWORD + "x"):
        factomd, walletd = _clients(node, wallet, password=password)
        _refused(factomd.heights)
        _refused(walletd.wallet_backup)
        _refused(walletd.all_addresses)


# -- over TLS: node, wallet and anchoring service as processes -------------------------------


@dataclass(frozen=True)
class TlsServices:
    node: str
    wallet: str
    anchor: str
    ca_file: Path


def _serve(name: str, settings: object, log: Path) -> ManagedProcess:
    env = child_env(settings_env(settings))  # type: ignore[arg-type]
    process = ManagedProcess(name, [sys.executable, "-m", f"ledger.{name}"], env, log)
    process.spawn()
    return process


@pytest.fixture(scope="module")
def tls_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServices]:
    root = tmp_path_factory.mktemp("tls")
    material = issue_certificate(root)
    cert_file, key_file, ca_file = material.cert_file, material.key_file, material.ca_file
    ports = {name: free_port() for name in ("node", "wallet", "anchor")}
    node_url = f"https://127.0.0.1:{ports['node']}/v2"
    tls = {"tls_cert_file": cert_file, "tls_key_file": key_file}
    locked = {"rpc_user": USER, "rpc_password": SecretStr(PASSWORD)}
    node_client = {
        "node_url": node_url,
        "node_rpc_user": USER,
        "node_rpc_password": SecretStr(PASSWORD),
        "node_tls_ca_file": ca_file,
    }
    settings = {
        "node": NodeSettings(
            port=ports["node"], data_dir=root / "node", block_time_s=1.0, **tls, **locked
        ),
        "wallet": WalletSettings(
            port=ports["wallet"],
            data_dir=root / "wallet",
            import_secrets=[SecretStr(devnet.DEV_EC_SECRET)],
            **tls,
            **locked,
            **node_client,
        ),
        "anchor": AnchorSettings(
            port=ports["anchor"], data_dir=root / "anchor", **tls, **locked, **node_client
        ),
    }
    processes = [_serve(n, s, root / f"{n}.log") for n, s in settings.items()]
    try:
        for name, process in zip(settings, processes, strict=True):
            url = f"https://127.0.0.1:{ports[name]}/v2"

            def answers(process: ManagedProcess = process, url: str = url) -> bool:
                assert process.alive, process.log_tail()
                return httpx.post(url, json={}, verify=str(ca_file), timeout=2).status_code == 401

            wait_until(answers, 60, 0.1, what=f"{name} over TLS", ignoring=(httpx.TransportError,))
        yield TlsServices(
            f"https://127.0.0.1:{ports['node']}",
            f"https://127.0.0.1:{ports['wallet']}",
            f"https://127.0.0.1:{ports['anchor']}/v2",
            ca_file,
        )
    finally:
        for process in reversed(processes):
            process.stop()


@pytest.fixture(autouse=True)
def _no_ca_bundle_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` win over a session's
    ``verify`` (its ``merge_environment_settings``): unset, ``certfile`` is what counts."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)


def test_over_tls_factom_api_gets_in_with_the_authority_and_credentials(
    tls_services: TlsServices,
) -> None:
    factomd, walletd = _clients(
        tls_services.node, tls_services.wallet, certfile=str(tls_services.ca_file)
    )
    assert factomd.heights()["directoryblockheight"] >= 0
    assert walletd.get_height()["height"] >= 0  # the wallet asked the node over TLS, locked
    assert walletd.all_addresses()["addresses"]
    access = RpcAccess.from_parts(USER, PASSWORD, tls_services.ca_file)
    with AnchorClient(tls_services.anchor, access=access) as anchor:
        assert anchor.call("pow-info")["height"] >= 0
    wrong = RpcAccess.from_parts(USER, "wrong", tls_services.ca_file)
    with AnchorClient(tls_services.anchor, access=wrong) as anchor, pytest.raises(AuthError):
        anchor.call("pow-info")


def test_over_tls_a_wrong_password_an_untrusted_certificate_and_plain_http_fail(
    tls_services: TlsServices,
) -> None:
    certfile = str(tls_services.ca_file)
    factomd, walletd = _clients(
        tls_services.node, tls_services.wallet, password="wrong", certfile=certfile
    )
    _refused(factomd.heights)
    _refused(walletd.wallet_backup)
    untrusting, _ = _clients(tls_services.node, tls_services.wallet)
    with pytest.raises(requests.exceptions.SSLError):
        untrusting.heights()
    plain, _ = _clients(tls_services.node.replace("https://", "http://"), tls_services.wallet)
    with pytest.raises(requests.exceptions.ConnectionError):
        plain.heights()
