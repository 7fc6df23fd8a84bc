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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, Self

import uvicorn
from pydantic import BaseModel, SecretBytes, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ledger.jsonrpc.credentials import BasicCredentials, CredentialsError, RpcAccess

__all__ = [
    "NodeAccess",
    "QuietServer",
    "RpcServing",
    "TlsServing",
    "rpc_access",
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


class _Served(Protocol):
    host: str
    port: int

    def uvicorn_tls_options(self) -> dict[str, Any]: ...


def uvicorn_options(settings: _Served) -> dict[str, Any]:
    """``host``, ``port`` and the TLS options of a service's settings, for ``uvicorn.run``.

    Args:
        settings: a service's settings (``host``, ``port`` and the ``TlsServing`` fields).
    """
    return {"host": settings.host, "port": settings.port, **settings.uvicorn_tls_options()}


def settings_secrets(settings: BaseModel) -> list[str]:
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
