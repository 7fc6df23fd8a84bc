"""A file that keeps changing while a run hashes it is not notarized with a torn hash: the
run records the per-file error "changed while hashed" and exits incomplete; the next run,
once the file has settled, notarizes it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from connectors.audit import AuditStore
from flows.cli.exit_codes import ExitCode
from flows.cli.run_output import run_exit_code
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from tests.tasks.torn_reads import Race, settle_in_the_past

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_a_file_written_during_every_pass_is_left_for_the_next_run(
    tmp_path: Path, pipeline_settings: PipelineSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "contract.pdf").write_bytes(b"%PDF contract\n")
    (folder / "invoice.pdf").write_bytes(b"%PDF invoice\n")
    log = folder / "server.log"
    log.write_bytes(b"started\n" * 1000)
    settle_in_the_past(log)
    # in this process (the race wraps its reads): files hashed on a thread, not the child
    settings = pipeline_settings.model_copy(
        update={"hash_small_files": "thread", "hash_attempts": 2}
    )
    race = Race(str(log), "append", b"one more line\n", times=0)
    with monkeypatch.context() as patched:
        race.install(patched.setattr)
        first = notarize_folder(str(folder), "changing", settings, True)

    assert race.fired == 2  # two passes, each saw the file grow
    assert (first["queued"], first["hash_errors"]) == (2, 1)
    assert first["errors"] == ["server.log: FileChangedError: changed while hashed (2 attempts)"]
    assert run_exit_code(first) == ExitCode.INCOMPLETE

    second = notarize_folder(str(folder), "changing", settings, True)  # it has settled
    assert (second["queued"], second["skipped_known"], second["hash_errors"]) == (1, 2, 0)
    assert run_exit_code(second) == ExitCode.OK
    with AuditStore(settings.audit_url) as store:
        hashes = {p.notarization.path: p.notarization.sha256 for p in store.proofs.records()}
    assert hashes["server.log"] == hashlib.sha256(log.read_bytes()).hexdigest()
