"""What ``notary notarize`` shows a newcomer: the ledger entries written and the entry
credits they cost beside the documents, in every publish mode, and one line for the
entries the folder refused with the file that lists them.

The counts are checked against the ledger itself: the collection chain's entries, listed
by the publishing API and read back from the node as raw bytes, each costing what the spec
says (docs/formats.md section 1.4: 1 EC per started KiB of payload, 10 more for the chain's
first entry). (The paying address's balance is no measure here: the bundled anchoring
service pays from the same development address.)
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from connectors.audit import AuditStore
from connectors.node import NodeClient
from flows.cli import app
from flows.cli.exit_codes import ExitCode
from flows.settings import PipelineSettings
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from ledger.stack import Stack
from tests.flows.test_notarize_folder import make_files

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

FILES = 5


def ledger_spend(settings: PipelineSettings, collection: str) -> tuple[int, int]:
    """The entries the collection's chain holds on the node and the entry credits they
    cost, from the entries' raw bytes."""
    from connectors.publishing import PublishingClient

    with AuditStore(settings.audit_url) as store:
        record = store.collections.find(collection)
    assert record is not None
    with PublishingClient(settings.api_url, settings.resolve_api_key()) as api:
        listed = api._request("GET", f"/chains/{record.chain_id}/entries?limit=1000")
    hashes = [item["entry_hash"] for item in listed["items"]]
    credits = 0
    with NodeClient(settings.node_url) as node:
        for entry_hash in hashes:
            raw = node.raw_data(entry_hash)
            assert raw is not None, entry_hash
            entry = Entry.unmarshal(raw)
            credits += entry.cost() + (NEW_CHAIN_FEE_EC if entry.is_first_entry_of_chain() else 0)
    return len(hashes), credits


def shown(output: str) -> list[str]:
    """The output's lines with runs of spaces collapsed (rich pads the table's cells)."""
    return [" ".join(line.split()) for line in output.splitlines()]


def row(output: str, label: str, value: int) -> bool:
    """True when the summary table has the row ``label │ value``."""
    return any(f"│ {label} │ {value} │" in line for line in shown(output))


@pytest.mark.parametrize(
    ("mode", "document_entries"), [("aggregate", 1), ("entry", 5), ("clear", 5)]
)
def test_summary_shows_entries_written_and_credits_spent_and_one_refused_line(
    tmp_path: Path,
    stack: Stack,
    pipeline_settings: PipelineSettings,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    document_entries: int,
) -> None:
    s = stack.settings
    monkeypatch.setenv("NOTARY_API_URL", s.api_url)
    monkeypatch.setenv("NOTARY_NODE_URL", s.node_url)
    monkeypatch.setenv("NOTARY_LEDGER_WAIT_S", "60")
    folder = tmp_path / "docs"
    make_files(folder, FILES)
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the folder")
    for i in range(3):
        (folder / f"link-{i}.txt").symlink_to(outside)
    os.mkfifo(folder / "pipe")
    collection = f"spend-{mode}"
    args = ["notarize", str(folder), "--collection", collection, "--mode", mode]
    args += ["--data-dir", str(s.data_dir)]

    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == ExitCode.OK, result.output
    written, spent = ledger_spend(pipeline_settings, collection)

    lines = shown(result.output)
    assert written == document_entries + 1  # the chain's first entry, then the documents'
    assert spent > written  # a new chain costs 10 EC more than its first entry
    assert row(result.output, "published now", FILES), result.output
    assert row(result.output, "ledger entries written", written), result.output
    assert row(result.output, "entry credits spent (EC)", spent), result.output

    refused = [ln for ln in lines if ln.startswith("note:")]
    assert len(refused) == 1, result.output
    found = re.fullmatch(
        r"note: 4 entries refused \(links, special files, unreadable\); the list is in (\S+)",
        refused[0],
    )
    assert found, refused
    listed = Path(found[1])
    assert listed.parent == s.data_dir / "runs"
    assert stat.S_IMODE(listed.stat().st_mode) == 0o600
    assert stat.S_IMODE(listed.parent.stat().st_mode) == 0o700
    rows = [line.split("\t") for line in listed.read_text(encoding="utf-8").splitlines()]
    assert sorted(name for name, _reason in rows) == [
        "link-0.txt",
        "link-1.txt",
        "link-2.txt",
        "pipe",
    ]
    assert all("special file" in reason for _name, reason in rows), rows

    again = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert again.exit_code == ExitCode.OK, again.output
    assert row(again.output, "ledger entries written", 0), again.output
    assert row(again.output, "entry credits spent (EC)", 0), again.output
