"""The stack's composition: ``Stack`` builds each service's settings and app from
``StackSettings`` and runs them (package docstring: ``ledger.stack``)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from pydantic import SecretStr

from ledger import devnet
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.settings import AnchorSettings
from ledger.api.accounts import create_account, verify_key
from ledger.api.app import create_app as create_api_app
from ledger.api.db import Database
from ledger.api.outbox.gateway import LedgerRpcClients
from ledger.api.services import take_stored_callback_secret
from ledger.api.settings import ApiSettings
from ledger.backup import StoreSpec
from ledger.exposure import ExposureError, exposure_problems
from ledger.jsonrpc.credentials import BasicCredentials, RpcAccess
from ledger.jsonrpc.local import LocalJsonRpcClient
from ledger.jsonrpc.server import JsonRpcEndpoint
from ledger.long_lived import freeze_long_lived
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from ledger.secret_file import (
    PRIVATE_DIR_MODE,
    ModeChange,
    create_private_file,
    make_private_dir,
    tighten_tree,
    write_secret_file,
)
from ledger.serving import QuietServer, Served, server_config
from ledger.stack.settings import StackSettings
from ledger.wallet.app import create_app as create_wallet_app
from ledger.wallet.settings import WalletSettings
from ledger.wallet_at_rest import WalletAtRest

_RPC_USER = "notary"  # the RPC user when none is given
_SERVICE_DIRS = ("node", "wallet", "api", "anchor")
_SHOWN_CHANGES = 5  # mode changes named in the start-up log line

log = logging.getLogger(__name__)


@dataclass
class Stack:
    """The four services of the development network, configured from ``StackSettings``."""

    settings: StackSettings

    def node_settings(self) -> NodeSettings:
        s = self.settings
        return NodeSettings(
            host=s.host,
            port=s.node_port,
            data_dir=s.data_dir / "node",
            block_time_s=s.block_time_s,
            sqlite_synchronous=s.sqlite_synchronous,
            **self._rpc_fields("rpc"),
            **self._tls_fields(),
        )

    def wallet_settings(self) -> WalletSettings:
        s = self.settings
        keys = [SecretStr(devnet.DEV_EC_SECRET), SecretStr(devnet.DEV_FCT_SECRET)]
        return WalletSettings(
            host=s.host,
            port=s.wallet_port,
            data_dir=s.data_dir / "wallet",
            node_url=s.node_url,
            import_secrets=keys,
            node_tls_ca_file=s.tls_ca_file,
            **self._rpc_fields("rpc"),
            **self._rpc_fields("node_rpc"),
            **self._tls_fields(),
            **self.wallet_at_rest().wallet_fields(),
        )

    def wallet_at_rest(self) -> WalletAtRest:
        """How the wallet is kept at rest (``ledger.wallet_at_rest``, docs/security.md)."""
        s = self.settings
        return WalletAtRest(
            data_dir=s.data_dir,
            wallet_file=s.data_dir / "wallet" / "wallet.sqlite",
            plain=s.wallet_plain,
            passphrase=s.wallet_passphrase,
            passphrase_file=s.wallet_passphrase_file,
        )

    def api_settings(self) -> ApiSettings:
        """The API's settings; its callback key is the one in ``callback_secret_file``
        unless ``NOTARY_API_CALLBACK_SECRET`` sets one (stored once: ``prepare``)."""
        s = self.settings
        settings = ApiSettings(
            host=s.host,
            port=s.api_port,
            data_dir=s.data_dir / "api",
            node_url=s.node_url,
            wallet_url=s.wallet_url,
            node_tls_ca_file=s.tls_ca_file,
            wallet_tls_ca_file=s.tls_ca_file,
            **self._rpc_fields("node_rpc"),
            **self._rpc_fields("wallet_rpc"),
            ec_address=devnet.DEV_EC_ADDRESS,
            worker_poll_interval_s=min(0.5, s.block_time_s / 10),
            anchor_poll_interval_s=min(1.0, s.block_time_s / 2),
            callback_allowed_hosts=self.callback_targets(),
            public_base_url=s.url(s.api_port, "", tls=s.tls_enabled),
            **self._tls_fields(),
        )
        if settings.callback_secret is None and self.callback_secret_file.exists():
            kept = SecretStr(self.callback_secret_file.read_text().strip())
            settings = settings.model_copy(update={"callback_secret": kept})
        return settings

    def callback_targets(self) -> list[str]:
        """The only loopback targets of the API's callbacks: the collector's port
        (``collector_port``) on 127.0.0.1 and ::1 (``HostPolicy``, docs/security.md)."""
        port = self.settings.collector_port
        return [f"127.0.0.1:{port}", f"[::1]:{port}"]

    def anchor_settings(self) -> AnchorSettings:
        s = self.settings
        return AnchorSettings(
            host=s.host,
            port=s.anchor_port,
            data_dir=s.data_dir / "anchor",
            node_url=s.node_url,
            poll_interval_s=min(1.0, s.block_time_s / 2),
            pow_block_time_s=s.pow_block_time_s,
            pow_difficulty_bits=s.pow_difficulty_bits,
            confirmations=s.anchor_confirmations,
            backend=s.anchor_chain,
            btc_rpc_url=s.anchor_rpc_url,
            btc_rpc_user=s.anchor_rpc_user,
            btc_rpc_password=s.anchor_rpc_password,
            btc_rpc_password_file=s.anchor_rpc_password_file,
            btc_wallet=s.anchor_wallet,
            btc_coin=s.anchor_coin,
            btc_fee_rate_sat_vb=s.anchor_fee_rate,
            sqlite_synchronous=s.sqlite_synchronous,
            node_tls_ca_file=s.tls_ca_file,
            **self._rpc_fields("rpc"),
            **self._rpc_fields("node_rpc"),
            **self._tls_fields(),
            **self._tsa_fields(),
            **self._ots_fields(),
        )

    def _tsa_fields(self) -> dict[str, Any]:
        s = self.settings
        return {"tsa_urls": s.tsa_urls, "tsa_ca_file": s.tsa_ca_file} if s.tsa_urls else {}

    def _ots_fields(self) -> dict[str, Any]:
        s = self.settings
        fields: dict[str, Any] = {"ots_calendars": s.ots_calendars} if s.ots_calendars else {}
        if s.ots_min is not None:
            fields["ots_min"] = s.ots_min
        if s.ots_headers_url is not None:
            fields["ots_headers_url"] = s.ots_headers_url
        return fields

    # -- RPC credentials ------------------------------------------------------------------

    @property
    def rpc_credentials_file(self) -> Path:
        """``<data_dir>/rpc-credentials``: ``user:password`` of the JSON-RPC services (0600)."""
        return self.settings.data_dir / "rpc-credentials"

    def rpc_credentials(self) -> BasicCredentials | None:
        """The credentials the node, wallet and anchoring service require, None when open.

        ``rpc_auth`` False: None. ``rpc_password`` set: it, with ``rpc_user`` (default
        ``notary``). Otherwise the data folder's ``rpc-credentials`` when it exists (with
        ``rpc_user`` replacing its user when given), else None; ``prepare()`` creates that
        file first when ``rpc_auth`` is True.

        Raises:
            CredentialsError: the file or the settings hold malformed credentials.
        """
        s = self.settings
        if s.rpc_auth is False:
            return None
        if s.rpc_password is not None:
            return BasicCredentials(s.rpc_user or _RPC_USER, s.rpc_password.get_secret_value())
        try:
            kept = BasicCredentials.from_text(self.rpc_credentials_file.read_text())
        except FileNotFoundError:
            return None
        return BasicCredentials(s.rpc_user or kept.user, kept.password)

    def node_access(self) -> RpcAccess:
        """What a client inside the stack sends to its JSON-RPC services (credentials,
        trusted authority)."""
        return RpcAccess(self.rpc_credentials(), self.settings.tls_ca_file)

    def _tls_fields(self) -> dict[str, Any]:
        """The ``TlsServing`` fields of a JSON-RPC service: the stack's certificate."""
        s = self.settings
        return {
            "tls_cert_file": s.tls_cert_file,
            "tls_key_file": s.tls_key_file,
            "tls_key_password": s.tls_key_password,
        }

    def _settle_rpc_credentials(self) -> None:
        """Make ``rpc-credentials`` say what ``rpc_credentials`` should answer."""
        s, path = self.settings, self.rpc_credentials_file
        if s.rpc_auth is False:
            path.unlink(missing_ok=True)
            return
        credentials = self.rpc_credentials()
        if credentials is None and s.rpc_auth:
            credentials = BasicCredentials(s.rpc_user or _RPC_USER, secrets.token_urlsafe(24))
        if credentials is not None:
            write_secret_file(path, credentials.to_text().encode("utf-8"))

    def _rpc_fields(self, prefix: str) -> dict[str, Any]:
        """``{prefix}_user`` and ``{prefix}_password`` settings fields of the credentials."""
        credentials = self.rpc_credentials()
        if credentials is None:
            return {}
        return {
            f"{prefix}_user": credentials.user,
            f"{prefix}_password": SecretStr(credentials.password),
        }

    def stores(self) -> list[StoreSpec]:
        """The stack's stores in the order ``notary backup`` copies them.

        Each store is copied before the stores it hands work to, so that what one copy
        says was handed on is in the later copies: the API (accepted writes, and which it
        submitted) before the node that received them; the anchoring service's record
        before its proof-of-work chain (its anchor transactions) and both before the node
        (the directory blocks they anchored, the records they wrote); the wallet last (a
        key made after the node's copy is still there for coins sent to it). The
        pipeline's audit store goes first of all (the caller adds it): what it says the
        API accepted is then in the API's copy. The node's replay filter snapshot
        (``node.txfilter``) is derived from its journal and rebuilt at start-up.
        """
        api, anchor = self.api_settings(), self.anchor_settings()
        node, wallet = self.node_settings(), self.wallet_settings()
        return [
            StoreSpec.from_url("api", "api/api.sqlite", api.resolved_database_url()),
            StoreSpec.sqlite("anchor", "anchor/anchor.sqlite", anchor.state_path),
            *(  # a Bitcoin node's chain is the node's to keep
                [StoreSpec.sqlite("pow", "anchor/pow.sqlite", anchor.pow_path)]
                if anchor.backend == "embedded"
                else []
            ),
            StoreSpec.sqlite(
                "node",
                "node/node.sqlite",
                node.db_path,
                facts={"height": "SELECT max(height) FROM dblocks"},
                derived=(node.commit_filter_path,),
            ),
            StoreSpec.sqlite("wallet", "wallet/wallet.sqlite", wallet.db_path),
        ]

    @property
    def api_key_file(self) -> Path:
        """``<data_dir>/api-key``: the development account's API key (mode 0600)."""
        return self.settings.data_dir / "api-key"

    @property
    def callback_secret_file(self) -> Path:
        """``<data_dir>/callback-secret``: the API's callback HMAC key (mode 0600)."""
        return self.settings.data_dir / "callback-secret"

    def prepare(self) -> str:
        """Create the data folders (owner-only, existing ones tightened: ``secure_data_dir``),
        settle the wallet's encryption at rest (``WalletAtRest.settle``: raises
        ``WalletAtRestError``), the development API account, the callback secret file (``write_callback_secret``)
        and the RPC credentials file (module docstring); return the account's key."""
        self.check_exposure()
        self.secure_data_dir()
        self.wallet_at_rest().settle()
        self._settle_rpc_credentials()
        self.create_stores({"api"})
        api = self.api_settings()
        db = Database(api.resolved_database_url())
        try:
            db.create_schema()
            key = self._ensure_key(db)
            self._write_callback_secret(db, api)
            return key
        finally:
            db.dispose()

    def check_exposure(self) -> None:
        """Refuse a ``host`` beyond loopback without locked JSON-RPC services and TLS.

        Raises:
            ExposureError: what is missing (``ledger.exposure``, docs/security.md).
            CredentialsError: malformed credentials.
        """
        s = self.settings
        locked = s.rpc_auth is True or self.rpc_credentials() is not None
        missing = exposure_problems(s.host, rpc_locked=locked, tls=s.tls_enabled)
        if missing:
            raise ExposureError(s.host, missing)

    def secure_data_dir(self) -> list[ModeChange]:
        """Make the data folder and its service folders owner-only (docs/security.md).

        The data folder and every folder in it become 0700, every file 0600
        (``ledger.secret_file.tighten_tree``); what was more open is changed and named in
        one WARNING log line (``create_stores`` makes the stores' files 0600 from the
        start). Returns the changes.

        Raises:
            OSError: a file or folder is not the caller's to change.
        """
        data_dir = self.settings.data_dir
        changes = make_private_dir(data_dir)
        for sub in _SERVICE_DIRS:
            (data_dir / sub).mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        changes += [c for c in tighten_tree(data_dir) if c not in changes]
        if changes:
            shown = ", ".join(str(c) for c in changes[:_SHOWN_CHANGES])
            more = len(changes) - _SHOWN_CHANGES
            log.warning(
                "made the data folder %s owner-only: %d modes changed (%s%s)",
                data_dir,
                len(changes),
                shown,
                f" and {more} more" if more > 0 else "",
            )
        return changes

    def create_stores(self, names: set[str] | None = None) -> None:
        """Create the SQLite files of the stores ``names`` (default: all) empty with mode
        0600 when missing, before SQLite creates them with the process's umask; their
        ``-wal`` and ``-shm`` files then get that mode too (SQLite gives them the
        database file's). Stores outside the data folder are left to their owner."""
        data_dir = self.settings.data_dir
        for store in self.stores():
            wanted = names is None or store.name in names
            if wanted and store.path is not None and store.path.is_relative_to(data_dir):
                create_private_file(store.path)

    def write_callback_secret(self) -> Path:
        """Write the publishing API's callback HMAC key to ``callback_secret_file``.

        The key is ``NOTARY_API_CALLBACK_SECRET`` when set, else the one the file holds,
        else one the API kept in its database before (moved out of it), else a new random
        one. The database keeps no copy (removed here), so the key is stored once and the
        file always holds the key the running API signs with.

        Returns:
            the file's path.
        """
        api = self.api_settings()
        db = Database(api.resolved_database_url())
        try:
            db.create_schema()
            return self._write_callback_secret(db, api)
        finally:
            db.dispose()

    def _write_callback_secret(self, db: Database, api: ApiSettings) -> Path:
        stored = take_stored_callback_secret(db)
        if api.callback_secret is not None:
            key = api.callback_secret.get_secret_value().encode("utf-8")
        else:
            key = stored if stored is not None else secrets.token_hex(32).encode("ascii")
        return write_secret_file(self.callback_secret_file, key)

    def _ensure_key(self, db: Database) -> str:
        path = self.api_key_file
        if path.exists():
            key = path.read_text().strip()
            with db.read() as session:
                if verify_key(session, key) is not None:
                    return key
        with db.write() as session:
            _account, key = create_account(session, "development")
        write_secret_file(path, key.encode("ascii"))
        return key

    def servers(self, *, loop: asyncio.AbstractEventLoop | None = None) -> list[uvicorn.Server]:
        """One uvicorn server per service (node first: the others call it).

        ``loop`` is the event loop that will run them: with it (and ``in_process_rpc``)
        the API's worker calls the node and the wallet in process (module docstring);
        without it, over their URLs.
        """
        s = self.settings
        self.create_stores()
        node, wallet, anchor = self.node_settings(), self.wallet_settings(), self.anchor_settings()
        node_app, wallet_app = create_node_app(node), create_wallet_app(wallet)
        node_server = _server(node_app, node)
        wallet_server = _server(wallet_app, wallet)
        clients = None
        if loop is not None and s.in_process_rpc:
            clients = LedgerRpcClients(
                node=_local_client("node", node_app.state.jsonrpc, node_server, loop),
                wallet=_local_client("wallet", wallet_app.state.jsonrpc, wallet_server, loop),
            )
        api = self.api_settings()
        api_app = create_api_app(api, rpc_clients=clients)
        return [
            node_server,
            wallet_server,
            _server(api_app, api),
            _server(create_anchor_app(anchor), anchor),
        ]

    async def serve(self, stop: asyncio.Event, *, ready: threading.Event | None = None) -> None:
        """Run the services until ``stop`` is set; ``ready`` is set once all four answer."""
        servers = self.servers(loop=asyncio.get_running_loop())
        tasks: list[asyncio.Task[None]] = []
        try:
            # One after the other, in dependency order (node first): a service's first call
            # to the one before it then finds it listening.
            for server in servers:
                tasks.append(asyncio.create_task(server.serve()))
                await self._wait_started(servers[: len(tasks)], tasks)
            freeze_long_lived()  # the services are built: what is alive stays
            if ready is not None:
                ready.set()
            stopper = asyncio.create_task(stop.wait())
            await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
        finally:
            # API first, node last: the API's worker and the wallet call the node.
            for server, task in reversed(list(zip(servers, tasks, strict=False))):
                server.should_exit = True
                await asyncio.gather(task, return_exceptions=True)

    async def _wait_started(
        self, servers: list[uvicorn.Server], tasks: list[asyncio.Task[None]]
    ) -> None:
        while not all(server.started for server in servers):
            failed = [t for t in tasks if t.done()]
            if failed:
                failed[0].result()
                raise RuntimeError("a service stopped during start-up (is its port in use?)")
            await asyncio.sleep(0.02)


def _server(app: Callable[..., Any], settings: Served) -> uvicorn.Server:
    """The uvicorn server of one service's ASGI app (the node's own, Starlette, FastAPI),
    configured as ``python -m`` configures it (``ledger.serving.server_config``)."""
    return QuietServer(server_config(app, settings, log_level="warning"))


def _local_client(
    name: str, endpoint: JsonRpcEndpoint, server: uvicorn.Server, loop: asyncio.AbstractEventLoop
) -> LocalJsonRpcClient:
    """An in-process client of ``endpoint``, answering while ``server`` serves."""
    return LocalJsonRpcClient(
        endpoint,
        loop,
        url=f"in-process:{name}",
        serving=lambda: server.started and not server.should_exit,
    )
