"""The pipeline's deployments, served from one long-running process.

``python -m deployments.serve`` registers and runs, on their schedules:

- ``notarize-folder/nightly-folder``: the folder batch (``NOTARY_DEPLOY_FOLDER``), nightly;
- ``notarize-table/table-poll``: the table poll (``NOTARY_DEPLOY_TABLE``; the database URL
  comes from ``NOTARY_TABLE_URL`` in the worker's environment), every few minutes;
- ``collect-proofs/proof-collector``: the stage sweep (receipts, anchors), every minute;
- ``audit-report/weekly-report``: the report of the last seven days, weekly.

It needs a Prefect server (``PREFECT_API_URL``). The same deployments can instead be sent
to a work pool for workers on many machines: see ``prefect.yaml`` at the project root and
the README. Long waits for a stage are the collector's sweeps, never sleeps in a flow run.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from deployments.settings import DeploymentSettings


def build_deployments(settings: DeploymentSettings) -> list[Any]:
    """The ``RunnerDeployment`` objects for the configured sources (folder and table only
    when configured; collector and report always)."""
    from flows.audit_report import audit_report
    from flows.collect_proofs import collect_proofs
    from flows.notarize_folder import notarize_folder
    from flows.notarize_table import notarize_table

    deployments = []
    if settings.folder:
        params = {"folder": settings.folder, "collection": settings.folder_collection}
        deployments.append(
            notarize_folder.to_deployment(
                name="nightly-folder", cron=settings.folder_cron, parameters=params
            )
        )
    if settings.table:
        # The URL is not a parameter (it may hold a password): the worker's environment
        # gives it (NOTARY_TABLE_URL).
        params = {
            "table": settings.table,
            "watermark": settings.table_watermark,
        }
        deployments.append(
            notarize_table.to_deployment(
                name="table-poll",
                interval=timedelta(seconds=settings.table_interval_s),
                parameters=params,
            )
        )
    deployments.append(
        collect_proofs.to_deployment(
            name="proof-collector", interval=timedelta(seconds=settings.collect_interval_s)
        )
    )
    deployments.append(
        audit_report.to_deployment(
            name="weekly-report", cron=settings.report_cron, parameters={"since": "-7d"}
        )
    )
    return deployments


def main() -> None:
    from prefect import serve

    serve(*build_deployments(DeploymentSettings()))


if __name__ == "__main__":
    main()
