"""The bundled stack with each service separately stoppable, for the fault tests.

``tests.harness.stack.stack`` runs the four services in one thread, so one of them cannot
go down alone. ``FaultStack`` lays out the same data folder and settings (``ledger.stack``)
but runs the node as a subprocess (``tests.harness.services.NodeProcess``: it can be
SIGKILLed and started again over its data folder) and the wallet, the publishing API and,
when asked, the anchoring service each in an ``AppServer`` thread of their own (stopped and
started again through their lifespans, as a process restart would).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from connectors.audit import AuditStore
from flows.settings import PipelineSettings
from ledger.anchor.app import create_app as create_anchor_app
from ledger.api.app import create_app as create_api_app
from ledger.api.outbox.gateway import LedgerGateway
from ledger.api.settings import ApiSettings
from ledger.core.receipt import Receipt, verify_receipt
from ledger.stack import Stack, StackSettings
from ledger.wallet.app import create_app as create_wallet_app
from tasks.documents import LedgerEntry, collection_entry, notarization_entry
from tests.harness.ports import free_port
from tests.harness.servers import AppServer
from tests.harness.services import NodeProcess, StartedServices

#: One client for every ``rpc`` call: building an ``httpx.Client`` costs ~50 ms (TLS setup).
_RPC_CLIENT = httpx.Client()


def rpc(url: str, method: str, params: Any = None, *, timeout_s: float = 10.0) -> Any:
    """One JSON-RPC call; returns the whole answer object (``result`` or ``error``)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return _RPC_CLIENT.post(url, json=body, timeout=timeout_s).json()


class FaultStack(StartedServices):
    """Node (subprocess), wallet, publishing API and optionally anchoring, on free ports.

    Args:
        data_dir: the stack's data folder (``node/``, ``wallet/``, ``api/``, ``api-key``).
        block_time_s: directory block period of the development network, seconds.
        api_overrides: ``ApiSettings`` fields replacing the stack's (e.g. callback back-off).
        collector_port: the one loopback port the API's callbacks may reach (a test's
            receiver); default a free port.
        with_anchor: also run the anchoring service (needed for the ``anchor`` stage).
        api_gateway: builds the API's ledger gateway from its settings (a test's wrapper
            around the real one); default: the API's own.

    Use as a context manager: every service started is stopped at exit.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        block_time_s: float = 0.5,
        api_overrides: dict[str, Any] | None = None,
        with_anchor: bool = False,
        api_gateway: Callable[[ApiSettings], LedgerGateway] | None = None,
        collector_port: int | None = None,
    ) -> None:
        self.stack = Stack(
            StackSettings(
                data_dir=data_dir,
                node_port=free_port(),
                wallet_port=free_port(),
                api_port=free_port(),
                anchor_port=free_port(),
                collector_port=collector_port or free_port(),
                block_time_s=block_time_s,
                sqlite_synchronous="NORMAL",
            )
        )
        self._api_overrides = api_overrides or {}
        self._with_anchor = with_anchor
        self._api_gateway = api_gateway
        self.api_app: FastAPI | None = None  # the running API's app (its ``Services``)
        self.node = NodeProcess(self.stack.node_settings())
        self.api_key = ""
        self._wallet: AppServer | None = None
        self._api: AppServer | None = None
        self._anchor: AppServer | None = None

    @property
    def settings(self) -> StackSettings:
        return self.stack.settings

    def api_settings(self) -> ApiSettings:
        """The stack's API settings with ``api_overrides`` applied."""
        return self.stack.api_settings().model_copy(update=self._api_overrides)

    def start(self) -> None:
        """Lay out the data folder and the API account, start every service."""
        self.api_key = self.stack.prepare()
        self.node.start()
        self._wallet = AppServer(
            create_wallet_app(self.stack.wallet_settings()),
            self.settings.wallet_port,
            name="wallet",
        )
        self._wallet.start()
        self.start_api()
        if self._with_anchor:
            self._anchor = AppServer(
                create_anchor_app(self.stack.anchor_settings()),
                self.settings.anchor_port,
                name="anchor",
            )
            self._anchor.start()

    def start_api(self, **overrides: Any) -> None:
        """Start the publishing API (a new app over the same database); ``overrides``
        are added to ``api_overrides`` first (kept for later starts)."""
        self._api_overrides.update(overrides)
        settings = self.api_settings()
        gateway = None if self._api_gateway is None else self._api_gateway(settings)
        self.api_app = create_api_app(settings, gateway=gateway)
        self._api = AppServer(self.api_app, self.settings.api_port, name="api")
        self._api.start()

    def stop_api(self) -> None:
        """Shut the publishing API down (its worker and writer stop; queued writes commit)."""
        if self._api is not None:
            self._api.stop()
            self._api = None

    def close(self) -> None:
        """Stop every service still running (API first, node last)."""
        for server in (self._anchor, self._api, self._wallet):
            if server is not None:
                server.stop()
        self._anchor = self._api = self._wallet = None
        self.node.stop()

    def pipeline_settings(self, **overrides: Any) -> PipelineSettings:
        """Pipeline settings pointing at these services (audit store in the data folder).

        One private entry per document (``entry`` mode): the faults here are about single
        entries (one refused, one posted twice), which a batch entry would hide.
        """
        s = self.settings
        values: dict[str, Any] = {
            "data_dir": s.data_dir,
            "api_url": s.api_url,
            "node_url": s.node_url,
            "anchor_url": s.anchor_url,
            "batch_size": 10,
            "ledger_wait_s": 60,
            "publish_mode": "entry",
            **overrides,
        }
        return PipelineSettings(**values)


# -- checks of the final state ---------------------------------------------------------------


def make_files(root: Path, count: int, *, tag: str = "") -> dict[str, bytes]:
    """``count`` small distinct files under ``root``; returns relative path -> content."""
    files: dict[str, bytes] = {}
    for i in range(count):
        rel = f"part{i % 4}/doc-{i:04d}.txt"
        data = f"fault test {tag} document {i}\n".encode() * (1 + i % 5)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        files[rel] = data
    return files


def chain_entry_hashes(node_url: str, chain_id: str) -> list[str]:
    """Every entry hash the node's saved entry blocks of ``chain_id`` hold, oldest first
    (walks ``chain-head`` and each entry block's ``prevkeymr`` back to the first)."""
    answer = rpc(node_url, "chain-head", {"chainid": chain_id})
    keymr = answer["result"]["chainhead"]
    hashes: list[str] = []
    while keymr and keymr != "0" * 64:
        block = rpc(node_url, "entry-block", {"keymr": keymr})["result"]
        hashes[:0] = [item["entryhash"] for item in block["entrylist"]]
        keymr = block["header"]["prevkeymr"]
    return hashes


def assert_collection_on_ledger(
    settings: PipelineSettings, collection: str, files: dict[str, bytes]
) -> None:
    """The final state every pipeline fault test proves.

    1. the audit store holds exactly one notarization per file, at stage ``ledger`` or
       ``anchor``, for the file's SHA-256 and the entry the pipeline computes for it;
    2. each has a stored receipt that verifies up to the key Merkle root of the directory
       block the node serves at that height;
    3. the collection's chain on the node holds each document's entry exactly once (and
       nothing else but the chain's first entry).
    """
    with AuditStore(settings.audit_url) as store:
        proofs = store.proofs.records(collection=collection)
        record = store.collections.find(collection)
    assert record is not None
    chain = collection_entry(record)
    by_path = {p.notarization.path: p for p in proofs}
    assert len(proofs) == len(by_path) == len(files), (len(proofs), len(files))
    assert set(by_path) == set(files)
    expected: set[str] = set()
    dblock_keymr: dict[int, str] = {}
    for path, proof in by_path.items():
        row = proof.notarization
        assert row.sha256 == hashlib.sha256(files[path]).hexdigest()
        assert row.stage in ("ledger", "anchor"), (path, row.stage, row.error)
        entry = notarization_entry(row, collection_key=record.key)
        assert row.entry_hash == entry.entry_hash
        expected.add(entry.entry_hash)
        assert proof.receipt is not None and row.dblock_height is not None, path
        height = row.dblock_height
        if height not in dblock_keymr:
            dblock_keymr[height] = rpc(settings.node_url, "dblock-by-height", {"height": height})[
                "result"
            ]["dblock"]["keymr"]
        verify_receipt(
            Receipt.from_json(proof.receipt.raw),
            trusted_directory_block_keymr=bytes.fromhex(dblock_keymr[height]),
        )
    on_chain = chain_entry_hashes(settings.node_url, chain.chain_id)
    assert len(on_chain) == len(set(on_chain)), "an entry is recorded twice on the ledger"
    assert set(on_chain) == expected | {chain.entry_hash}


def collection_chain(settings: PipelineSettings, collection: str) -> LedgerEntry:
    """The first entry (``chain_id``, ``entry_hash``) of ``collection``'s chain, as the
    audit store registered the collection."""
    with AuditStore(settings.audit_url) as store:
        record = store.collections.find(collection)
    assert record is not None, f"collection {collection!r} is not registered"
    return collection_entry(record)
