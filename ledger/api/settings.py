"""Configuration of the publishing REST API (one settings object, env prefix ``NOTARY_API_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ApiSettings"]


class ApiSettings(BaseSettings):
    """Settings of one publishing API process.

    Every field can be set from the environment as ``NOTARY_API_<FIELD>`` (for instance
    ``NOTARY_API_DATABASE_URL=postgresql+psycopg://user@127.0.0.1:5432/notary``).

    Attributes:
        host, port: where ``python -m ledger.api`` binds (default 127.0.0.1:8090).
        data_dir: folder of the default SQLite database file.
        database_url: SQLAlchemy URL; ``None`` means ``sqlite:///<data_dir>/api.sqlite``.
            PostgreSQL: ``postgresql+psycopg://user:pass@host:5432/dbname``.
        node_url, wallet_url: JSON-RPC endpoints of the ledger node and the wallet service.
        ec_address: public entry credit address (``EC...``) that pays for chains and entries;
            the wallet holds its key.
        public_base_url: origin used in response ``links`` (``https://api.example.org``);
            ``None`` means the origin of the incoming request.
        worker_enabled: start the background worker in the app lifespan.
        worker_poll_interval_s: pause between two worker passes, seconds.
        worker_batch_size: most rows (or directory blocks) handled per step of one pass.
        anchor_poll_interval_s: least time between two look-ups of anchors, seconds.
        submit_max_attempts: compose/commit/reveal failures (errors answered by the wallet
            or node, not outages) after which a row is given up as ``failed``.
        submit_retry_base_s: first back-off delay after such a failure, seconds (doubles).
        max_body_bytes: largest accepted request body, bytes (larger: HTTP 413).
        page_size_default, page_size_max: ``limit`` of list operations.
        callback_secret: HMAC-SHA256 key of the ``X-Notary-Signature`` callback header;
            ``None`` means a random secret generated once and kept in the database.
        callback_allowed_hosts: host names, IP addresses or CIDR networks that callbacks may
            reach although they are private or loopback (for instance ``["127.0.0.1"]``).
        callback_timeout_s: timeout of one callback POST, seconds.
        callback_retry_base_s, callback_retry_max_s: exponential back-off of failed callbacks
            (first delay, largest delay), seconds.
        callback_give_up_s: a callback not delivered this long after it was queued is dropped.
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_API_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8090, ge=0, le=65535)
    data_dir: Path = Path(".notary/api")
    database_url: str | None = None
    node_url: str = "http://127.0.0.1:8088/v2"
    wallet_url: str = "http://127.0.0.1:8089/v2"
    ec_address: str = ""
    public_base_url: str | None = None
    worker_enabled: bool = True
    worker_poll_interval_s: float = Field(default=1.0, gt=0)
    worker_batch_size: int = Field(default=100, ge=1)
    anchor_poll_interval_s: float = Field(default=10.0, ge=0)
    submit_max_attempts: int = Field(default=20, ge=1)
    submit_retry_base_s: float = Field(default=2.0, ge=0)
    max_body_bytes: int = Field(default=65_536, ge=1024)
    page_size_default: int = Field(default=100, ge=1)
    page_size_max: int = Field(default=1000, ge=1)
    callback_secret: SecretStr | None = None
    callback_allowed_hosts: list[str] = Field(default_factory=list)
    callback_timeout_s: float = Field(default=5.0, gt=0)
    callback_retry_base_s: float = Field(default=5.0, gt=0)
    callback_retry_max_s: float = Field(default=600.0, gt=0)
    callback_give_up_s: float = Field(default=86_400.0, gt=0)

    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL to use: ``database_url`` or the SQLite file under ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'api.sqlite'}"
