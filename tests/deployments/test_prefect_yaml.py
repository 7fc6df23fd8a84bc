"""``prefect.yaml`` is generated from ``deployments.definitions``: the committed file must
be that output, and ``prefect deploy`` must read the same deployments from it as
``python -m deployments.serve`` builds for the same ``NOTARY_DEPLOY_*`` environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.utilities.templating import apply_values

from deployments.definitions import DEPLOYMENTS, FromSetting, env_name
from deployments.prefect_yaml import main, render
from deployments.serve import build_deployments
from deployments.settings import DeploymentSettings

ROOT = Path(__file__).resolve().parents[2]
ENV = {
    "NOTARY_DEPLOY_FOLDER": "/srv/drop",
    "NOTARY_DEPLOY_FOLDER_COLLECTION": "contracts",
    "NOTARY_DEPLOY_TABLE": "orders",
    "NOTARY_DEPLOY_TABLE_WATERMARK": "updated_at",
}


def test_the_committed_prefect_yaml_is_generated_from_the_definitions() -> None:
    committed = (ROOT / "prefect.yaml").read_text()
    assert committed == render(), (
        "prefect.yaml drifted from deployments/definitions.py: "
        "run `python -m deployments.prefect_yaml` and commit the result"
    )


def schedule_of(runner: Any) -> tuple[str, Any]:
    schedule = runner.schedules[0].schedule
    if getattr(schedule, "cron", None):
        return "cron", schedule.cron
    return "interval", schedule.interval.total_seconds()


def test_prefect_deploy_and_serve_see_the_same_deployments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployed = {d["name"]: apply_values(d, ENV, remove_notset=False) for d in spec["deployments"]}
    served = {d.name: d for d in build_deployments(DeploymentSettings())}
    assert list(deployed) == list(served) == [d.name for d in DEPLOYMENTS]
    for name, runner in served.items():
        from_yaml = deployed[name]
        assert runner.entrypoint.endswith(from_yaml["entrypoint"])
        assert from_yaml.get("parameters", {}) == runner.parameters
        ((kind, when),) = from_yaml["schedules"][0].items()
        assert schedule_of(runner) == (kind, when)
        assert from_yaml["work_pool"]["name"] == "notary-process"


def test_check_reports_drift_and_write_fixes_it(tmp_path: Path) -> None:
    path = tmp_path / "prefect.yaml"
    assert main(["--check", str(path)]) == 1  # missing
    path.write_text(render().replace("0 2 * * *", "0 3 * * *"))
    assert main(["--check", str(path)]) == 1
    assert main([str(path)]) == 0
    assert main(["--check", str(path)]) == 0
    assert path.read_text() == render()


def test_schedules_from_the_environment_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_DEPLOY_FOLDER_CRON", "30 1 * * *")
    monkeypatch.setenv("NOTARY_DEPLOY_COLLECT_INTERVAL_S", "90")
    path = tmp_path / "mine.yaml"
    assert main([str(path), "--from-env"]) == 0
    by_name = {d["name"]: d for d in yaml.safe_load(path.read_text())["deployments"]}
    assert by_name["nightly-folder"]["schedules"] == [{"cron": "30 1 * * *"}]
    assert by_name["proof-collector"]["schedules"] == [{"interval": 90}]
    assert render() == (ROOT / "prefect.yaml").read_text()  # the default ignores the env


def test_every_definition_names_real_settings() -> None:
    fields = DeploymentSettings.model_fields
    for spec in DEPLOYMENTS:
        assert spec.schedule_setting in fields
        assert spec.requires is None or spec.requires in fields
        for value in spec.parameters.values():
            assert not isinstance(value, FromSetting) or value.name in fields
    assert env_name("folder_collection") == "NOTARY_DEPLOY_FOLDER_COLLECTION"
    with pytest.raises(KeyError):
        env_name("nope")
