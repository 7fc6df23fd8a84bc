"""The objects one API process shares: settings, clock, database, gateway, worker.

Built once by ``build_services`` in the composition root (``create_app``) and reached
by route dependencies through ``request.app.state.services``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.exc import IntegrityError

from ledger.api.callbacks import CallbackDispatcher, HostPolicy, Resolver
from ledger.api.db import Database
from ledger.api.gateway import JsonRpcLedgerGateway, LedgerGateway
from ledger.api.models import ServiceState
from ledger.api.settings import ApiSettings
from ledger.api.worker import LedgerWorker
from ledger.core.clock import Clock, SystemClock

__all__ = ["CALLBACK_SECRET_KEY", "Services", "build_services", "load_callback_secret"]

CALLBACK_SECRET_KEY = "callback_secret"


@dataclass
class Services:
    """Everything the routes and the lifespan need.

    Attributes:
        settings, clock, db, gateway, policy: as configured.
        worker: built at startup by ``start()`` (``None`` before).
        owned: objects with a ``close()`` this container created and must close.
    """

    settings: ApiSettings
    clock: Clock
    db: Database
    gateway: LedgerGateway
    policy: HostPolicy
    http_transport: httpx.BaseTransport | None = None
    worker: LedgerWorker | None = None
    owned: list[Any] = field(default_factory=list)

    def start(self) -> LedgerWorker:
        """Create the schema, build the worker and (when enabled) start its thread."""
        self.db.create_schema()
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
        self.worker = LedgerWorker(
            self.db,
            self.gateway,
            clock=self.clock,
            dispatcher=dispatcher,
            batch_size=self.settings.worker_batch_size,
            max_attempts=self.settings.submit_max_attempts,
            retry_base_s=self.settings.submit_retry_base_s,
            poll_interval_s=self.settings.worker_poll_interval_s,
            anchor_poll_interval_s=self.settings.anchor_poll_interval_s,
        )
        if self.settings.worker_enabled:
            self.worker.start()
        return self.worker

    def close(self) -> None:
        """Stop the worker, close owned clients and the database pool."""
        if self.worker is not None:
            self.worker.stop()
        for resource in reversed(self.owned):
            resource.close()
        self.owned.clear()
        self.db.dispose()


def build_services(
    settings: ApiSettings,
    *,
    gateway: LedgerGateway | None = None,
    clock: Clock | None = None,
    http_transport: httpx.BaseTransport | None = None,
    resolver: Resolver | None = None,
) -> Services:
    """Wire the services of one process (nothing is started; see ``Services.start``)."""
    owned: list[Any] = []
    if gateway is None:
        json_gateway = JsonRpcLedgerGateway.from_urls(
            settings.node_url, settings.wallet_url, ec_address=settings.ec_address
        )
        owned.append(json_gateway)
        gateway = json_gateway
    return Services(
        settings=settings,
        clock=clock or SystemClock(),
        db=Database(settings.resolved_database_url()),
        gateway=gateway,
        policy=HostPolicy(settings.callback_allowed_hosts, resolver=resolver),
        http_transport=http_transport,
        owned=owned,
    )


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
