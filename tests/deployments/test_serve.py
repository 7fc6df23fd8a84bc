"""The deployments: names, schedules and parameters, built without a server."""

from __future__ import annotations

from pathlib import Path

import yaml

from deployments.serve import build_deployments
from deployments.settings import DeploymentSettings


def test_collector_and_report_always_present_sources_only_when_configured() -> None:
    names = [d.name for d in build_deployments(DeploymentSettings())]
    assert names == ["proof-collector", "weekly-report"]


def test_configured_sources_get_their_schedules_and_parameters() -> None:
    settings = DeploymentSettings(
        folder="/srv/drop",
        table="orders",
        table_watermark="updated_at",
        table_interval_s=120,
    )
    by_name = {d.name: d for d in build_deployments(settings)}
    assert set(by_name) == {"nightly-folder", "table-poll", "proof-collector", "weekly-report"}
    assert by_name["nightly-folder"].parameters["folder"] == "/srv/drop"
    assert by_name["nightly-folder"].schedules[0].schedule.cron == "0 2 * * *"
    table = by_name["table-poll"]
    assert table.parameters["table"] == "orders"
    assert "url" not in table.parameters
    assert table.schedules[0].schedule.interval.total_seconds() == 120
    assert by_name["weekly-report"].parameters == {"since": "-7d"}


def test_prefect_yaml_entrypoints_exist() -> None:
    root = Path(__file__).resolve().parents[2]
    spec = yaml.safe_load((root / "prefect.yaml").read_text())
    for deployment in spec["deployments"]:
        path, _, name = deployment["entrypoint"].partition(":")
        assert f"def {name}(" in (root / path).read_text()
