"""``python -m ledger.wallet`` serves on loopback, configured from NOTARY_WALLET_* variables."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import ledger.wallet

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.e2e
def test_module_entry_point_serves_json_rpc(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "NOTARY_WALLET_PORT": str(port),
        "NOTARY_WALLET_DATA_DIR": str(tmp_path),
        "NOTARY_WALLET_IMPORT_SECRETS": json.dumps([ZERO_ES]),
        "PYTHONPATH": str(Path(ledger.wallet.__file__).parents[2]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "ledger.wallet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/v2"
        body = {"jsonrpc": "2.0", "id": 1, "method": "all-addresses"}
        reply = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and reply is None:
            try:
                reply = httpx.post(url, json=body, timeout=2).json()
            except httpx.TransportError:
                time.sleep(0.1)
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"addresses": [{"public": ZERO_EC, "secret": ZERO_ES}]},
        }
        assert (tmp_path / "wallet.sqlite").exists()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert ZERO_ES.encode() not in stderr
