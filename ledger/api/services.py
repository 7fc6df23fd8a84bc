"""The objects one API process shares: settings, clock, databases, gateway, writer, worker.

Built once by ``build_services`` in the composition root (``create_app``) and reached
by route dependencies through ``request.app.state.services``.

Two database roles: ``accounts_db`` holds the ``accounts`` table (keys), ``db`` holds
chains, entries and the worker's state. They are one database, except in sandbox mode
(``settings.sandbox``), where ``db`` is the sandbox database and accounts are read from
the main one, so the same keys work in both.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.exc import IntegrityError

from ledger.api.auth import KeyCache, RateLimiter
from ledger.api.db import Database
from ledger.api.models import ServiceState
from ledger.api.outbox.callback_targets import HostPolicy, Resolver
from ledger.api.outbox.callbacks import CallbackDispatcher
from ledger.api.outbox.credit_gate import CreditGate
from ledger.api.outbox.credit_status import CreditStatus, read_credit_status
from ledger.api.outbox.gateway import JsonRpcLedgerGateway, LedgerGateway, LedgerRpcClients
from ledger.api.outbox.stage_moves import StageObserver
from ledger.api.outbox.worker import LedgerWorker
from ledger.api.outbox.writer import GroupCommitWriter
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.sandbox.mode import Sandbox, WithoutAnchors
from ledger.api.settings import ApiSettings
from ledger.core.clock import Clock, SystemClock
from ledger.throttle import AuthFailureThrottle

__all__ = [
    "CALLBACK_SECRET_KEY",
    "Services",
    "build_services",
    "load_callback_secret",
    "take_stored_callback_secret",
]

CALLBACK_SECRET_KEY = "callback_secret"
_log = logging.getLogger("ledger.api.auth")


@dataclass
class Services:
    """Everything the routes and the lifespan need.

    Attributes:
        settings, clock, db, gateway, policy: as configured.
        accounts_db: database of the ``accounts`` table (``db`` itself unless sandbox).
        writer: the group-commit writer of operations 2 and 6.
        keys: key -> account cache; limiter: per-account rate limit.
        auth_failures: unknown keys per client address, throttled (``ledger.throttle``).
        credits: the paying entry credit address's gate (the worker holds writes while
            it is dry); read it through ``credit_status()``.
        worker: built at startup by ``start()`` (``None`` before).
        sandbox: the sandbox runtime in sandbox mode, else ``None``.
        stage_observer: handed to the worker built by ``start()`` (stage latency metrics).
        owned: objects with a ``close()`` this container created and must close.
    """

    settings: ApiSettings
    clock: Clock
    db: Database
    accounts_db: Database
    gateway: LedgerGateway
    policy: HostPolicy
    writer: GroupCommitWriter
    keys: KeyCache
    limiter: RateLimiter
    auth_failures: AuthFailureThrottle
    credits: CreditGate
    http_transport: httpx.BaseTransport | None = None
    worker: LedgerWorker | None = None
    sandbox: Sandbox | None = None
    stage_observer: StageObserver | None = None
    owned: list[Any] = field(default_factory=list)

    def start(self) -> LedgerWorker:
        """Create the schema, start the writer, build the worker and (if enabled) start it."""
        self.db.create_schema()
        if self.accounts_db is not self.db:
            self.accounts_db.create_schema()
        self.writer.start()
        self.worker = self._build_worker()
        if self.sandbox is not None:
            self.sandbox.attach(self.worker)
            self.sandbox.start()
        if self.settings.worker_enabled:
            self.worker.start()
        return self.worker

    def credit_status(self) -> CreditStatus:
        """The paying address and the write queue now (``ledger.api.outbox.credit_status``):
        read-only, for health checks and metrics; safe from any thread."""
        return read_credit_status(self.credits, self.db, now=self.clock.now())

    def _build_worker(self) -> LedgerWorker:
        secret = load_callback_secret(self.db, self.settings)
        http = httpx.Client(
            timeout=self.settings.callback_timeout_s,
            transport=self.http_transport,
            follow_redirects=False,
        )
        self.owned.append(http)
        dispatcher = CallbackDispatcher(
            self.db,
            http,
            secret=secret,
            policy=self.policy,
            clock=self.clock,
            retry_base_s=self.settings.callback_retry_base_s,
            retry_max_s=self.settings.callback_retry_max_s,
            give_up_s=self.settings.callback_give_up_s,
        )
        return LedgerWorker(
            self.db,
            self.gateway,
            clock=self.clock,
            credits=self.credits,
            dispatcher=dispatcher,
            batch_size=self.settings.worker_batch_size,
            submit_rows_per_pass=self.settings.submit_rows_per_pass,
            submit_chunk_rows=self.settings.submit_chunk_rows,
            max_attempts=self.settings.submit_max_attempts,
            retry_base_s=self.settings.submit_retry_base_s,
            poll_interval_s=self.settings.worker_poll_interval_s,
            anchor_poll_interval_s=self.settings.anchor_poll_interval_s,
            stage_observer=self.stage_observer,
        )

    def close(self) -> None:
        """Stop the sandbox, worker and writer; close owned clients and database pools."""
        if self.sandbox is not None:
            self.sandbox.stop()
        if self.worker is not None:
            self.worker.stop()
        self.writer.stop()
        for resource in reversed(self.owned):
            resource.close()
        self.owned.clear()
        self.db.dispose()
        if self.accounts_db is not self.db:
            self.accounts_db.dispose()


def build_services(
    settings: ApiSettings,
    *,
    gateway: LedgerGateway | None = None,
    clock: Clock | None = None,
    http_transport: httpx.BaseTransport | None = None,
    resolver: Resolver | None = None,
    rpc_clients: LedgerRpcClients | None = None,
) -> Services:
    """Wire the services of one process (nothing is started; see ``Services.start``).

    Without an explicit ``gateway``, the worker's is a ``JsonRpcLedgerGateway`` over
    ``rpc_clients`` when given (the bundled stack's in-process clients; closed with the
    services), else over ``node_url`` / ``wallet_url``. In sandbox mode without an explicit
    ``gateway``: the sandbox test network when ``sandbox_node_url`` and
    ``sandbox_wallet_url`` are set, else a built-in test ledger; either is wrapped in
    ``sandbox.WithoutAnchors`` (no anchoring in the sandbox).
    """
    clock = clock or SystemClock()
    owned: list[Any] = []
    accounts_db = Database(settings.resolved_database_url())
    db = Database(settings.resolved_records_url()) if settings.sandbox else accounts_db
    gateway = gateway or _default_gateway(settings, owned, rpc_clients)
    sandbox = None
    if settings.sandbox:
        sandbox = Sandbox(
            records=db,
            accounts=accounts_db,
            clock=clock,
            ledger=gateway if isinstance(gateway, InMemoryLedger) else None,
            block_time_s=settings.sandbox_block_time_s,
            purge_interval_s=settings.sandbox_purge_interval_s,
        )
        gateway = WithoutAnchors(gateway)  # the sandbox has no anchoring, whatever the ledger
    keys = KeyCache(
        accounts_db,
        clock=clock,
        ttl_s=settings.auth_cache_ttl_s,
        max_keys=settings.auth_cache_max_keys,
        on_lookup=sandbox.mirror_account if sandbox is not None else None,
    )
    return Services(
        settings=settings,
        clock=clock,
        db=db,
        accounts_db=accounts_db,
        gateway=gateway,
        policy=HostPolicy(settings.callback_allowed_hosts, resolver=resolver),
        writer=GroupCommitWriter(db, clock=clock, max_batch=settings.write_batch_max),
        keys=keys,
        limiter=RateLimiter(
            clock=clock, rate_per_s=settings.rate_limit_per_s, burst=settings.rate_limit_burst
        ),
        auth_failures=AuthFailureThrottle(
            "the publishing API",
            clock=clock,
            logger=_log,
            burst=settings.auth_failure_burst,
            rate_per_s=settings.auth_failure_rate_per_s,
        ),
        credits=CreditGate(
            settings.ec_address,
            clock=clock,
            check_interval_s=settings.credit_check_interval_s,
            retry_base_s=settings.credit_retry_base_s,
            retry_max_s=settings.credit_retry_max_s,
        ),
        http_transport=http_transport,
        sandbox=sandbox,
        owned=owned,
    )


def _default_gateway(
    settings: ApiSettings, owned: list[Any], rpc_clients: LedgerRpcClients | None
) -> LedgerGateway:
    node_url, wallet_url = settings.node_url, settings.wallet_url
    if rpc_clients is not None and not settings.sandbox:
        # In process: no HTTP body, so no byte limit to split batches by.
        local = JsonRpcLedgerGateway(
            rpc_clients.node,
            rpc_clients.wallet,
            ec_address=settings.ec_address,
            max_batch_bytes=None,
        )
        owned.append(local)
        return local
    if settings.sandbox:
        if not (settings.sandbox_node_url and settings.sandbox_wallet_url):
            return InMemoryLedger()
        node_url, wallet_url = settings.sandbox_node_url, settings.sandbox_wallet_url
    # A sandbox's external network takes its credentials in its URLs (user:pass@host).
    main = not settings.sandbox
    gateway = JsonRpcLedgerGateway.from_urls(
        node_url,
        wallet_url,
        ec_address=settings.ec_address,
        node_access=settings.node_access() if main else None,
        wallet_access=settings.wallet_access() if main else None,
    )
    owned.append(gateway)
    return gateway


def load_callback_secret(db: Database, settings: ApiSettings) -> bytes:
    """The callback HMAC key: the setting, else a random one kept in ``service_state``."""
    if settings.callback_secret is not None:
        return settings.callback_secret.get_secret_value().encode("utf-8")
    for _ in range(3):
        with db.read() as session:
            row = session.get(ServiceState, CALLBACK_SECRET_KEY)
            if row is not None:
                return row.value.encode("utf-8")
        try:
            with db.write() as session:
                session.add(ServiceState(key=CALLBACK_SECRET_KEY, value=secrets.token_hex(32)))
        except IntegrityError:
            continue  # another process stored one first; read it
    raise RuntimeError("could not store the callback secret")


def take_stored_callback_secret(db: Database) -> bytes | None:
    """Remove the callback HMAC key kept in ``service_state`` and return it (None: none).

    For a composer that keeps the key elsewhere (the bundled stack's 0600
    ``callback-secret`` file, docs/security.md) and passes it as ``callback_secret``: the
    key is then stored once, not in the database as well.
    """
    with db.write() as session:
        row = session.get(ServiceState, CALLBACK_SECRET_KEY)
        if row is None:
            return None
        value = row.value.encode("utf-8")
        session.delete(row)
    return value
