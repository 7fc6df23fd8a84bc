"""With ``NOTARY_CALLBACK_ENABLED``, every document entry asks for its own callbacks."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from connectors.publishing import NewEntry, PublishingClient
from flows.pipeline import EntryCallbacks, open_services
from flows.settings import PipelineSettings
from tasks.documents import collection_chain_id, document_entry


def test_each_entry_carries_a_callback_url_naming_its_entry_hash() -> None:
    bodies: list[dict[str, object]] = []

    def api(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/entries/bulk")  # one request for the three
        entries = json.loads(request.content)["entries"]
        bodies.extend(entries)
        items = [{"entry_hash": "0" * 64} for _ in entries]
        return httpx.Response(202, json={"items": items})

    chain = collection_chain_id("c")
    docs = [document_entry(chain, sha256=f"{i:064x}", size_bytes=i, path=f"f{i}") for i in range(3)]
    client = PublishingClient(
        "http://api.test/v1",
        "key",
        transport=httpx.MockTransport(api),
        entry_body_hook=EntryCallbacks("http://127.0.0.1:8092/callbacks?tenant=7"),
    )
    with client:
        client.create_entries(chain, [NewEntry(d.external_ids, d.content) for d in docs])

    asked = {}
    for body in bodies:
        url = urlsplit(str(body["callback_url"]))
        query = parse_qs(url.query)
        assert (url.netloc, url.path, query["tenant"]) == ("127.0.0.1:8092", "/callbacks", ["7"])
        assert body["callback_stages"] == ["ledger", "anchor"]
        asked[query["entry_hash"][0]] = body
    assert set(asked) == {d.entry_hash for d in docs}


def test_publishing_client_is_plain_unless_callbacks_are_enabled(tmp_path: Path) -> None:
    (tmp_path / "api-key").write_text("key\n")
    with open_services(PipelineSettings(data_dir=tmp_path)) as services:
        assert services.api.entry_body_hook is None
    enabled = PipelineSettings(data_dir=tmp_path, callback_enabled=True, callback_port=9999)
    with open_services(enabled) as services:
        hook = services.api.entry_body_hook
        assert isinstance(hook, EntryCallbacks)
        assert hook.base_url == "http://127.0.0.1:9999/callbacks"
