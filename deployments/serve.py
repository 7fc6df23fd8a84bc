"""The pipeline's deployments, served from one long-running process.

``python -m deployments.serve`` registers and runs, on their schedules, the deployments
of ``deployments.definitions`` (the nightly folder batch and the table poll only when
``NOTARY_DEPLOY_FOLDER`` / ``NOTARY_DEPLOY_TABLE`` are set; the proof collector and the
weekly report always), with the schedules and parameters of ``DeploymentSettings``.

It needs a Prefect server (``PREFECT_API_URL``). The same deployments can instead be sent
to a work pool for workers on many machines: ``prefect deploy --all`` reads
``prefect.yaml``, generated from the same definitions (see the README). Long waits for a
stage are the collector's sweeps, never sleeps in a flow run.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

from deployments.definitions import DEPLOYMENTS, DeploymentSpec, FromSetting
from deployments.settings import DeploymentSettings

__all__ = ["build_deployments", "main"]


def build_deployments(settings: DeploymentSettings) -> list[Any]:
    """The ``RunnerDeployment`` objects for the configured sources, in the order of
    ``DEPLOYMENTS`` (a deployment whose ``requires`` setting is unset is left out)."""
    return [
        _runner_deployment(spec, settings)
        for spec in DEPLOYMENTS
        if spec.requires is None or getattr(settings, spec.requires)
    ]


def _runner_deployment(spec: DeploymentSpec, settings: DeploymentSettings) -> Any:
    flow = getattr(importlib.import_module(spec.module), spec.function)
    parameters = {
        name: getattr(settings, value.name) if isinstance(value, FromSetting) else value
        for name, value in spec.parameters.items()
    }
    when = getattr(settings, spec.schedule_setting)
    schedule = {"cron": when} if spec.schedule == "cron" else {"interval": timedelta(seconds=when)}
    return flow.to_deployment(name=spec.name, parameters=parameters, **schedule)


def main() -> None:
    """Serve every configured deployment until stopped (Ctrl-C)."""
    from prefect import serve

    serve(*build_deployments(DeploymentSettings()))


if __name__ == "__main__":
    main()
