"""Two real Prefect process workers of one work pool notarize overlapping folders at once.

The deployment path of the README, for real: ``prefect server start`` as a child process
(its home in the test's folder), ``prefect work-pool create`` of the process pool
``WORK_POOL``, ``prefect deploy`` of the project's ``prefect.yaml`` (the nightly folder
deployment), and two ``prefect worker start --limit 1`` processes whose environment holds
the pipeline's settings (``NOTARY_*``: the test stack's API, node and anchor, an audit
store in a fresh PostgreSQL database). Two flow runs of the deployment are created at
once over a folder and its subfolder, in one collection; each worker takes one (the limit
of one flow run per worker makes the second worker take the other run).

The overlap is made, not hoped for: the test creates the audit tables, then holds a lock on
the ``collections`` table (``held_table_lock``) while it creates the runs. Each run's first
read of its collection waits there; the test lets both go once Prefect reports both runs
``RUNNING`` and PostgreSQL shows both sessions waiting. Neither run can end before the
other has started, however slowly the second worker picks its run up, and the two then
race from their first step (registering the collection, creating its chain) to the last.

Proven: both runs completed, in different workers, overlapping in time; each run's record
counts every document of its own in a directory block, none waiting or failed, no error;
every document
of the union of the two folders is notarized exactly once in the audit store, at
``ledger`` or ``anchor``, with a receipt that verifies up to the node's directory block;
no notarization logged a stage twice; the collection's chain on the node holds each
recorded entry exactly once and nothing else but its first entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.objects import FlowRun, StateType

from connectors.audit import AuditStore
from connectors.node import NodeClient
from deployments.definitions import DEPLOYMENTS, WORK_POOL, env_name
from flows.cli.prefect_server import PrefectServer
from flows.settings import PipelineSettings
from ledger.core.receipt import Receipt, verify_receipt
from tasks.documents import LedgerEntry, collection_entry
from tests.harness.ports import free_port
from tests.harness.postgres import TableLock, held_table_lock
from tests.harness.processes import ROOT, ManagedProcess, child_env, settings_env
from tests.harness.waiting import wait_until
from tests.reliability.fault_stack import chain_entry_hashes

# Not `slow`: `make test` (CI) runs it. The gate on the audit store makes the overlap
# certain, so the test no longer depends on how fast the second worker polls. On two cores
# at load 9-13 it took 2-4 min (10 of 10 passed); the runs themselves last 6-17 s, the rest
# is starting the Prefect server, `prefect deploy` and the flow processes.
pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

#: The folder of the first run holds ``OWN`` files plus the subfolder of the second run,
#: which holds ``SHARED``: the second run's documents are all the first run's too.
OWN, SHARED = 60, 240
DEPLOYMENT = next(d for d in DEPLOYMENTS if d.module == "flows.notarize_folder")
QUIET = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}


def make_documents(root: Path) -> dict[str, bytes]:
    """``OWN`` files in ``root`` and ``SHARED`` in ``root/shared``, all distinct; returns
    path relative to ``root`` -> content."""
    files: dict[str, bytes] = {}
    for i in range(OWN + SHARED):
        rel = f"own/doc-{i:04d}.txt" if i < OWN else f"shared/part{i % 3}/doc-{i:04d}.txt"
        files[rel] = f"many workers, document {i}\n".encode() * (1 + i % 7)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(files[rel])
    return files


def assert_notarized_once(
    store: AuditStore, node: NodeClient, *, collection: str, sha256s: set[str]
) -> set[str]:
    """The audit store's side: every hash of ``sha256s`` notarized exactly once in the
    collection's chain, at ``ledger`` or ``anchor``, with a stored receipt that verifies
    up to the directory block the node serves at its height, and no stage logged twice
    for one notarization. Returns the entry hashes the store recorded (one per batch in the default
    ``aggregate`` mode; a document's record is its batch's entry).

    Written against the store's public methods (``proofs``, ``summary``, ``known_hashes``,
    ``stage_events``), so that another way of notarizing (one entry per batch) only
    changes this function.
    """
    chain_id = first_entry(store, collection).chain_id
    proofs = store.proofs.records(collection=collection)
    hashes = [p.notarization.sha256 for p in proofs]
    assert len(hashes) == len(set(hashes)), "a document is notarized twice"
    assert set(hashes) == sha256s
    assert store.notarizations.known_hashes(chain_id, sha256s) == sha256s
    counts = store.runs.summary(collection)
    assert counts["ledger"] + counts["anchor"] == len(sha256s), counts
    keymrs: dict[int, bytes] = {}
    for proof in proofs:
        row = proof.notarization
        assert row.chain_id == chain_id and row.entry_hash is not None, row
        assert proof.receipt is not None and row.dblock_height is not None, row
        if row.dblock_height not in keymrs:
            dblock = node.dblock_by_height(row.dblock_height)["dblock"]
            keymrs[row.dblock_height] = bytes.fromhex(dblock["keymr"])
        receipt = Receipt.from_json(proof.receipt.raw)
        assert receipt.entry_hash.hex() == row.entry_hash
        verify_receipt(receipt, trusted_directory_block_keymr=keymrs[row.dblock_height])
    events = store.notarizations.stage_events(p.notarization.id for p in proofs)
    twice = {i: [e.stage for e in ev] for i, ev in events.items() if _repeats(ev)}
    assert not twice, f"stages logged twice: {twice}"
    return {p.notarization.entry_hash for p in proofs if p.notarization.entry_hash}


def _repeats(events: list[Any]) -> bool:
    stages = [e.stage for e in events if e.stage != "error"]
    return len(stages) != len(set(stages))


# -- Prefect: server, pool, deployment, workers ------------------------------------------


@contextlib.contextmanager
def prefect_server(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``prefect server start`` on a free loopback port, its home under ``home``; yields
    the API URL. Its scheduler is off: the deployment's nightly cron must not add runs."""
    monkeypatch.setenv("PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED", "false")
    server = PrefectServer(home, home / "prefect-api-url", host="127.0.0.1", port=free_port())
    try:
        yield server.start(timeout_s=120)
    finally:
        server.stop()


def prefect_cli(*args: str, env: dict[str, str]) -> str:
    """Run ``prefect --no-prompt ARGS`` in the project root; its output.

    Raises:
        AssertionError: it exited with a non-zero status.
    """
    command = [sys.executable, "-m", "prefect", "--no-prompt", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def worker(name: str, env: dict[str, str], log_dir: Path) -> ManagedProcess:
    """``prefect worker start`` of the pool, one flow run at a time, polling every second."""
    argv = [sys.executable, "-m", "prefect", "worker", "start", "--pool", WORK_POOL]
    argv += ["--type", "process", "--name", name, "--limit", "1"]
    return ManagedProcess(name, argv, env, log_dir / f"{name}.log")


def start_runs(client: SyncPrefectClient, parameters: list[dict[str, str]]) -> list[UUID]:
    """Create one flow run of the deployment per parameter set, back to back; their ids."""
    deployment = client.read_deployment_by_name(f"notarize-folder/{DEPLOYMENT.name}")
    runs = [
        client.create_flow_run_from_deployment(deployment.id, parameters=params)
        for params in parameters
    ]
    return [run.id for run in runs]


def wait_for_runs(
    client: SyncPrefectClient,
    run_ids: list[UUID],
    workers: list[ManagedProcess],
    *,
    timeout_s: float,
) -> list[FlowRun]:
    """Poll the flow runs until all are in a final state; fail at once if a worker dies."""
    runs: list[FlowRun] = []

    def done() -> bool:
        for w in workers:
            assert w.alive, f"{w.name} exited:\n{w.log_tail()}"
        runs[:] = [client.read_flow_run(run_id) for run_id in run_ids]
        return all(r.state is not None and r.state.is_final() for r in runs)

    wait_until(done, timeout_s, 0.5, what="the flow runs to end")
    return runs


def release_when_running(
    client: SyncPrefectClient,
    run_ids: list[UUID],
    workers: list[ManagedProcess],
    gate: TableLock,
    *,
    timeout_s: float,
) -> datetime:
    """Wait until Prefect reports every run ``RUNNING`` and the gate holds one session per
    run, then release the gate; when (aware UTC). Fails at once if a worker dies or a run
    ends before the gate opens (it did not wait at the gate)."""
    states: list[str] = []

    def at_gate() -> bool:
        for w in workers:
            assert w.alive, f"{w.name} exited:\n{w.log_tail()}"
        runs = [client.read_flow_run(run_id) for run_id in run_ids]
        states[:] = [str(r.state_type) for r in runs]
        ended = [r.name for r in runs if r.state is not None and r.state.is_final()]
        assert not ended, f"runs {ended} ended before the gate opened: {states}"
        running = all(r.state_type == StateType.RUNNING for r in runs)
        return running and gate.waiting() == len(run_ids)

    def seen() -> str:
        return f"both runs at the gate (states {states}, {gate.waiting()} waiting)"

    wait_until(at_gate, timeout_s, 0.25, what=seen)
    return gate.release()


def ran_by(workers: list[ManagedProcess], run: FlowRun) -> list[str]:
    """The workers whose output says they started ``run``: a worker that fetched the run
    but lost it to the other (the server refused its ``Pending``) does not print this."""
    line = f"Flow run '{run.name}' submitted to infrastructure"
    return [w.name for w in workers if line in w.log_tail(chars=None)]


@contextlib.contextmanager
def work_pool(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SyncPrefectClient, list[ManagedProcess]]]:
    """A Prefect server, the process pool ``WORK_POOL``, the folder deployment of
    ``prefect.yaml`` and two workers on it (their environment: ``env``); stopped at exit."""
    workers = [worker(name, env, tmp_path) for name in ("worker-a", "worker-b")]
    with prefect_server(tmp_path, monkeypatch) as api_url:
        env["PREFECT_API_URL"] = api_url
        try:
            prefect_cli("work-pool", "create", WORK_POOL, "--type", "process", env=env)
            for w in workers:
                w.spawn()
            prefect_cli("deploy", "--name", DEPLOYMENT.name, env=env)
            with SyncPrefectClient(api_url) as client:
                yield client, workers
        finally:
            for w in workers:
                w.stop(timeout_s=10)


def worker_env(settings: PipelineSettings, tmp_path: Path, folder: Path) -> dict[str, str]:
    """The workers' (and ``prefect deploy``'s) environment: the pipeline settings as
    ``NOTARY_*`` variables, the project folder, the deployment's default folder."""
    return child_env(
        QUIET
        | settings_env(settings)
        | {
            "PREFECT_HOME": str(tmp_path / "prefect-client"),
            "PREFECT_LOGGING_LEVEL": "INFO",  # the worker's "submitted" line
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "NOTARY_PROJECT_DIR": str(ROOT),
            env_name("folder"): str(folder),
        }
    )


def first_entry(store: AuditStore, collection: str) -> LedgerEntry:
    """The first entry of the collection's chain (named by its identifier when private)."""
    record = store.collections.find(collection)
    assert record is not None, f"collection {collection!r} is not registered"
    return collection_entry(record)


def assert_chain_once(node_url: str, chain: LedgerEntry, recorded: set[str]) -> int:
    """The node's side: the collection's chain holds each recorded entry once and nothing
    else but its first entry; returns its number of entries."""
    on_chain = chain_entry_hashes(node_url, chain.chain_id)
    assert len(on_chain) == len(set(on_chain)), "an entry is on the chain twice"
    assert set(on_chain) == recorded | {chain.entry_hash}
    assert len(on_chain) == len(recorded) + 1
    return len(on_chain)


# -- the test ------------------------------------------------------------------------------


def test_two_workers_notarize_overlapping_folders_once(
    tmp_path: Path,
    pipeline_settings: PipelineSettings,
    postgres_database: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.perf_counter()
    folder = tmp_path / "docs"
    files = make_documents(folder)
    collection = "many-workers"
    settings = pipeline_settings.model_copy(
        update={
            "audit_db_url": postgres_database,
            "batch_size": 10,  # many small windows: each run lasts seconds, so they overlap
            "aggregate_batch_size": 60,  # several batches per run, racing each other
            "ledger_wait_s": 90,
        }
    )
    env = worker_env(settings, tmp_path, folder)
    # The audit tables first, so that there is a table to hold the runs at.
    AuditStore(postgres_database).close()
    with work_pool(tmp_path, env, monkeypatch) as (client, workers):
        deployed_s = time.perf_counter() - started
        parameters = [
            {"folder": str(f), "collection": collection} for f in (folder, folder / "shared")
        ]
        with held_table_lock(postgres_database, "collections") as gate:
            run_ids = start_runs(client, parameters)
            released = release_when_running(client, run_ids, workers, gate, timeout_s=180)
        gated_s = time.perf_counter() - started
        runs = wait_for_runs(client, run_ids, workers, timeout_s=240)
    logs = "\n".join(w.log_tail(chars=3000) for w in workers)
    assert [r.state_type for r in runs] == [StateType.COMPLETED] * 2, logs
    assert sorted(name for r in runs for name in ran_by(workers, r)) == ["worker-a", "worker-b"]
    (start_1, end_1), (start_2, end_2) = ((r.start_time, r.end_time) for r in runs)
    assert start_1 and end_1 and start_2 and end_2, runs
    assert start_1 < released < end_1 and start_2 < released < end_2, (runs, released)
    assert start_1 < end_2 and start_2 < end_1, "the runs did not overlap"

    sha256s = {hashlib.sha256(data).hexdigest() for data in files.values()}
    with (
        AuditStore(postgres_database, create_tables=False) as store,
        NodeClient(settings.node_url) as node,
    ):
        # The runs' own records first: a run that left documents behind says which, why.
        records = [store.runs.get(i) for i in (1, 2, 3)]  # a fresh database: the two runs only
        assert records[0] and records[1] and records[2] is None, records
        counts = [r["counts"] for r in records[:2] if r and r["status"] == "completed"]
        assert len(counts) == 2, records
        for c in counts:  # each run saw its documents through to a directory block
            seen = c["documents_seen"]
            assert c["documents_in_ledger"] == c["documents_with_receipt"] == seen, c
            assert c["documents_waiting"] == c["documents_failed"] == c["publish_failed"] == 0, c
            assert not c["errors"], c
        assert sorted(c["documents_seen"] for c in counts) == [SHARED, len(files)], records
        assert sum(c["queued"] for c in counts) == len(files), "a document queued by both runs"
        recorded = assert_notarized_once(store, node, collection=collection, sha256s=sha256s)
        chain = first_entry(store, collection)
    entries = assert_chain_once(settings.node_url, chain, recorded)

    overlap_s = (min(end_1, end_2) - max(start_1, start_2)).total_seconds()
    with capsys.disabled():
        print(
            f"\ntwo workers, a folder of {len(files)} files and its subfolder of {SHARED}: "
            f"deployed after {deployed_s:.1f} s, both runs at the gate after {gated_s:.1f} s, "
            f"all done after "
            f"{time.perf_counter() - started:.1f} s; runs "
            f"{[round(r.total_run_time.total_seconds(), 1) for r in runs]} s, overlapping "
            f"{overlap_s:.1f} s; {len(recorded)} notarizations, {entries} chain entries; "
            + "; ".join(
                f"run seen {c['documents_seen']} queued {c['queued']} skipped "
                f"{c['skipped_known']} published {c['published']}"
                for c in counts
            )
        )
