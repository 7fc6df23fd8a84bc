"""``StackSettings``: the bundled stack's one settings object (``NOTARY_STACK_*``).

Every service's own settings are derived from it by ``ledger.stack.compose.Stack``; the
URLs here are the ones the stack's own clients dial (``dial_host``, else a loopback
address for a wildcard bind: ``ledger.exposure.client_host``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from ledger.exposure import client_host
from ledger.serving import TlsServing

__all__ = ["StackSettings"]


class StackSettings(TlsServing):
    """Settings of the bundled stack (environment prefix ``NOTARY_STACK_``).

    ``block_time_s`` is the directory block period of the development network (short, so
    that the whole pipeline completes in seconds; a real network uses 600 s).

    ``tls_cert_file`` and ``tls_key_file`` (``ledger.serving.TlsServing``) make the node,
    the wallet, the anchoring service and the publishing API serve HTTPS only (their URLs
    become ``https://``); ``tls_ca_file`` is the authority the stack's own clients trust
    for that certificate (default: the system's store).

    ``host`` beyond loopback needs the JSON-RPC services locked and a certificate
    (``ledger.exposure``: ``prepare`` raises ``ExposureError`` otherwise). The URLs
    (``node_url``, ...) are where the stack's own clients dial: ``dial_host`` when given (the
    certificate's name), else loopback for a wildcard ``host``, else ``host``.
    """

    model_config = SettingsConfigDict(
        env_prefix="NOTARY_STACK_", extra="ignore", hide_input_in_errors=True
    )

    data_dir: Path = Path(".notary")
    host: str = "127.0.0.1"
    dial_host: str | None = None
    node_port: int = 8088
    wallet_port: int = 8089
    api_port: int = 8090
    anchor_port: int = 8091
    block_time_s: float = Field(default=2.0, gt=0)
    #: The bundled proof-of-work chain: one block per ``pow_block_time_s`` while anchors wait
    #: (one per ``AnchorSettings.pow_idle_block_time_s`` otherwise), each with about
    #: ``pow_difficulty_bits`` bits of work; anchors are final after ``anchor_confirmations``.
    pow_block_time_s: float = Field(default=1.0, gt=0)
    pow_difficulty_bits: int = Field(default=16, ge=1, le=64)
    anchor_confirmations: int = Field(default=2, ge=1)
    #: The external chain of the anchors: the bundled one (default), or ``bitcoin-rpc``: a
    #: Bitcoin Core / Litecoin Core node at ``anchor_rpc_url`` paying from wallet
    #: ``anchor_wallet`` at ``anchor_fee_rate`` sat/vB (``AnchorSettings.btc_*``).
    anchor_chain: Literal["embedded", "bitcoin-rpc"] = "embedded"
    anchor_rpc_url: str = "http://127.0.0.1:8332/"
    anchor_rpc_user: str | None = None
    anchor_rpc_password: SecretStr | None = None
    anchor_rpc_password_file: Path | None = None
    anchor_wallet: str = ""
    anchor_coin: Literal["bitcoin", "litecoin"] = "bitcoin"
    anchor_fee_rate: float | None = Field(default=None, gt=0)
    sqlite_synchronous: str = "FULL"
    #: Lock the JSON-RPC services (module docstring): True locks them (a password is
    #: generated when none is given or kept), False opens them, None keeps what the data
    #: folder has (locked when ``rpc-credentials`` exists). ``rpc_password`` locks them too.
    rpc_auth: bool | None = None
    rpc_user: str | None = None
    rpc_password: SecretStr | None = None
    tls_ca_file: Path | None = None
    #: The API's worker calls the node and the wallet in process (module docstring); False:
    #: over loopback JSON-RPC, as a standalone API does.
    in_process_rpc: bool = True
    #: RFC 3161 timestamp authorities of the anchoring service (``AnchorSettings.tsa_*``;
    #: empty: as ``NOTARY_ANCHOR_TSA_URLS`` says).
    tsa_urls: list[str] = Field(default_factory=list)
    tsa_ca_file: Path | None = None
    #: OpenTimestamps calendars of the anchoring service (``AnchorSettings.ots_*``; empty:
    #: as ``NOTARY_ANCHOR_OTS_CALENDARS`` says), how many must answer (None: the anchoring
    #: service's default, 1) and the Esplora-compatible API of the attested headers.
    ots_calendars: list[str] = Field(default_factory=list)
    ots_min: int | None = Field(default=None, ge=1)
    ots_headers_url: str | None = None
    #: The wallet at rest (``ledger.wallet_at_rest``): encrypted unless ``wallet_plain``;
    #: its passphrase from ``wallet_passphrase`` (the environment), ``wallet_passphrase_file``
    #: or ``<data_dir>/wallet-passphrase`` (generated at the first start, 0600).
    wallet_plain: bool = False
    wallet_passphrase: SecretStr | None = None
    wallet_passphrase_file: Path | None = None
    #: The port of ``notary collect --listen`` (``NOTARY_CALLBACK_PORT`` of the pipeline):
    #: the one loopback port the API's callbacks may reach (docs/security.md).
    collector_port: int = Field(default=8092, ge=1, le=65535)

    def url(self, port: int, path: str, *, tls: bool = False) -> str:
        """``http://<dial host>:port/path`` (``https`` when ``tls``; class docstring)."""
        host = self.dial_host or client_host(self.host)
        host = f"[{host}]" if ":" in host else host
        return f"{'https' if tls else 'http'}://{host}:{port}{path}"

    @property
    def node_url(self) -> str:
        return self.url(self.node_port, "/v2", tls=self.tls_enabled)

    @property
    def wallet_url(self) -> str:
        return self.url(self.wallet_port, "/v2", tls=self.tls_enabled)

    @property
    def api_url(self) -> str:
        return self.url(self.api_port, "/v1", tls=self.tls_enabled)

    @property
    def anchor_url(self) -> str:
        return self.url(self.anchor_port, "/v2", tls=self.tls_enabled)
