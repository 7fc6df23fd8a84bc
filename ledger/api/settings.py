"""Configuration of the publishing REST API (one settings object, env prefix ``NOTARY_API_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from ledger.jsonrpc.credentials import RpcAccess
from ledger.observability.logs import LogFormat
from ledger.serving import NodeAccess, TlsServing, rpc_access

__all__ = ["ApiSettings"]


class ApiSettings(TlsServing, NodeAccess):
    """Settings of one publishing API process.

    Every field can be set from the environment as ``NOTARY_API_<FIELD>`` (for instance
    ``NOTARY_API_DATABASE_URL=postgresql+psycopg://user@127.0.0.1:5432/notary``).

    Attributes:
        host, port: where ``python -m ledger.api`` binds (default 127.0.0.1:8090).
        tls_cert_file, tls_key_file: PEM certificate chain and private key; when both are set,
            ``python -m ledger.api`` serves HTTPS only (TLS by uvicorn), as the spec's
            transport is HTTPS. Neither (the default): plain HTTP, meant for loopback
            development. One without the other is a configuration error.
        tls_key_password: password of an encrypted ``tls_key_file``.
        data_dir: folder of the default SQLite database file.
        database_url: SQLAlchemy URL; ``None`` means ``sqlite:///<data_dir>/api.sqlite``.
            PostgreSQL: ``postgresql+psycopg://user:pass@host:5432/dbname``.
        node_url, wallet_url: JSON-RPC endpoints of the ledger node and the wallet service.
        node_rpc_user, node_rpc_password, node_tls_ca_file: what the API sends to a locked
            node and the authority it trusts for the node's certificate
            (``ledger.serving.NodeAccess``; docs/jsonrpc.md §1.1).
        wallet_rpc_user, wallet_rpc_password, wallet_tls_ca_file: the same for the wallet.
        ec_address: public entry credit address (``EC...``) that pays for chains and entries;
            the wallet holds its key.
        public_base_url: origin used in response ``links`` (``https://api.example.org``);
            ``None`` means the origin of the incoming request.
        worker_enabled: start the background worker in the app lifespan.
        worker_poll_interval_s: pause between two worker passes, seconds.
        worker_batch_size: most directory blocks, anchor heights or callbacks handled per
            step of one pass.
        submit_rows_per_pass: most due rows of each kind (new chains, entries) submitted in
            one pass; a pass that reaches it (or is behind on blocks) is followed at once.
        submit_chunk_rows: rows per compose / commit / reveal JSON-RPC round trip.
        anchor_poll_interval_s: least time between two look-ups of anchors, seconds.
        submit_max_attempts: transient compose/commit/reveal errors (answered by the wallet
            or node; not outages) after which a row is given up as ``failed``; a refusal of
            the write itself fails it at once, an under-funded commit holds it
            (``ledger.api.outbox.refusals``).
        submit_retry_base_s: first back-off delay after such a failure, seconds (doubles).
        credit_check_interval_s: how often the paying address's balance is looked up while
            it pays, seconds (for the status: ``Services.credit_status()``).
        credit_retry_base_s, credit_retry_max_s: once the address ran dry (writes held),
            first and longest delay between two look-ups of its balance, seconds; the
            delay doubles while it still does not pay (``ledger.api.outbox.credit_gate``).
        max_body_bytes: largest accepted request body, bytes (larger: HTTP 413); the
            bulk route has its own limit.
        bulk_max_entries: most entries one bulk write (``POST .../entries/bulk``,
            ``ledger.api.http.bulk``) may carry (more: HTTP 422).
        bulk_max_body_bytes: largest body of a bulk write, bytes (larger: HTTP 413).
        page_size_default, page_size_max: ``limit`` of list operations.
        callback_secret: HMAC-SHA256 key of the ``X-Notary-Signature`` callback header;
            ``None`` means a random secret generated once and kept in the database.
        callback_allowed_hosts: host names, IP addresses or CIDR networks that callbacks may
            reach although they are private or loopback (for instance ``["127.0.0.1"]``).
        callback_timeout_s: timeout of one callback POST, seconds.
        callback_retry_base_s, callback_retry_max_s: exponential back-off of failed callbacks
            (first delay, largest delay), seconds.
        callback_give_up_s: a callback not delivered this long after it was queued is dropped.
        write_batch_max: most writes (operations 2 and 6) grouped into one database
            transaction by the group-commit writer.
        write_fast_path: answer operations 2 and 6 in the ASGI fast path
            (``ledger.api.http.fastpath``) rather than through FastAPI's routing; same answers.
        auth_cache_ttl_s: how long a verified key -> account mapping is reused without a
            database look-up, seconds. A revoked key stops reading after at most this long;
            writes check the account in their own transaction, so they stop at once.
        auth_cache_max_keys: most keys kept in that cache.
        auth_failure_burst, auth_failure_rate_per_s: unknown keys one client address may
            send at once, then per second, before its requests are answered 429
            (``ledger.throttle.AuthFailureThrottle``, docs/security.md).
        rate_limit_per_s, rate_limit_burst: token bucket per account (requests per second
            sustained, largest burst); over it: HTTP 429 with ``Retry-After``. A rate of
            0 turns the limit off.
        sandbox: run as the sandbox (``python -m ledger.api --sandbox``): chains and entries
            go to ``sandbox_database_url``, accounts (the same keys) are read from the main
            database, the ledger is a built-in test ledger unless ``sandbox_node_url`` and
            ``sandbox_wallet_url`` name one, nothing is anchored, and the data is purged every
            ``sandbox_purge_interval_s``.
        sandbox_database_url: SQLAlchemy URL of the sandbox data; ``None`` means
            ``sqlite:///<data_dir>/sandbox.sqlite``.
        sandbox_node_url, sandbox_wallet_url: a test network to use instead of the built-in
            test ledger (both or neither).
        sandbox_block_time_s: block period of the built-in test ledger, seconds.
        sandbox_purge_interval_s: period of the sandbox purge, seconds.
        log_format, log_level: log lines as ``text`` (people) or ``json`` (log collectors),
            at ``log_level`` or above (``python -m ledger.api``; ``notary up`` takes the
            command line's).
        ready_timeout_s: longest time one readiness check may take, seconds.
        ready_max_unblocked_age_s: ``/health/ready`` fails when an accepted write has
            waited longer than this for its directory block, seconds.
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_API_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8090, ge=0, le=65535)
    data_dir: Path = Path(".notary/api")
    database_url: str | None = None
    node_url: str = "http://127.0.0.1:8088/v2"
    wallet_url: str = "http://127.0.0.1:8089/v2"
    wallet_rpc_user: str | None = None
    wallet_rpc_password: SecretStr | None = None
    wallet_tls_ca_file: Path | None = None
    ec_address: str = ""
    public_base_url: str | None = None
    worker_enabled: bool = True
    worker_poll_interval_s: float = Field(default=1.0, gt=0)
    worker_batch_size: int = Field(default=100, ge=1)
    submit_rows_per_pass: int = Field(default=5000, ge=1)
    submit_chunk_rows: int = Field(default=500, ge=1)
    anchor_poll_interval_s: float = Field(default=10.0, ge=0)
    submit_max_attempts: int = Field(default=20, ge=1)
    submit_retry_base_s: float = Field(default=2.0, ge=0)
    credit_check_interval_s: float = Field(default=60.0, gt=0)
    credit_retry_base_s: float = Field(default=2.0, gt=0)
    credit_retry_max_s: float = Field(default=60.0, gt=0)
    max_body_bytes: int = Field(default=65_536, ge=1024)
    bulk_max_entries: int = Field(default=1000, ge=1)
    bulk_max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    page_size_default: int = Field(default=100, ge=1)
    page_size_max: int = Field(default=1000, ge=1)
    callback_secret: SecretStr | None = None
    callback_allowed_hosts: list[str] = Field(default_factory=list)
    callback_timeout_s: float = Field(default=5.0, gt=0)
    callback_retry_base_s: float = Field(default=5.0, gt=0)
    callback_retry_max_s: float = Field(default=600.0, gt=0)
    callback_give_up_s: float = Field(default=86_400.0, gt=0)
    write_batch_max: int = Field(default=512, ge=1)
    write_fast_path: bool = True
    auth_cache_ttl_s: float = Field(default=1.0, ge=0)
    auth_cache_max_keys: int = Field(default=10_000, ge=1)
    rate_limit_per_s: float = Field(default=2_000.0, ge=0)
    rate_limit_burst: int = Field(default=4_000, ge=1)
    auth_failure_burst: int = Field(default=10, ge=1)
    auth_failure_rate_per_s: float = Field(default=1.0, gt=0)
    sandbox: bool = False
    sandbox_database_url: str | None = None
    sandbox_node_url: str | None = None
    sandbox_wallet_url: str | None = None
    sandbox_block_time_s: float = Field(default=10.0, gt=0)
    sandbox_purge_interval_s: float = Field(default=86_400.0, gt=0)
    log_format: LogFormat = "text"
    log_level: str = "info"
    ready_timeout_s: float = Field(default=2.0, gt=0)
    ready_max_unblocked_age_s: float = Field(default=1800.0, gt=0)

    @model_validator(mode="after")
    def _credit_delays(self) -> Self:
        if self.credit_retry_max_s < self.credit_retry_base_s:
            raise ValueError("credit_retry_max_s must be at least credit_retry_base_s")
        return self

    @model_validator(mode="after")
    def _wallet_access_pair(self) -> Self:
        self.wallet_access()
        return self

    def wallet_access(self) -> RpcAccess:
        """The wallet client's ``access`` (credentials and trusted authority).

        Raises:
            CredentialsError: only one of user and password is set, or either is malformed.
        """
        return rpc_access(self.wallet_rpc_user, self.wallet_rpc_password, self.wallet_tls_ca_file)

    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL to use: ``database_url`` or the SQLite file under ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'api.sqlite'}"

    def resolved_records_url(self) -> str:
        """The URL of chains and entries: the sandbox database in sandbox mode, else the main."""
        if not self.sandbox:
            return self.resolved_database_url()
        if self.sandbox_database_url:
            return self.sandbox_database_url
        return f"sqlite:///{self.data_dir / 'sandbox.sqlite'}"
