"""Fault: the publishing API is down while a run publishes; ``collect`` publishes the rest.

A first run over some files creates the collection's chain. More files are added, and a
second run starts; the API goes down right after the run found the chain (the test stops
it there), so every post of the run fails (a retryable error): its documents stay
``pending`` and the run says so. The API is started again, and the
``collect_proofs`` sweep (what ``notary collect`` and the scheduled deployment run), not a
third run, publishes them and records their receipts: every file once on the chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import flows.notarize_folder as notarize_folder_module
from connectors.audit import AuditStore
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from tasks.steps import publish_batch
from tests.harness.waiting import wait_until

from .fault_stack import FaultStack, assert_collection_on_ledger, make_files

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_documents_a_run_could_not_publish_are_published_by_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    files = make_files(folder, 4, tag="first")
    collection = "api-down"
    with FaultStack(tmp_path / "data") as fs:
        settings = fs.pipeline_settings(ledger_wait_s=0)
        first = notarize_folder(str(folder), collection, settings, False)
        assert first["published"] == 4, first

        def chain_then_api_down(*args: Any, **kwargs: Any) -> Any:
            chain = real_chain_check(*args, **kwargs)
            fs.stop_api()
            return chain

        real_chain_check = notarize_folder_module.ensure_collection_chain
        # Prefect's retries of a failed post (1 + 4 + 15 s) are not what is tested here.
        monkeypatch.setattr(publish_batch, "retry_delay_seconds", [0.1, 0.1, 0.1])
        monkeypatch.setattr(notarize_folder_module, "ensure_collection_chain", chain_then_api_down)
        later = make_files(folder / "later", 6, tag="later")
        files |= {f"later/{path}": data for path, data in later.items()}
        second = notarize_folder(str(folder), collection, settings, False)
        assert (second["queued"], second["published"]) == (6, 0), second
        # Failed twice: as recorded, and again by the run's final publish of what is pending.
        assert second["publish_failed"] == 12 and second["errors"], second
        assert second["documents_waiting"] == 10, second  # the first run's wait in blocks
        with AuditStore(settings.audit_url) as store:
            assert store.runs.summary(collection)["pending"] == 6

        monkeypatch.undo()
        fs.start_api()
        sweeps: list[dict[str, Any]] = []

        def collected() -> bool:
            sweeps.append(collect_proofs(settings, collection))
            stages = sweeps[-1]["stages"]
            return stages["ledger"] + stages["anchor"] == 10

        wait_until(collected, timeout_s=60, what="collect to finish the run", interval_s=0.5)
        assert sweeps[0]["published"] == 6 and sweeps[0]["publish_failed"] == 0, sweeps[0]
        assert all(s["published"] == 0 for s in sweeps[1:])
        assert_collection_on_ledger(settings, collection, files)
