"""Settings of the pipeline and the command line (environment prefix ``NOTARY_``)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class PipelineSettings(BaseSettings):
    """Where the services are, where the audit store lives, and how work is batched.

    Attributes:
        data_dir: folder of the bundled stack's data and of the default audit store.
        audit_db_url: SQLAlchemy URL of the audit store; default ``sqlite:///<data_dir>/audit.sqlite``.
        api_url: publishing API base URL (with ``/v1``).
        api_key: the account's key (``user-key``); default: read from ``<data_dir>/api-key``.
        node_url: ledger node JSON-RPC URL (receipts are fetched from the node).
        anchor_url: anchoring service JSON-RPC URL (anchor proofs of directory blocks).
        table_url: source database of ``notarize_table`` when a run gives none (kept out of
            Prefect's stored parameters because it may hold a password).
        batch_size: documents per task run (a task run costs milliseconds in Prefect).
        hash_workers: threads hashing files at once.
        publish_concurrency: simultaneous POSTs to the publishing API.
        ledger_wait_s: how long ``notarize`` waits for the ``ledger`` stage before leaving
            the rest to a later ``collect`` sweep.
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_", extra="ignore")

    data_dir: Path = Path(".notary")
    audit_db_url: str | None = None
    api_url: str = "http://127.0.0.1:8090/v1"
    api_key: SecretStr | None = None
    node_url: str = "http://127.0.0.1:8088/v2"
    anchor_url: str = "http://127.0.0.1:8091/v2"
    table_url: SecretStr | None = None
    batch_size: int = Field(default=500, ge=1, le=10_000)
    hash_workers: int = Field(default=4, ge=1, le=64)
    publish_concurrency: int = Field(default=16, ge=1, le=256)
    ledger_wait_s: float = Field(default=600.0, ge=0)
    http_timeout_s: float = 30.0

    @property
    def audit_url(self) -> str:
        return self.audit_db_url or f"sqlite:///{(self.data_dir / 'audit.sqlite').resolve()}"

    @property
    def api_key_file(self) -> Path:
        return self.data_dir / "api-key"

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


class MissingApiKey(RuntimeError):
    """No publishing API key is configured."""


def quiet_prefect_defaults(data_dir: Path) -> None:
    """Environment defaults every entry point sets before importing Prefect.

    Telemetry off (the machine has no route to public hosts) and Prefect's home inside
    the data folder, unless the user configured otherwise.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_HOME", str((data_dir / "prefect").resolve()))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
