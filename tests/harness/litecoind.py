"""A real Litecoin Core node in regtest: the external chain of the Bitcoin RPC anchor tests.

Litecoin Core 0.21 (Debian's ``litecoind``) speaks Bitcoin Core 0.21's JSON-RPC and
formats; its regtest chain has no miners, so the harness mines: ``LitecoinNode.mine``
(``generatetoaddress``) and ``BlockTicker`` (one block every ``interval_s`` seconds in a
thread, as a chain with 1-second blocks). ``LitecoinNode.start`` runs ``litecoind -regtest``
as a ``ManagedProcess`` on free loopback ports (RPC bound to 127.0.0.1, P2P not listening),
in its own data folder with its own RPC user and password, then creates the wallet and
mines 101 blocks to it (a coinbase needs 100 confirmations before it is spent).

When ``litecoind`` is missing and the tests run as root with ``apt-get`` (CI does), it is
installed; when it cannot be had, the tests fail if ``CI=true`` and are skipped otherwise
(``NOTARY_LITECOIND`` names another binary).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness.debian import apt_install
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env

__all__ = [
    "BlockTicker",
    "LitecoinNode",
    "LitecoinRpcError",
    "find_litecoind",
    "litecoin_node",
    "litecoind_binary",
]

LITECOIND_ENV = "NOTARY_LITECOIND"
WALLET = "notary"


class LitecoinRpcError(RuntimeError):
    """The node answered a harness call with an error object (``code``, ``message``)."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {code} {message}")
        self.code = code


def find_litecoind() -> str | None:
    """The ``litecoind`` binary to use, or None."""
    for candidate in (os.environ.get(LITECOIND_ENV), shutil.which("litecoind")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def litecoind_binary() -> str:
    """Path of ``litecoind``, installed when missing; fails (CI) or skips the test."""
    path = find_litecoind()
    problem = ""
    if path is None:
        problem = apt_install("litecoind")
        path = find_litecoind()
    if path is None:
        message = (
            "the Bitcoin RPC anchor tests need litecoind (Debian package 'litecoind'): "
            f"{problem or 'installed, but no binary found'}. Install it or point "
            f"{LITECOIND_ENV} at a litecoind binary."
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


@dataclass
class LitecoinNode:
    """One ``litecoind -regtest`` with its data folder, ports and RPC credentials.

    Attributes:
        binary: the ``litecoind`` path; ``data_dir``: its own folder (``-datadir``).
        rpc_port / p2p_port: free loopback ports; ``user`` / ``password``: RPC credentials.
        address: the wallet's mining address (after ``start``).
        extra_args: more ``litecoind`` options, read at each ``start`` (a restart may
            change them: ``-persistmempool=0`` drops the pool).
    """

    binary: str
    data_dir: Path
    rpc_port: int = field(default_factory=free_port)
    p2p_port: int = field(default_factory=free_port)
    user: str = "notary"
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    address: str = ""
    extra_args: list[str] = field(default_factory=list)
    process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        """The node's RPC URL (no wallet path, no credentials)."""
        return f"http://127.0.0.1:{self.rpc_port}/"

    def argv(self) -> list[str]:
        return [
            self.binary,
            "-regtest",
            f"-datadir={self.data_dir}",
            f"-rpcport={self.rpc_port}",
            f"-port={self.p2p_port}",
            "-listen=0",
            "-rpcbind=127.0.0.1",
            "-rpcallowip=127.0.0.1",
            f"-rpcuser={self.user}",
            f"-rpcpassword={self.password}",
            "-server=1",
            "-fallbackfee=0.0001",
            "-txindex=0",
            "-printtoconsole=1",
            "-nodebuglogfile",
            *self.extra_args,
        ]

    def start(self, *, fund: bool = True) -> None:
        """Start the node and wait for its RPC; first start: create the wallet and mine
        101 blocks to it (``fund``). A restart loads the wallet again."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.process is None:
            self.process = ManagedProcess(
                "litecoind", self.argv(), child_env(), self.data_dir / "litecoind.log"
            )
        self.process.argv = self.argv()
        self.process.spawn()
        self.process.wait_ready(self._answers, timeout_s=60)
        wallets = self.rpc("listwallets")
        if WALLET not in wallets:
            try:
                self.rpc("loadwallet", WALLET)
            except LitecoinRpcError:
                self.rpc("createwallet", WALLET)
        if not self.address:
            self.address = self.rpc("getnewaddress", wallet=WALLET)
            if fund:
                self.mine(101)

    def _answers(self) -> bool:
        try:
            self.rpc("getblockcount")
        except (httpx.HTTPError, LitecoinRpcError):
            return False
        return True

    def stop(self) -> None:
        """Stop the node (``stop`` RPC, then the process group)."""
        if self.process is None:
            return
        with contextlib.suppress(httpx.HTTPError, LitecoinRpcError):
            self.rpc("stop")
        with contextlib.suppress(subprocess.TimeoutExpired):
            if self.process.alive:
                self.process.wait(30)
        self.process.stop()

    def rpc(self, method: str, *params: Any, wallet: str | None = None) -> Any:
        """Call ``method`` with positional ``params`` (at ``/wallet/<wallet>`` when given).

        Raises:
            LitecoinRpcError: an error object; httpx.HTTPError: the node is unreachable.
        """
        url = self.url + (f"wallet/{wallet}" if wallet else "")
        body = {"jsonrpc": "1.0", "id": "harness", "method": method, "params": list(params)}
        reply = httpx.post(url, json=body, auth=(self.user, self.password), timeout=60)
        data = reply.json()
        if data.get("error"):
            raise LitecoinRpcError(method, data["error"]["code"], data["error"]["message"])
        return data["result"]

    def mine(self, blocks: int = 1, *, address: str | None = None) -> list[str]:
        """Mine ``blocks`` blocks to the wallet (or ``address``: another miner, whose blocks
        differ from ours, as a competing branch's do); their hashes (display hex)."""
        return list(self.rpc("generatetoaddress", blocks, address or self.address))

    def invalidate(self, block_hash: str) -> None:
        """Take ``block_hash`` (and its descendants) out of the best chain."""
        self.rpc("invalidateblock", block_hash)

    def new_address(self) -> str:
        """A fresh address of the wallet (a competing miner's coinbase goes there)."""
        return str(self.rpc("getnewaddress", wallet=WALLET))

    def height(self) -> int:
        return int(self.rpc("getblockcount"))


class BlockTicker:
    """Mines one block every ``interval_s`` seconds in a thread (a chain with real blocks)."""

    def __init__(self, node: LitecoinNode, interval_s: float = 1.0) -> None:
        self._node = node
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="block-ticker", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            with contextlib.suppress(httpx.HTTPError, LitecoinRpcError):
                self._node.mine(1)

    def __enter__(self) -> BlockTicker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture
def litecoin_node(tmp_path: Path) -> Iterator[LitecoinNode]:
    """A fresh funded regtest node, stopped at the end of the test."""
    node = LitecoinNode(litecoind_binary(), tmp_path / "litecoind")
    try:
        node.start()
        yield node
    finally:
        node.stop()
