"""The pipeline's four deployments, defined once.

Both ways of running them read this list: ``python -m deployments.serve`` builds Prefect
``RunnerDeployment`` objects from it with the values of ``DeploymentSettings``, and the
``prefect.yaml`` that ``prefect deploy --all`` reads is generated from it
(``python -m deployments.prefect_yaml``; a test fails when the committed file drifts).
A parameter or schedule names the ``DeploymentSettings`` field it comes from, so the same
``NOTARY_DEPLOY_*`` variable feeds both: its value when serving, a ``{{ $NOTARY_DEPLOY_* }}``
placeholder that ``prefect deploy`` fills from its environment in ``prefect.yaml``.

=================  ==========================  ===================  ======================
deployment         flow                        schedule (setting)   only when set
=================  ==========================  ===================  ======================
nightly-folder     notarize_folder             ``folder_cron``      ``folder``
table-poll         notarize_table              ``table_interval_s`` ``table``
proof-collector    collect_proofs              ``collect_interval_s``
weekly-report      audit_report (last 7 days)  ``report_cron``
=================  ==========================  ===================  ======================

The table poll's database URL is never a parameter (it may hold a password): the worker's
environment gives it (``NOTARY_TABLE_URL``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from deployments.settings import DeploymentSettings

__all__ = [
    "DEPLOYMENTS",
    "WORK_POOL",
    "DeploymentSpec",
    "FromSetting",
    "env_name",
]

#: The process work pool ``prefect deploy --all`` sends the deployments to.
WORK_POOL = "notary-process"


@dataclass(frozen=True)
class FromSetting:
    """A value taken from the ``DeploymentSettings`` field ``name``."""

    name: str


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment: which flow, on which schedule, with which parameters.

    Attributes:
        name: the deployment's name (``<flow name>/<name>`` in Prefect).
        module, function: where the flow is (``flows.notarize_folder``,
            ``notarize_folder``).
        schedule: ``"cron"`` (the setting holds a cron string, server time zone) or
            ``"interval"`` (the setting holds seconds).
        schedule_setting: the ``DeploymentSettings`` field holding the schedule.
        parameters: flow parameter -> fixed value or ``FromSetting``.
        requires: a ``DeploymentSettings`` field that must be set for ``serve`` to run
            the deployment (``None``: always runs).
    """

    name: str
    module: str
    function: str
    schedule: Literal["cron", "interval"]
    schedule_setting: str
    parameters: Mapping[str, str | FromSetting] = field(default_factory=dict)
    requires: str | None = None

    @property
    def entrypoint(self) -> str:
        """``path/to/module.py:function``, relative to the project root (``prefect.yaml``)."""
        return f"{self.module.replace('.', '/')}.py:{self.function}"


DEPLOYMENTS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        name="nightly-folder",
        module="flows.notarize_folder",
        function="notarize_folder",
        schedule="cron",
        schedule_setting="folder_cron",
        parameters={
            "folder": FromSetting("folder"),
            "collection": FromSetting("folder_collection"),
        },
        requires="folder",
    ),
    DeploymentSpec(
        name="table-poll",
        module="flows.notarize_table",
        function="notarize_table",
        schedule="interval",
        schedule_setting="table_interval_s",
        parameters={"table": FromSetting("table"), "watermark": FromSetting("table_watermark")},
        requires="table",
    ),
    DeploymentSpec(
        name="proof-collector",
        module="flows.collect_proofs",
        function="collect_proofs",
        schedule="interval",
        schedule_setting="collect_interval_s",
    ),
    DeploymentSpec(
        name="weekly-report",
        module="flows.audit_report",
        function="audit_report",
        schedule="cron",
        schedule_setting="report_cron",
        parameters={"since": "-7d"},
    ),
)


def env_name(setting: str) -> str:
    """The environment variable of a ``DeploymentSettings`` field (``folder`` ->
    ``NOTARY_DEPLOY_FOLDER``).

    Raises:
        KeyError: no such field.
    """
    if setting not in DeploymentSettings.model_fields:
        raise KeyError(f"DeploymentSettings has no field {setting!r}")
    prefix = DeploymentSettings.model_config.get("env_prefix", "")
    return f"{prefix}{setting}".upper()
