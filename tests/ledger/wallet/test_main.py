"""``python -m ledger.wallet`` serves on loopback, configured from NOTARY_WALLET_* variables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

import ledger.wallet
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.waiting import wait_until

ZERO_ES = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
ZERO_EC = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"
EXPORTED = {
    "ChainNotFoundError",
    "FeeError",
    "IncorrectPassphraseError",
    "InvalidMnemonicError",
    "KeyPair",
    "Keyring",
    "MemoryWalletStore",
    "NodeLink",
    "NodeRefusedError",
    "NodeUnavailableError",
    "NotAnIdentityError",
    "SqliteWalletStore",
    "StoredKey",
    "TransactionBook",
    "TransactionError",
    "UnknownKeyError",
    "WalletError",
    "WalletLockedError",
    "WalletNotEncryptedError",
    "WalletSettings",
    "WalletStateError",
    "WalletStore",
    "create_app",
    "import_secrets",
    "initialize_store",
    "open_keyring",
}


def test_exported_members() -> None:
    assert set(ledger.wallet.__all__) == EXPORTED
    assert all(hasattr(ledger.wallet, name) for name in EXPORTED)


@pytest.mark.e2e
def test_module_entry_point_serves_json_rpc(tmp_path: Path) -> None:
    port = free_port()
    env = {
        "NOTARY_WALLET_PORT": str(port),
        "NOTARY_WALLET_DATA_DIR": str(tmp_path),
        "NOTARY_WALLET_IMPORT_SECRETS": json.dumps([ZERO_ES]),
    }
    argv = [sys.executable, "-m", "ledger.wallet"]
    process = ManagedProcess("wallet", argv, child_env(env), tmp_path / "wallet.log")
    process.spawn()
    try:
        url = f"http://127.0.0.1:{port}/v2"
        body = {"jsonrpc": "2.0", "id": 1, "method": "all-addresses"}
        reply = wait_until(
            lambda: httpx.post(url, json=body, timeout=2).json(),
            20,
            0.1,
            what="the wallet to answer",
            ignoring=(httpx.TransportError,),
        )
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"addresses": [{"public": ZERO_EC, "secret": ZERO_ES}]},
        }
        assert (tmp_path / "wallet.sqlite").exists()
    finally:
        process.stop(timeout_s=10)
    assert ZERO_ES not in process.log_tail(chars=None)
