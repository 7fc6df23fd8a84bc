"""What the scheduled deployments run (environment prefix ``NOTARY_DEPLOY_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DeploymentSettings(BaseSettings):
    """Schedules and sources of the four deployments.

    Attributes:
        folder: folder of the nightly batch (no folder: that deployment is left out).
        folder_collection: its collection (default: the folder's path).
        folder_cron: when the nightly batch runs (cron, server time zone).
        table / table_watermark: the polled table (no table: left out); its database URL
            comes from ``NOTARY_TABLE_URL`` (never stored as a deployment parameter).
        table_interval_s: seconds between two polls of the table.
        collect_interval_s: seconds between two sweeps of the proof collector.
        report_cron: when the weekly report runs; it covers the last seven days.
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_DEPLOY_", extra="ignore")

    folder: str | None = None
    folder_collection: str | None = None
    folder_cron: str = "0 2 * * *"
    table: str | None = None
    table_watermark: str | None = None
    table_interval_s: float = Field(default=300, gt=0)
    collect_interval_s: float = Field(default=60, gt=0)
    report_cron: str = "0 6 * * 1"
