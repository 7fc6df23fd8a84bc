"""The OpenAPI document: served with the key, complete, and checked by schemathesis."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.servers import AppServer

from .conftest import Api, ApiFactory

OPERATIONS = {
    ("get", "/v1"): "getInfo",
    ("post", "/v1/chains"): "createChain",
    ("get", "/v1/chains"): "listChains",
    ("post", "/v1/chains/search"): "searchChains",
    ("get", "/v1/chains/{chain_id}"): "getChain",
    ("post", "/v1/chains/{chain_id}/entries"): "createEntry",
    ("post", "/v1/chains/{chain_id}/entries/bulk"): "createEntries",  # an extension
    ("get", "/v1/chains/{chain_id}/entries"): "listEntries",
    ("get", "/v1/chains/{chain_id}/entries/first"): "getFirstEntry",
    ("get", "/v1/chains/{chain_id}/entries/last"): "getLastEntry",
    ("post", "/v1/chains/{chain_id}/entries/search"): "searchEntries",
    ("get", "/v1/chains/{chain_id}/entries/{entry_hash}"): "getEntry",
}


def test_document_needs_the_key(api: Api) -> None:
    response = api.client.get("/v1/openapi.json")
    assert response.status_code == 403
    assert response.json()["error"]["name"] == "Authentication Parameters Missing"
    assert api.client.get("/v1/openapi.json", headers={"user-key": "x"}).status_code == 403
    assert api.get("/v1/openapi.json").status_code == 200


def test_document_describes_the_eleven_operations_and_the_bulk_write(api: Api) -> None:
    document = api.get("/v1/openapi.json").json()
    assert document["openapi"].startswith("3.1") and document["info"]["version"] == "1.0.11"
    found = {
        (method, path): op["operationId"]
        for path, item in document["paths"].items()
        for method, op in item.items()
    }
    assert found == OPERATIONS
    paths = document["paths"]
    create = paths["/v1/chains/{chain_id}/entries"]["post"]
    assert set(create["responses"]) == {
        "202",
        "400",
        "403",
        "413",
        "415",
        "422",
        "429",
        "500",
        "503",
    }
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/EntryCreate"
    }
    assert set(paths["/v1/chains/{chain_id}"]["get"]["responses"]) == {
        "200",
        "403",
        "404",
        "429",
        "500",
    }
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert schemas["Error"]["properties"]["error"]["required"] == ["code", "name", "message"]
    ids = schemas["ExternalIds"]["properties"]["external_ids"]
    assert ids["minItems"] == 1 and "pattern" in ids["items"]
    assert document["components"]["securitySchemes"]["userKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "user-key",
    }
    bulk = paths["/v1/chains/{chain_id}/entries/bulk"]["post"]
    assert set(bulk["responses"]) == set(create["responses"])
    entries = schemas["EntryBatchCreate"]["properties"]["entries"]
    # any item is taken and answered on its own (docs/rest-api.md §5.2), EntryCreate named
    assert entries["items"]["anyOf"] == [{"$ref": "#/components/schemas/EntryCreate"}, {}]
    assert (entries["minItems"], entries["maxItems"]) == (1, api.services.settings.bulk_max_entries)
    limit = next(p for p in paths["/v1/chains"]["get"]["parameters"] if p["name"] == "limit")
    assert limit["schema"]["maximum"] == api.services.settings.page_size_max


def test_documented_codes_cover_what_the_service_answers(api: Api) -> None:
    """Every error answered by a few bad requests is listed for its operation."""
    document = api.get("/v1/openapi.json").json()
    chain_id = api.post_chain([b"doc"]).json()["chain_id"]
    checks = [
        ("get", "/v1/chains/{chain_id}", api.get(f"/v1/chains/{'00' * 32}")),
        ("get", "/v1/chains", api.get("/v1/chains", params={"limit": 0})),
        ("get", "/v1/chains", api.get("/v1/chains", params={"offset": 2**70})),
        (
            "post",
            "/v1/chains",
            api.client.post("/v1/chains", json={"content": "*"}, headers=api.headers),
        ),
        (
            "post",
            "/v1/chains/{chain_id}/entries",
            api.client.post(f"/v1/chains/{chain_id}/entries", content=b"x", headers=api.headers),
        ),
        ("get", "/v1/chains/{chain_id}/entries", api.client.get(f"/v1/chains/{chain_id}/entries")),
        (
            "post",
            "/v1/chains/{chain_id}/entries/bulk",
            api.client.post(
                f"/v1/chains/{chain_id}/entries/bulk", json={"entries": []}, headers=api.headers
            ),
        ),
    ]
    for method, path, response in checks:
        assert response.status_code >= 400
        assert str(response.status_code) in document["paths"][path][method]["responses"], (
            path,
            response.status_code,
        )


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("schemathesis") is None, reason="schemathesis is not installed"
)
def test_schemathesis_finds_no_server_error_and_no_schema_violation(make_api: ApiFactory) -> None:
    api = make_api(rate_limit_per_s=0)
    config = Path(__file__).with_name("schemathesis.toml")
    with AppServer(api.app, lifespan="off") as server:
        command = [
            sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()",
            "--config-file", str(config), "run",
            "-H", f"user-key: {api.key}",
            "--max-examples", "25", "--no-color", "--seed", "1",
            f"{server.url}/v1/openapi.json",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout
