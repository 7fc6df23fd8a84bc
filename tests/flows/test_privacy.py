"""Nothing private on the ledger: every entry a private run publishes, read back from the node.

A folder with telling names ("terminations/jane-doe.pdf") is notarized in the ``aggregate``
and ``entry`` modes; the test walks the collection's chain on the node (chain head, entry
blocks back to the first, each entry's raw bytes) and asserts that no external ID and no
content holds a path, a file or folder name, the collection's name, a size as decimal text
or a document's bare SHA-256 (hex, either case, or raw), and that the chain's first entry
names the collection by its identifier only. The clear mode is checked to publish them, so
the scan itself is shown to find what it looks for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.audit import AuditStore
from connectors.node import NodeClient
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger.core.entry import Entry, chain_id_from_external_ids

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

#: Files with telling names; sizes of 6 digits so their decimal text cannot turn up by
#: chance inside a 64-character hex value.
FILES = {
    "terminations/jane-doe.pdf": 104_729,
    "terminations/john-roe.pdf": 130_363,
    "medical/case-4471/scan.tiff": 111_119,
}
ZERO_KEYMR = "00" * 32


def make_folder(root: Path, tag: str) -> dict[str, bytes]:
    files = {}
    for rel, size in FILES.items():
        data = (f"{tag} {rel} ".encode() * size)[:size]
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        files[rel] = data
    return files


def chain_entries(node: NodeClient, chain_id: str) -> Iterator[Entry]:
    """Every entry of the chain, newest block first, read from the node."""
    head = node.call("chain-head", {"chainid": chain_id})
    assert head["chaininprocesslist"] is False
    keymr = head["chainhead"]
    while keymr and keymr != ZERO_KEYMR:
        block = node.call("entry-block", {"keymr": keymr})
        for item in block["entrylist"]:
            raw = node.call("raw-data", {"hash": item["entryhash"]})["data"]
            yield Entry.unmarshal(bytes.fromhex(raw))
        keymr = block["header"]["prevkeymr"]


def secrets_of(folder: Path, collection: str, files: dict[str, bytes]) -> list[bytes]:
    """What must never be published: paths, names, sizes, bare hashes, folder, collection."""
    found: set[bytes] = {str(folder).encode(), folder.name.encode(), collection.encode()}
    for rel, data in files.items():
        found.add(rel.encode())
        found.update(part.encode() for part in rel.split("/"))
        found.add(str(len(data)).encode())
        digest = hashlib.sha256(data).digest()
        found.update({digest, digest.hex().encode(), digest.hex().upper().encode()})
    return sorted(found)


def leaks(entry: Entry, secrets: list[bytes]) -> list[tuple[str, bytes]]:
    fields = [("content", entry.content)] + [
        (f"external id {i}", x) for i, x in enumerate(entry.external_ids)
    ]
    return [(where, s) for where, value in fields for s in secrets if s in value]


@pytest.mark.parametrize(("mode", "documents"), [("aggregate", 1), ("entry", 3)])
def test_private_modes_publish_no_path_name_size_or_hash(
    tmp_path: Path, pipeline_settings: PipelineSettings, mode: str, documents: int
) -> None:
    folder = tmp_path / f"hr-archive-{mode}"
    files = make_folder(folder, mode)
    collection = f"Personnel files {mode}"
    settings = pipeline_settings.model_copy(update={"publish_mode": mode})
    summary = notarize_folder(str(folder), collection, settings, True)
    assert summary["published"] == 3 and summary["documents_waiting"] == 0

    store = AuditStore(settings.audit_url)
    record = store.collections.find(collection)
    store.close()
    assert record is not None and record.mode == mode
    node = NodeClient(settings.node_url)
    entries = list(chain_entries(node, record.chain_id))
    node.close()
    assert len(entries) == 1 + documents  # the first entry, then one per batch or document
    secrets = secrets_of(folder, collection, files)
    assert [leak for entry in entries for leak in leaks(entry, secrets)] == []
    (first,) = [e for e in entries if e.external_ids[0] == b"notary:collection:v2"]
    assert first.external_ids == (b"notary:collection:v2", record.identifier.hex().encode())
    assert chain_id_from_external_ids(first.external_ids).hex() == record.chain_id
    assert all(s not in record.chain_id.encode() for s in secrets)


def test_clear_mode_publishes_what_the_scan_looks_for(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    folder = tmp_path / "hr-archive-clear"
    files = make_folder(folder, "clear")
    collection = "Personnel files clear"
    settings = pipeline_settings.model_copy(update={"publish_mode": "clear"})
    notarize_folder(str(folder), collection, settings, True)
    store = AuditStore(settings.audit_url)
    record = store.collections.find(collection)
    store.close()
    assert record is not None
    node = NodeClient(settings.node_url)
    entries = list(chain_entries(node, record.chain_id))
    node.close()
    found = {
        s for entry in entries for _where, s in leaks(entry, secrets_of(folder, collection, files))
    }
    for rel, data in files.items():
        assert rel.encode() in found and str(len(data)).encode() in found
        assert hashlib.sha256(data).hexdigest().encode() in found
    assert collection.encode() in found
