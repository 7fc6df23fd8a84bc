"""factom.js (npm ``factom``), unchanged, against the node and the wallet.

It needs Node.js (the project's machines and CI have it; a developer without it sees the
tests skipped, saying so). The package is installed on first use: the ``factom_js``
fixture runs ``npm ci`` in ``tests/interop/js`` (the version pinned in
``package-lock.json``, from the npm registry) when ``node_modules`` lacks it, and fails the
tests, rather than skipping them, when that install fails.
``js/check.js`` makes the calls (chains and entries signed by factom.js itself and by the
wallet's key, blocks of every kind, coin and entry credit transactions, errors) and prints
what each answered; the assertions are here. ``js/check_auth.js`` does the same against
a node and a wallet locked with an RPC user and password (docs/jsonrpc.md §1.1).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger import devnet
from ledger.stack import Stack
from tests.interop.conftest import PASSWORD, USER, RunningStack

pytestmark = pytest.mark.e2e

JS = Path(__file__).with_name("js")
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def factom_js() -> Path:
    """The folder of the installed factom.js (``npm ci`` on first use; module docstring)."""
    if NODE is None:
        pytest.skip("factom.js needs Node.js, which is not installed here")
    if not (JS / "node_modules" / "factom" / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("Node.js is installed without npm: cannot install factom.js")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=JS,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"`npm ci` in {JS} failed: {done.stderr[-2000:]}")
    return JS


def _run(script: str, config: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
    """Run ``js/<script>`` with ``config``; what it printed (JSON), or fail with its errors."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, script, json.dumps(config)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@pytest.mark.usefixtures("factom_js")
def test_factom_js_against_node_and_wallet(running: RunningStack) -> None:
    s = running.settings
    config = {
        "node": {"host": s.host, "port": s.node_port},
        "wallet": {"host": s.host, "port": s.wallet_port},
        "ec": {"public": devnet.DEV_EC_ADDRESS, "secret": devnet.DEV_EC_SECRET},
        "fct": {"public": devnet.DEV_FCT_ADDRESS, "secret": devnet.DEV_FCT_SECRET},
    }
    out = _run("check.js", config, timeout_s=300)
    assert out["properties"]["factomdapiversion"] == "2.0"
    assert out["walletProperties"]["walletapiversion"] == "2.0"
    assert out["rate"] > 0 and out["ecBalance"] > 0 and out["fctBalance"] > 0
    assert (
        out["addChain"]["chainId"] == out["chainId"] and out["addChain"]["repeatedCommit"] is False
    )
    assert out["addEntry"]["entryHash"] == out["entryHashes"][1]
    assert out["recordedContent"] == "two" and out["chainExists"] is True
    assert out["firstEntry"] == "first" and out["allEntries"] == ["first", "two"]
    assert out["chainHead"]["keyMR"] == out["blockContext"]["entryBlockKeyMR"]
    assert out["dblockByKey"] == out["dblock"]["keyMR"]
    assert out["entryBlock"] == out["blockContext"]["entryBlockKeyMR"]
    for key in ("adminBlock", "ecBlock", "factoidBlock"):
        assert isinstance(out[key], str) and len(out[key]) == 64, key
    assert out["txId"] == out["tx"] == out["fetchedTx"]["id"]
    assert out["fetchedTx"]["outputs"] == [100_000_000]
    assert out["received"] == 100_000_000 and out["credits"] == 7
    assert out["nodeError"] == {"name": "ApiError", "code": -32008}
    assert out["walletError"] == {"name": "ApiError", "code": -32602}
    assert out["unknownMethod"] == {"name": "ApiError", "code": -32601}


@pytest.mark.usefixtures("factom_js")
def test_factom_js_with_rpc_credentials(locked_stack: Stack) -> None:
    s = locked_stack.settings
    config = {
        "node": {"host": s.host, "port": s.node_port},
        "wallet": {"host": s.host, "port": s.wallet_port},
        "user": USER,
        "password": PASSWORD,
    }
    out = _run("check_auth.js", config, timeout_s=120)
    assert out["height"] >= 0 and out["addresses"] >= 2
    # factom.js answers a 401 at once (no retry) with a plain Error built from the body,
    # which is the JSON object {"message": "Unauthorized"}: hence its message
    refused = {"name": "Error", "apiError": False, "message": "[object Object]"}
    for key in ("nodeWrong", "walletWrong", "nodeNone", "walletNone"):
        assert out[key] == refused, key
