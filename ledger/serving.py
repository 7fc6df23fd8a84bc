"""What the services' settings share about how they are reached: TLS, RPC credentials.

Three mixins of pydantic-settings fields, each read under its service's own prefix:

- ``TlsServing`` (node, wallet, publishing API, anchoring service): ``tls_cert_file`` and
  ``tls_key_file`` (PEM; both or neither), ``tls_key_password`` for an encrypted key. With
  both, the service serves HTTPS only (TLS by uvicorn); without, plain HTTP, the loopback
  development default. ``uvicorn_options`` gives what ``uvicorn.run``/``uvicorn.Config``
  take, so every ``__main__`` starts its server the same way.
- ``RpcServing`` (node, wallet, anchoring service): ``rpc_user`` and ``rpc_password``
  (both or neither): HTTP basic authentication on the JSON-RPC route, as factomd's and
  factom-walletd's RPC user and password (docs/jsonrpc.md §1.1). Off by default.
- ``NodeAccess`` (the node's clients among the services: wallet, publishing API,
  anchoring service): ``node_rpc_user``, ``node_rpc_password`` and ``node_tls_ca_file``,
  what they send to a locked node and the authority they trust for its certificate.

So ``NOTARY_NODE_RPC_USER`` / ``NOTARY_NODE_RPC_PASSWORD`` lock the node, and
``NOTARY_WALLET_NODE_RPC_USER`` / ``..._PASSWORD`` let the wallet in; the pipeline reads
``NOTARY_NODE_RPC_USER`` too (``flows.settings``), so one pair of variables serves a node
and the pipeline on one machine.

And one way to start a service, whoever starts it:

- ``run_service(read_settings, create_app)`` is every ``python -m ledger.<service>``: files
  owner-only, settings read once, log lines with every secret of the settings hidden
  (``settings_secrets``), the app built, long-lived objects frozen (``ledger.long_lived``),
  then ``serve`` until SIGINT/SIGTERM.
- ``server_config(app, settings)`` is the one ``uvicorn.Config`` of a service: its
  address and TLS files (``uvicorn_options``), the ASGI lifespan on, the process's own
  logging kept (``log_config=None``). The bundled stack (``ledger.stack``) and a pipeline
  command's helper server (``connectors.served_app``, through ``Address``) build theirs
  with it and run them as ``QuietServer`` s.
- ``service_lifespan(run=..., close=...)`` is every service's ASGI lifespan: its
  background loop (``run(stop)``) runs while the app serves; on the way out the loop is
  told to stop and awaited, then what the app owns is closed, in order.

HTTP basic authentication is part of each JSON-RPC app (built from ``RpcServing``, see
``ledger.rpc_serving``), so an app served in process by the tests is locked as the
served one is.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar

import uvicorn
from pydantic import BaseModel, SecretBytes, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ledger.jsonrpc.credentials import BasicCredentials, CredentialsError, RpcAccess
from ledger.long_lived import freeze_long_lived
from ledger.secret_file import OWNER_ONLY_UMASK

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from ledger.observability.logs import LogFormat

__all__ = [
    "Address",
    "NodeAccess",
    "QuietServer",
    "RpcServing",
    "Served",
    "TlsServing",
    "rpc_access",
    "run_service",
    "serve",
    "server_config",
    "service_lifespan",
    "settings_secrets",
    "uvicorn_options",
]


class TlsServing(BaseSettings):
    """HTTPS for one service (module docstring).

    Attributes:
        tls_cert_file: PEM certificate chain.
        tls_key_file: PEM private key.
        tls_key_password: password of an encrypted ``tls_key_file``.
    """

    # A validation error must not quote the input: it may hold a password.
    model_config = SettingsConfigDict(hide_input_in_errors=True)

    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_key_password: SecretStr | None = None

    @model_validator(mode="after")
    def _tls_pair(self) -> Self:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("set both tls_cert_file and tls_key_file, or neither")
        return self

    @property
    def tls_enabled(self) -> bool:
        """Whether the service serves HTTPS (a certificate and key are configured)."""
        return self.tls_cert_file is not None

    def uvicorn_tls_options(self) -> dict[str, Any]:
        """The ``uvicorn.Config`` / ``uvicorn.run`` keyword arguments of the TLS settings."""
        if self.tls_cert_file is None or self.tls_key_file is None:
            return {}
        password = self.tls_key_password
        return {
            "ssl_certfile": str(self.tls_cert_file),
            "ssl_keyfile": str(self.tls_key_file),
            "ssl_keyfile_password": None if password is None else password.get_secret_value(),
        }


class RpcServing(TlsServing):
    """HTTPS and HTTP basic authentication for one JSON-RPC service (module docstring).

    Attributes:
        rpc_user: the user every JSON-RPC request must name; no ``:``.
        rpc_password: its password (never logged).

    Raises (validation):
        ValueError: only one of the two is set, or they break ``BasicCredentials``.
    """

    rpc_user: str | None = None
    rpc_password: SecretStr | None = None

    @model_validator(mode="after")
    def _rpc_pair(self) -> Self:
        self.rpc_credentials()  # raises on a lone user or password
        return self

    def rpc_credentials(self) -> BasicCredentials | None:
        """The credentials the JSON-RPC route requires, None when it is open.

        Raises:
            CredentialsError: only one of user and password is set, or either is malformed.
        """
        return _access(self.rpc_user, self.rpc_password, None, "rpc").credentials


class NodeAccess(BaseSettings):
    """How a service reaches the node: credentials and the trusted authority.

    Attributes:
        node_rpc_user, node_rpc_password: the node's RPC user and password (both or neither).
        node_tls_ca_file: PEM file of the authorities trusted for an ``https://`` node URL;
            None trusts the system's store.
    """

    model_config = SettingsConfigDict(hide_input_in_errors=True)

    node_rpc_user: str | None = None
    node_rpc_password: SecretStr | None = None
    node_tls_ca_file: Path | None = None

    @model_validator(mode="after")
    def _node_access_pair(self) -> Self:
        self.node_access()
        return self

    def node_access(self) -> RpcAccess:
        """The node client's ``access``.

        Raises:
            CredentialsError: only one of user and password is set, or either is malformed.
        """
        return _access(
            self.node_rpc_user, self.node_rpc_password, self.node_tls_ca_file, "node_rpc"
        )


def rpc_access(user: str | None, password: SecretStr | None, ca_file: Path | None) -> RpcAccess:
    """An ``RpcAccess`` from settings fields (user and password both set or both None).

    Raises:
        CredentialsError: only one of them is set, or either is malformed.
    """
    secret = None if password is None else password.get_secret_value()
    return RpcAccess.from_parts(user, secret, ca_file)


def _access(
    user: str | None, password: SecretStr | None, ca_file: Path | None, prefix: str
) -> RpcAccess:
    try:
        return rpc_access(user, password, ca_file)
    except CredentialsError as exc:
        raise CredentialsError(f"{prefix}_user / {prefix}_password: {exc}") from None


class Served(Protocol):
    """What ``server_config`` needs of a service's settings: where it listens
    (``host``, ``port``) and its ``TlsServing`` options."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    def uvicorn_tls_options(self) -> dict[str, Any]: ...


def uvicorn_options(settings: Served) -> dict[str, Any]:
    """``host``, ``port`` and the TLS options of a service's settings, for ``uvicorn.Config``.

    Args:
        settings: a service's settings (``host``, ``port`` and the ``TlsServing`` fields).
    """
    return {"host": settings.host, "port": settings.port, **settings.uvicorn_tls_options()}


@dataclass(frozen=True)
class Address:
    """Where a server without settings of its own listens, over plain HTTP (a pipeline
    command's helper server, ``connectors.served_app``); the settings shape
    ``server_config`` takes."""

    host: str
    port: int

    def uvicorn_tls_options(self) -> dict[str, Any]:
        """No TLS options: plain HTTP."""
        return {}


def server_config(
    app: ASGIApp,
    settings: Served,
    *,
    log_level: str,
    lifespan: Literal["on", "off"] = "on",
    **options: Any,
) -> uvicorn.Config:
    """The ``uvicorn.Config`` of one service (module docstring).

    Args:
        app: the service's ASGI app.
        settings: where it listens and its TLS files (``uvicorn_options``).
        log_level: uvicorn's own log level (the service's ``log_level``).
        lifespan: ``"on"``: the app's lifespan runs, and a failure in it stops the start;
            ``"off"`` for an app without one.
        options: further ``uvicorn.Config`` keywords (``timeout_keep_alive``, in seconds).
    """
    return uvicorn.Config(
        app,
        **uvicorn_options(settings),
        log_level=log_level,
        log_config=None,  # the process's own logging (``configure_logging``)
        lifespan=lifespan,
        **options,
    )


def serve(config: uvicorn.Config) -> None:
    """Serve ``config`` until SIGINT or SIGTERM (uvicorn's signal handling), on uvloop when
    it is installed (uvicorn's ``loop="auto"``).

    Raises:
        SystemExit: uvicorn's own exit when the server cannot start: status 1 when it
            cannot listen (address in use), 3 when the app's lifespan fails.
    """
    uvicorn.Server(config).run()


class _ServiceSettings(Served, Protocol):
    @property
    def log_format(self) -> LogFormat: ...

    @property
    def log_level(self) -> str: ...


_S = TypeVar("_S", bound=_ServiceSettings)


def run_service(
    read_settings: Callable[[], _S],
    create_app: Callable[[_S], ASGIApp],
    *,
    options: Callable[[_S], Mapping[str, Any]] | None = None,
) -> None:
    """What ``python -m ledger.<service>`` runs (module docstring), until SIGINT/SIGTERM.

    Args:
        read_settings: the service's settings type (read from the environment), called
            once the process's files are owner-only (docs/security.md).
        create_app: the service's ``create_app(settings)``.
        options: further ``server_config`` keywords from the settings.

    Raises:
        pydantic.ValidationError: the environment holds invalid settings.
        SystemExit: the server could not start (``serve``).
    """
    from ledger.observability.logs import configure_logging

    os.umask(OWNER_ONLY_UMASK)
    settings = read_settings()
    configure_logging(settings.log_format, settings.log_level, secrets=settings_secrets(settings))
    app = create_app(settings)
    freeze_long_lived()  # what is alive now lives as long as the process
    extra = {} if options is None else dict(options(settings))
    serve(server_config(app, settings, log_level=settings.log_level, **extra))


def service_lifespan(
    *,
    start: Callable[[], object] | None = None,
    run: Callable[[asyncio.Event], Coroutine[Any, Any, None]] | None = None,
    close: Sequence[Callable[[], Awaitable[None] | None]] = (),
) -> Callable[[object], contextlib.AbstractAsyncContextManager[None]]:
    """A service's ASGI lifespan (Starlette's ``lifespan=``; the node's app calls it with
    itself too).

    Args:
        start: called first at start-up (the publishing API starts its writer and worker
            threads); when it raises, nothing else runs and nothing is closed.
        run: the service's background loop, ``run(stop)``, started as a task at start-up
            and expected to return soon after ``stop`` is set.
        close: what the app owns, closed in this order at shutdown (a coroutine function's
            result is awaited), each one even when one before it, or ``run``, raised.

    At shutdown, ``stop`` is set and the loop awaited first, then ``close``; an error
    propagates as from ``contextlib.AsyncExitStack``: the last one raised, the earlier
    ones chained as its ``__context__``.
    """

    @contextlib.asynccontextmanager
    async def lifespan(_app: object) -> AsyncIterator[None]:
        if start is not None:
            start()
        stop = asyncio.Event()
        task = asyncio.create_task(run(stop)) if run is not None else None
        try:
            yield
        finally:
            stop.set()
            async with contextlib.AsyncExitStack() as closing:
                for closer in reversed(close):
                    closing.push_async_callback(_call, closer)
                if task is not None:
                    await task

    return lifespan


async def _call(closer: Callable[[], Awaitable[None] | None]) -> None:
    result = closer()
    if inspect.isawaitable(result):
        await result


def settings_secrets(settings: object) -> list[str]:
    """Every secret a settings object holds, as text, for the log filter
    (``ledger.observability.logs.configure_logging(secrets=...)``).

    Found by the fields' values, not listed by hand: every ``SecretStr`` or ``SecretBytes``
    field (bytes decoded as UTF-8 with replacement), inside lists, tuples, sets and dict
    values, and in nested models; so a secret field added later is hidden from the logs
    without touching any ``__main__``. Empty secrets are left out.
    """
    found: list[str] = []
    _collect_secrets(settings, found)
    return found


def _collect_secrets(value: Any, found: list[str]) -> None:
    if isinstance(value, SecretStr):
        text = value.get_secret_value()
    elif isinstance(value, SecretBytes):
        text = value.get_secret_value().decode("utf-8", "replace")
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _collect_secrets(getattr(value, name), found)
        return
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _collect_secrets(item, found)
        return
    elif isinstance(value, dict):
        for item in value.values():
            _collect_secrets(item, found)
        return
    else:
        return
    if text:
        found.append(text)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to whoever runs it: the stack (its four
    servers share one event loop and one Ctrl-C) or a command serving an app in a thread."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
