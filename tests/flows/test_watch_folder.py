"""End to end: files dropped into a watched folder are notarized through the real stack;
the ``notary watch`` command's exit codes and Ctrl-C."""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from connectors.audit import AuditStore
from flows.cli.commands.watch import register
from flows.collect_proofs import collect_proofs
from flows.settings import PipelineSettings
from flows.watch_folder import watch_folder
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.waiting import wait_until

DEADLINE_S = 60.0  # generous: a loaded 2-core machine; the waits return as soon as done
PUBLISHED = {"published", "multi_az", "ledger", "anchor"}


class Session:
    """``watch_folder`` running in a thread, stopped through its event."""

    def __init__(self, folder: Path, settings: PipelineSettings, **kwargs: Any) -> None:
        self.stop = threading.Event()
        self.results: list[dict[str, Any]] = []
        self.totals: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(folder, settings), kwargs=kwargs, daemon=True
        )
        self._thread.start()

    def _run(self, folder: Path, settings: PipelineSettings, **kwargs: Any) -> None:
        try:
            self.totals = watch_folder(
                [folder],
                kwargs.pop("collection"),
                settings,
                settle_s=0.3,
                batch_max_wait_s=0.2,
                poll_interval_s=0.05,
                retry_delay_s=1.0,
                stop_event=self.stop,
                on_batch_result=lambda _root, result: self.results.append(result),
                **kwargs,
            )
        except BaseException as exc:  # surfaced by finish()
            self.error = exc

    def files_done(self) -> int:
        if self.error is not None:
            raise self.error
        return sum(r["documents_seen"] for r in self.results)

    def finish(self) -> dict[str, Any]:
        self.stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "watch_folder did not stop"
        if self.error is not None:
            raise self.error
        assert self.totals is not None
        return self.totals


@pytest.fixture
def sessions() -> Iterator[list[Session]]:
    started: list[Session] = []
    yield started
    for session in started:
        session.stop.set()


def stages(store: AuditStore, collection: str) -> dict[str, str]:
    return {
        p.notarization.path: p.notarization.stage
        for p in store.proofs.records(collection=collection)
    }


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_dropped_files_are_notarized_moved_to_done_and_reach_the_ledger(
    tmp_path: Path, pipeline_settings: PipelineSettings, sessions: list[Session]
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    contents = {"old.txt": b"already there at startup", "a.pdf": b"%PDF a", "sub/b.txt": b"b"}
    (inbox / "old.txt").write_bytes(contents["old.txt"])
    (inbox / ".hidden").write_text("never notarized")
    store = AuditStore(pipeline_settings.audit_url)
    session = Session(inbox, pipeline_settings, collection="drop", done_dir="done")
    sessions.append(session)
    done = inbox / "done"
    wait_until(lambda: (done / "old.txt").exists(), DEADLINE_S, what="the startup scan")

    part = inbox / "a.pdf.part"
    with open(part, "wb") as handle:  # a download: written under a temporary name...
        handle.write(contents["a.pdf"][:3])
        handle.flush()
        handle.write(contents["a.pdf"][3:])
    os.rename(part, inbox / "a.pdf")  # ...then renamed into place
    (inbox / "sub").mkdir()
    (inbox / "sub" / "b.txt").write_bytes(contents["sub/b.txt"])
    wait_until(
        lambda: (done / "a.pdf").exists() and (done / "sub" / "b.txt").exists(),
        DEADLINE_S,
        what="the dropped files to be moved to done/",
    )

    rows = {p.notarization.path: p.notarization for p in store.proofs.records(collection="drop")}
    assert set(rows) == set(contents)
    for path, data in contents.items():
        assert rows[path].sha256 == hashlib.sha256(data).hexdigest()
        assert rows[path].stage in PUBLISHED  # moved only once published
        assert (done / path).read_bytes() == data
    assert sorted(p.name for p in inbox.iterdir()) == [".hidden", "done", "sub"]
    assert list((inbox / "sub").iterdir()) == []

    def in_ledger() -> bool:
        collect_proofs(pipeline_settings, "drop")
        return set(stages(store, "drop").values()) <= {"ledger", "anchor"}

    wait_until(in_ledger, DEADLINE_S, 0.5, what="the entries to reach a directory block")
    assert len([p for p in store.proofs.records(collection="drop") if p.receipt is not None]) == 3

    totals = session.finish()
    assert totals["published"] == 3 and totals["moved"] == 3
    assert totals["publish_failed"] == 0 and totals["hash_errors"] == 0


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_restart_rescans_and_publishes_known_documents_only_once(
    tmp_path: Path, pipeline_settings: PipelineSettings, sessions: list[Session]
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for i in range(3):
        (inbox / f"doc-{i}.txt").write_bytes(f"document {i}".encode())
    store = AuditStore(pipeline_settings.audit_url)
    first = Session(inbox, pipeline_settings, collection="restart")
    sessions.append(first)
    wait_until(lambda: first.files_done() == 3, DEADLINE_S, what="the startup scan")
    (inbox / "copy.txt").write_bytes(b"document 0")  # same content: already notarized
    wait_until(lambda: first.files_done() == 4, DEADLINE_S, what="the copy to be handed off")
    totals = first.finish()
    assert totals["published"] == 3 and totals["skipped_known"] == 1 and totals["moved"] == 0
    assert set(stages(store, "restart").values()) <= PUBLISHED
    assert len(stages(store, "restart")) == 3

    second = Session(inbox, pipeline_settings, collection="restart")
    sessions.append(second)
    wait_until(lambda: second.files_done() == 4, DEADLINE_S, what="the rescan after a restart")
    again = second.finish()
    assert again["published"] == 0 and again["skipped_known"] == 4
    assert len(store.proofs.records(collection="restart")) == 3
    assert sorted(p.name for p in inbox.iterdir()) == [
        "copy.txt",
        "doc-0.txt",
        "doc-1.txt",
        "doc-2.txt",
    ]


# -- the command line ----------------------------------------------------------------------

CLI_SCRIPT = "\n".join(
    [
        "import typer",
        "from flows.cli.commands.watch import register",
        "app = typer.Typer()",
        "app.callback()(lambda: None)",
        "register(app)",
        "app()",
    ]
)


def cli_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test app holding only the watch command."""

    register(app)
    return app


def test_watch_command_usage_errors_and_unreachable_services(tmp_path: Path) -> None:
    runner = CliRunner()
    app = cli_app()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    help_text = runner.invoke(app, ["watch", "--help"], env={"COLUMNS": "200"}).output
    assert "--settle" in help_text and "--done-dir" in help_text and "--collection" in help_text

    data = ["--data-dir", str(tmp_path / "data")]
    assert runner.invoke(app, ["watch", str(tmp_path / "missing"), *data]).exit_code == 2
    no_key = runner.invoke(app, ["watch", str(inbox), *data], env={"NOTARY_API_KEY": None})
    assert no_key.exit_code == 2 and "API key" in no_key.output

    env = {"NOTARY_API_KEY": "k", "NOTARY_API_URL": f"http://127.0.0.1:{free_port()}/v1"}
    same = runner.invoke(app, ["watch", str(inbox), "--done-dir", ".", *data], env=env)
    assert same.exit_code == 2
    down = runner.invoke(app, ["watch", str(inbox), *data], env=env)
    assert down.exit_code == 3 and "notary up" in down.output


@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_harness")
def test_watch_command_notarizes_a_drop_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    from prefect.settings import PREFECT_API_URL

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    env = child_env(
        {
            "NOTARY_API_URL": pipeline_settings.api_url,
            "NOTARY_NODE_URL": pipeline_settings.node_url,
            "PREFECT_API_URL": str(PREFECT_API_URL.value()),
            "COLUMNS": "300",
        }
    )
    args = ["watch", str(inbox), "--collection", "cli", "--settle", "0.2", "--done-dir", "done"]
    args += ["--data-dir", str(pipeline_settings.data_dir)]
    argv = [sys.executable, "-c", CLI_SCRIPT, *args]
    proc = ManagedProcess("notary-watch", argv, env, tmp_path / "watch.log")
    proc.spawn()
    try:
        # a fresh process imports Prefect and opens its first flow run: slow under load
        wait_until(lambda: "watching" in proc.log_tail(chars=None), 120, what="the start")
        (inbox / "x.txt").write_bytes(b"dropped through the command line")
        wait_until(lambda: (inbox / "done" / "x.txt").exists(), 120, what="x.txt to be moved")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, proc.log_tail(chars=None)
    finally:
        proc.kill9()
    output = proc.log_tail(chars=None)
    assert "1 published" in output and "stopped:" in output, output
    # The chain was created before watching began: the batch wrote one entry (1 EC).
    batch = next(line for line in output.splitlines() if "1 published" in line)
    assert "ledger entries written: 1 (1 EC)" in batch, output
    stopped = next(line for line in output.splitlines() if "stopped:" in line)
    assert "ledger entries written: 1 (1 EC)" in stopped, output
