"""Where hash batches run: Prefect's thread pool by default, a Dask cluster when chosen."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings, TaskRunnerUnavailable


def make_files(root: Path, count: int) -> None:
    for i in range(count):
        path = root / f"d{i % 2}" / f"file-{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"dask document {i}\n" * (i + 1))


def completed_recorder() -> Any:
    """A Dask scheduler plugin keeping the keys of the tasks that finished in memory."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Completed(SchedulerPlugin):
        name = "notary-test-completed"

        def __init__(self) -> None:
            self.keys: list[str] = []

        def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
            if finish == "memory":
                self.keys.append(str(key))

    return Completed()


@pytest.fixture
def dask_cluster() -> Iterator[tuple[Any, Any]]:
    pytest.importorskip(
        "prefect_dask", reason="prefect-dask is not installed (pip install 'notary[dask]')"
    )
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
    ) as cluster:
        completed = completed_recorder()
        cluster.scheduler.add_plugin(completed)
        yield cluster, completed


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_folder_is_hashed_on_a_dask_cluster(
    tmp_path: Path, pipeline_settings: PipelineSettings, dask_cluster: tuple[Any, Any]
) -> None:
    cluster, completed = dask_cluster
    folder = tmp_path / "docs"
    make_files(folder, 9)
    settings = pipeline_settings.model_copy(
        update={"task_runner": "dask", "dask_address": cluster.scheduler_address}
    )

    summary = notarize_folder(str(folder), "dask", settings, True)

    assert summary["documents_seen"] == 9 and summary["hash_errors"] == 0
    assert summary["published"] == 9 and summary["documents_with_receipt"] == 9
    # batch_size 7: two hash batches, both run by the cluster's worker.
    assert len([k for k in completed.keys if k.startswith("hash")]) == 2, completed.keys


def test_choosing_dask_without_the_extra_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # as if not installed
    settings = PipelineSettings(data_dir=tmp_path, task_runner="dask")
    with pytest.raises(TaskRunnerUnavailable, match=r"notary\[dask\]"):
        settings.check_task_runner()
    PipelineSettings(data_dir=tmp_path).check_task_runner()  # threads need nothing

    (tmp_path / "api-key").write_text("key\n")
    monkeypatch.setenv("NOTARY_TASK_RUNNER", "dask")
    result = CliRunner().invoke(app, ["notarize", str(tmp_path), "--data-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "notary[dask]" in " ".join(result.output.split())
