"""Settings of the pipeline and the command line (environment prefix ``NOTARY_``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.audit import PublishMode
from flows.errors import FlowError
from ledger.core.proof.policy import TrustPolicy, policy_named
from ledger.jsonrpc.credentials import BasicCredentials, RpcAccess
from ledger.observability.logs import LogFormat
from tasks.hashing import SmallFilesIn

#: Path of the callback receiver's one route (``connectors.callback_receiver``).
CALLBACK_PATH = "/callbacks"

TaskRunnerName = Literal["threads", "dask"]


class PipelineSettings(BaseSettings):
    """Where the services are, where the audit store lives, and how work is batched.

    Attributes:
        data_dir: folder of the bundled stack's data and of the default audit store.
        audit_db_url: SQLAlchemy URL of the audit store; default ``sqlite:///<data_dir>/audit.sqlite``.
        audit_connect_retry_s: how long a PostgreSQL audit store that refuses connections
            (restarting) is tried again before a run fails, seconds (0: not at all).
        api_url: publishing API base URL (with ``/v1``).
        api_key: the account's key (``user-key``); default: read from ``<data_dir>/api-key``.
        node_url: ledger node JSON-RPC URL (receipts are fetched from the node).
        anchor_url: anchoring service JSON-RPC URL (anchor proofs of directory blocks).
        node_rpc_user, node_rpc_password: the node's RPC user and password
            (``NOTARY_NODE_RPC_USER`` / ``NOTARY_NODE_RPC_PASSWORD``, the variables that
            lock the node itself; docs/jsonrpc.md §1.1); default: the ``user:password`` that
            ``notary up`` keeps in ``<data_dir>/rpc-credentials``, else none.
        anchor_rpc_user, anchor_rpc_password: the same for the anchoring service
            (``NOTARY_ANCHOR_RPC_USER`` / ``..._PASSWORD``; same default).
        node_tls_ca_file, anchor_tls_ca_file: PEM file of the authorities trusted for an
            ``https://`` node or anchoring URL; default: the system's store.
        table_url: source database of ``notarize_table`` when a run gives none (kept out of
            Prefect's stored parameters because it may hold a password).
        batch_size: documents per task run (a task run costs milliseconds in Prefect, and
            each window of a folder run one audit store commit): 2,000 took a 100,000-file
            aggregated run from 19.4 to 16.2 s against 500, at the same peak memory.
        publish_mode: how a new collection publishes (``NOTARY_PUBLISH_MODE``, ``--mode``):
            ``aggregate`` (default) one entry per batch of up to ``aggregate_batch_size``
            documents, ``entry`` one commitment entry per document (findable by its
            external ID), ``clear`` one entry per document with its path, size and SHA-256
            in clear (public and permanent). Nothing private is published in the first two
            (``docs/formats.md``). A collection keeps clear or private once registered;
            when no mode is set, a registered collection goes on in its own mode.
        aggregate_batch_size: documents per batch entry in ``aggregate`` mode (>= 1).
        hash_workers: threads hashing files at once inside one batch.
        run_heartbeat_s: seconds between two heartbeats of a running flow run in the audit
            store (``flows.run_heartbeat``).
        run_stale_s: a run still ``running`` whose heartbeat is older than this (seconds;
            several heartbeats) is marked ``crashed`` by the next run or ``collect``; a
            run of this host whose process is gone is marked at once
            (``connectors.audit.runs``).
        hash_attempts: passes over a file that changes while it is hashed (its size,
            modification or change time, inode or device move between opening it and
            reading its end) before it is recorded as the per-file error "changed while
            hashed" and left for the next run or ``watch`` (``tasks.hashing``).
        hash_small_files: where a batch of small files (mean under 64 KiB) is hashed:
            ``process`` (default) in a child process of the flow's (``tasks.hash_process``:
            on another core, so that the flow's process only records and publishes) or
            ``thread`` (one thread of the flow's process, as before). A child that cannot
            start or dies falls back to ``thread`` for that batch, with a warning. With
            ``process`` the folder is walked in a child too (``tasks.scan_process``).
        task_runner: where hash batches run: ``threads`` (Prefect's thread pool in this
            process) or ``dask`` (a Dask cluster; needs the ``notary[dask]`` extra).
        dask_address: scheduler address of an existing Dask cluster
            (``tcp://host:8786``); ``None`` starts a temporary local cluster per run. The
            workers must see the documents at the same paths (a shared mount).
        publish_concurrency: simultaneous POSTs to the publishing API.
        ledger_wait_s: how long ``notarize`` waits for the ``ledger`` stage before leaving
            the rest to a later ``collect`` sweep.
        failed_write_check_s: while ``notarize`` waits for ``ledger``, how often it asks the
            publishing API for writes it gave up (those are failed, not waited for), seconds.
        callback_enabled: publish entries with a callback URL, so that the publishing API
            calls ``notary collect --listen`` when an entry reaches ``ledger`` or ``anchor``.
        callback_host, callback_port: where ``notary collect --listen`` receives callbacks
            (loopback by default).
        callback_public_url: the URL the publishing API posts to when it is not
            ``http://<callback_host>:<callback_port>/callbacks`` (a proxy in between).
        callback_secret: the publishing API's HMAC key (``NOTARY_API_CALLBACK_SECRET`` of the
            API); default: read from ``<data_dir>/callback-secret`` (written by ``notary up``).
        callback_max_skew_s: a callback whose signed timestamp is further than this from
            the receiver's clock is refused (limits replays).
        collect_interval_s: longest pause of ``notary collect --listen`` between two sweeps
            (the pause starts at ``collect_first_interval_s`` and doubles while entries
            wait and nothing moves; a callback ends it at once).
        prefect_api_url: a Prefect server for the command line's flow runs; default: the
            one ``notary up`` started (``<data_dir>/prefect-api-url``), else ``PREFECT_API_URL``,
            else a temporary server per command.
        log_format, log_level: the command line's log lines (and those of the services
            ``notary up`` runs): ``text`` for people or ``json`` for log collectors, one
            line per event, at ``log_level`` or above (``--log-format``, ``--log-level``).
        metrics_port: where ``notary watch`` and ``notary collect --listen`` serve
            ``/metrics``, ``/health/live`` and ``/health/ready`` (``--metrics-port``);
            None (the default): no such server.
        metrics_host: the address that server binds (loopback by default).
        ready_max_unanchored_age_s: the collector's ``/health/ready`` fails when a
            notarization has waited longer than this for its anchor, seconds.
        trust_policy: the trust policy (``ledger.core.proof.policy``) under which the
            pipeline checks anchors and exports bundles (``NOTARY_TRUST_POLICY``): a shipped
            name; ``devnet`` (the default) for the bundled chain, e.g. ``litecoin-regtest``
            for a node run in regtest.
    """

    # hide_input_in_errors: a validation error must not quote a password or a URL's.
    model_config = SettingsConfigDict(
        env_prefix="NOTARY_", extra="ignore", hide_input_in_errors=True
    )

    data_dir: Path = Path(".notary")
    audit_db_url: str | None = None
    audit_connect_retry_s: float = Field(default=30.0, ge=0)
    api_url: str = "http://127.0.0.1:8090/v1"
    api_key: SecretStr | None = None
    node_url: str = "http://127.0.0.1:8088/v2"
    anchor_url: str = "http://127.0.0.1:8091/v2"
    node_rpc_user: str | None = None
    node_rpc_password: SecretStr | None = None
    node_tls_ca_file: Path | None = None
    anchor_rpc_user: str | None = None
    anchor_rpc_password: SecretStr | None = None
    anchor_tls_ca_file: Path | None = None
    table_url: SecretStr | None = None
    batch_size: int = Field(default=2_000, ge=1, le=10_000)
    publish_mode: PublishMode = "aggregate"
    aggregate_batch_size: int = Field(default=10_000, ge=1, le=1_000_000)
    hash_workers: int = Field(default=4, ge=1, le=64)
    hash_attempts: int = Field(default=3, ge=1, le=100)
    run_heartbeat_s: float = Field(default=30.0, gt=0)
    run_stale_s: float = Field(default=300.0, gt=0)
    hash_small_files: SmallFilesIn = "process"
    task_runner: TaskRunnerName = "threads"
    dask_address: str | None = None
    publish_concurrency: int = Field(default=16, ge=1, le=256)
    ledger_wait_s: float = Field(default=600.0, ge=0)
    failed_write_check_s: float = Field(default=10.0, gt=0)
    http_timeout_s: float = 30.0
    callback_enabled: bool = False
    callback_host: str = "127.0.0.1"
    callback_port: int = Field(default=8092, ge=1, le=65535)
    callback_public_url: str | None = None
    callback_secret: SecretStr | None = None
    callback_max_skew_s: float = Field(default=300.0, gt=0)
    collect_interval_s: float = Field(default=60.0, gt=0)
    collect_first_interval_s: float = Field(default=2.0, gt=0)
    prefect_api_url: str | None = None
    log_format: LogFormat = "text"
    log_level: str = "warning"
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    ready_max_unanchored_age_s: float = Field(default=3600.0, gt=0)
    trust_policy: str = "devnet"

    def policy(self) -> TrustPolicy:
        """The shipped policy ``trust_policy`` names (``PolicyError`` for an unknown one)."""
        return policy_named(self.trust_policy)

    @property
    def audit_url(self) -> str:
        return self.audit_db_url or f"sqlite:///{(self.data_dir / 'audit.sqlite').resolve()}"

    @property
    def api_key_file(self) -> Path:
        return self.data_dir / "api-key"

    @property
    def callback_secret_file(self) -> Path:
        return self.data_dir / "callback-secret"

    @model_validator(mode="after")
    def _rpc_pairs(self) -> Self:
        for user, password, name in (
            (self.node_rpc_user, self.node_rpc_password, "node_rpc"),
            (self.anchor_rpc_user, self.anchor_rpc_password, "anchor_rpc"),
        ):
            if (user is None) != (password is None):
                raise ValueError(f"set both {name}_user and {name}_password, or neither")
        return self

    @model_validator(mode="after")
    def _known_policy(self) -> Self:
        self.policy()  # PolicyError (a ValueError) names the shipped policies
        return self

    @property
    def rpc_credentials_file(self) -> Path:
        """Where ``notary up`` keeps the ``user:password`` of its locked JSON-RPC services."""
        return self.data_dir / "rpc-credentials"

    def node_access(self) -> RpcAccess:
        """Credentials and trusted authority of the node client (see the attributes).

        Raises:
            CredentialsError: only one of user and password is set, or a malformed
                ``rpc-credentials`` file.
        """
        return self._access(self.node_rpc_user, self.node_rpc_password, self.node_tls_ca_file)

    def anchor_access(self) -> RpcAccess:
        """Credentials and trusted authority of the anchoring client (see ``node_access``)."""
        return self._access(self.anchor_rpc_user, self.anchor_rpc_password, self.anchor_tls_ca_file)

    def _access(
        self, user: str | None, password: SecretStr | None, ca_file: Path | None
    ) -> RpcAccess:
        if user is not None or password is not None:
            secret = None if password is None else password.get_secret_value()
            return RpcAccess.from_parts(user, secret, ca_file)
        try:
            text = self.rpc_credentials_file.read_text()
        except FileNotFoundError:
            return RpcAccess(None, ca_file)
        return RpcAccess(BasicCredentials.from_text(text), ca_file)

    @property
    def prefect_api_url_file(self) -> Path:
        """Where ``notary up`` writes the URL of the Prefect server it runs."""
        return self.data_dir / "prefect-api-url"

    @property
    def callback_url(self) -> str:
        """The URL published entries carry as ``callback_url`` (without query)."""
        if self.callback_public_url:
            return self.callback_public_url
        host = f"[{self.callback_host}]" if ":" in self.callback_host else self.callback_host
        return f"http://{host}:{self.callback_port}{CALLBACK_PATH}"

    def resolve_api_key(self) -> str:
        """The API key from settings, else from ``<data_dir>/api-key``.

        Raises:
            MissingApiKey: neither is set.
        """
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        try:
            return self.api_key_file.read_text().strip()
        except FileNotFoundError:
            raise MissingApiKey(
                f"no API key: set NOTARY_API_KEY or start the bundled stack with `notary up` "
                f"(it writes {self.api_key_file})"
            ) from None

    def resolve_callback_secret(self) -> bytes:
        """The publishing API's callback HMAC key (UTF-8 bytes of the configured text).

        Raises:
            MissingCallbackSecret: neither ``NOTARY_CALLBACK_SECRET`` nor the file is set.
        """
        if self.callback_secret is not None:
            return self.callback_secret.get_secret_value().encode("utf-8")
        try:
            return self.callback_secret_file.read_text().strip().encode("utf-8")
        except FileNotFoundError:
            raise MissingCallbackSecret(
                "no callback secret: set NOTARY_CALLBACK_SECRET to the API's "
                f"NOTARY_API_CALLBACK_SECRET, or start the bundled stack with `notary up` "
                f"(it writes {self.callback_secret_file})"
            ) from None

    def check_task_runner(self) -> None:
        """Fail early when the chosen task runner cannot be used.

        Raises:
            TaskRunnerUnavailable: ``dask`` is chosen and ``prefect-dask`` is not installed.
        """
        if self.task_runner == "dask" and importlib.util.find_spec("prefect_dask") is None:
            raise TaskRunnerUnavailable(
                "NOTARY_TASK_RUNNER=dask needs the optional Dask extra: "
                "pip install 'notary[dask]' (or set NOTARY_TASK_RUNNER=threads)"
            )

    def known_prefect_api_url(self) -> str | None:
        """The configured Prefect server URL, else the one ``notary up`` wrote, else None."""
        if self.prefect_api_url:
            return self.prefect_api_url
        try:
            url = self.prefect_api_url_file.read_text().strip()
        except FileNotFoundError:
            return None
        return url if urlsplit(url).scheme in ("http", "https") else None


class MissingApiKey(FlowError, RuntimeError):
    """No publishing API key is configured."""


class MissingCallbackSecret(FlowError, RuntimeError):
    """Callbacks are to be received but the publishing API's HMAC key is not configured."""


class TaskRunnerUnavailable(FlowError, RuntimeError):
    """The configured task runner's package is not installed."""


def quiet_prefect_defaults(data_dir: Path, *, prefect_api_url: str | None = None) -> None:
    """Environment defaults every entry point sets before importing Prefect.

    Telemetry off (the machine has no route to public hosts), Prefect's home inside the
    data folder, a temporary server allowed 2 minutes to start (Prefect's 20 s default
    times out on a busy 2-core machine) and, when given, the Prefect server to use, unless
    the user configured otherwise (a ``PREFECT_*`` variable already set wins).
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_HOME", str((data_dir / "prefect").resolve()))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", prefect_api_url)
