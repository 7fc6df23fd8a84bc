"""Configuration of the anchoring service (one settings object, env prefix ``NOTARY_ANCHOR_``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from ledger import devnet
from ledger.core.hexbytes import from_hex
from ledger.core.pow.params import PowParams
from ledger.jsonrpc.credentials import RpcAccess
from ledger.observability.logs import LogFormat
from ledger.serving import NodeAccess, RpcServing, rpc_access


class AnchorSettings(RpcServing, NodeAccess):
    """Settings of one anchoring service.

    Units are in the names. ``poll_interval_s``: how often the node is asked for new
    directory blocks and confirmed anchors are recorded. ``pow_block_time_s``: one block of
    the bundled proof-of-work chain is mined every so many seconds while there is work (a
    transaction to include, an anchor short of its confirmations); otherwise one every
    ``pow_idle_block_time_s`` (``None``: never idle). ``pow_mining``: where the nonce search
    runs, ``process`` (a child process, ``ledger.anchor.mining``: the search holds the
    interpreter lock, which the bundled stack's other services need) or ``thread`` (this
    process). ``confirmations``: blocks
    (the anchor's own included) before an anchor is final and its record is written.
    ``window_blocks``: directory blocks per window commitment (factomd's Ethereum anchor
    uses 1000). Secrets: ``anchor_secret`` (hex ed25519 seed signing the anchor records) and
    ``ec_secret`` (``Es...`` address paying for them) default to public development keys.
    Reaching it and the node (``ledger.serving``, docs/jsonrpc.md §1.1): ``rpc_user`` /
    ``rpc_password`` lock its JSON-RPC route, ``tls_cert_file`` / ``tls_key_file`` serve
    HTTPS, ``node_rpc_user`` / ``node_rpc_password`` / ``node_tls_ca_file`` reach a locked
    node.

    The external chain (``backend``): ``embedded`` (default) mines the bundled
    proof-of-work chain; ``bitcoin-rpc`` anchors in a Bitcoin Core or Litecoin Core node
    (``ledger.anchor.bitcoin_rpc``) reached at ``btc_rpc_url`` with ``btc_rpc_user`` and
    ``btc_rpc_password`` (or ``btc_rpc_password_file``, read at start; the password is a
    secret and never logged), paying from wallet ``btc_wallet`` at ``btc_fee_rate_sat_vb``
    (sat/vB; None: the wallet's estimate); ``btc_coin`` names the coin in bundles
    (``litecoin-regtest``); an anchor unmined ``btc_stuck_blocks`` blocks after it was sent
    makes readiness say ``fee-too-low``; each call waits at most ``btc_timeout_s``.
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_ANCHOR_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8091
    data_dir: Path = Path(".notary/anchor")
    node_url: str = "http://127.0.0.1:8088/v2"
    poll_interval_s: float = Field(default=1.0, gt=0)
    pow_block_time_s: float = Field(default=1.0, gt=0)
    pow_idle_block_time_s: float | None = Field(default=30.0, gt=0)
    pow_mining: Literal["process", "thread"] = "process"
    pow_chain_name: str = devnet.DEV_POW_CHAIN_NAME
    pow_difficulty_bits: int = Field(default=devnet.DEV_POW_DIFFICULTY_BITS, ge=1, le=64)
    confirmations: int = Field(default=devnet.DEV_POW_CONFIRMATIONS, ge=1)
    window_blocks: int = Field(default=1000, ge=1)
    max_heights_per_round: int = Field(default=200, ge=1)
    contract_address: str = Field(
        default=devnet.DEV_CONTRACT_ADDRESS, pattern=r"^0x[0-9a-fA-F]{40}$"
    )
    anchor_secret: SecretStr = SecretStr(devnet.DEV_ANCHOR_SEED_HEX)
    ec_secret: SecretStr = SecretStr(devnet.DEV_EC_SECRET)
    node_timeout_s: float = Field(default=30.0, gt=0)
    sqlite_synchronous: str = "FULL"
    max_body_bytes: int = 1_048_576
    backend: Literal["embedded", "bitcoin-rpc"] = "embedded"
    btc_rpc_url: str = "http://127.0.0.1:8332/"
    btc_rpc_user: str | None = None
    btc_rpc_password: SecretStr | None = None
    btc_rpc_password_file: Path | None = None
    btc_wallet: str = ""
    btc_coin: Literal["bitcoin", "litecoin"] = "bitcoin"
    btc_fee_rate_sat_vb: float | None = Field(default=None, gt=0)
    btc_stuck_blocks: int = Field(default=6, ge=1)
    btc_timeout_s: float = Field(default=10.0, gt=0)
    #: Log lines as ``text`` (people) or ``json`` (log collectors), at ``log_level`` or
    #: above (``python -m ledger.anchor``; ``notary up`` takes the command line's).
    log_format: LogFormat = "text"
    log_level: str = "warning"
    #: RFC 3161 timestamp authorities asked for a token over every anchored KeyMR
    #: (``ledger.anchor.timestamping``): URLs (comma-separated or a JSON list in the
    #: environment), the PEM file their tokens must chain to (required with URLs),
    #: optional credentials (``user:password``, or a bearer token) and a timeout.
    tsa_urls: Annotated[list[str], NoDecode] = Field(default_factory=list)
    tsa_ca_file: Path | None = None
    tsa_basic_auth: SecretStr | None = None
    tsa_bearer_token: SecretStr | None = None
    tsa_timeout_s: float = Field(default=30.0, gt=0)
    #: OpenTimestamps calendars every anchored KeyMR is submitted to
    #: (``ledger.anchor.ots_stamping``; public ones are listed in docs/opentimestamps.md):
    #: URLs (comma-separated or a JSON list in the environment), how many must answer
    #: (``ots_min``, at most the number of calendars), the Esplora-compatible API the
    #: attested Bitcoin headers are fetched from (None: bundles carry no header and a
    #: verifier must bring its own), a timeout per request, and the wait before a pending
    #: proof is asked about again (doubling from ``ots_upgrade_base_s`` to
    #: ``ots_upgrade_max_s``: Bitcoin takes hours).
    ots_calendars: Annotated[list[str], NoDecode] = Field(default_factory=list)
    ots_min: int = Field(default=1, ge=1)
    ots_headers_url: str | None = None
    ots_timeout_s: float = Field(default=10.0, gt=0)
    ots_upgrade_base_s: float = Field(default=60.0, gt=0)
    ots_upgrade_max_s: float = Field(default=3600.0, gt=0)

    @field_validator("tsa_urls", "ots_calendars", mode="before")
    @classmethod
    def _split_urls(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [u.strip() for u in text.split(",") if u.strip()]
        return value

    @property
    def pow_path(self) -> Path:
        """The proof-of-work chain's SQLite file."""
        return self.data_dir / "pow.sqlite"

    @property
    def state_path(self) -> Path:
        """The service's own SQLite file (what was anchored and recorded)."""
        return self.data_dir / "anchor.sqlite"

    def pow_params(self) -> PowParams:
        """Name, difficulty and confirmations of the bundled chain."""
        return PowParams(self.pow_chain_name, self.pow_difficulty_bits, self.confirmations)

    def btc_access(self) -> RpcAccess:
        """Credentials of the Bitcoin node's RPC (``btc_rpc_password_file`` read now).

        Raises:
            OSError: the password file cannot be read.
            CredentialsError: only one of user and password is set, or either is malformed.
        """
        password = self.btc_rpc_password
        if password is None and self.btc_rpc_password_file is not None:
            password = SecretStr(self.btc_rpc_password_file.read_text(encoding="utf-8").strip())
        return rpc_access(self.btc_rpc_user, password, None)

    def contract_address_bytes(self) -> bytes:
        """The 20-byte contract address."""
        return from_hex(self.contract_address, "contract_address", size=20, allow_0x=True)
