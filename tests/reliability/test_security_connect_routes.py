"""Route-by-route security of the Connect app (``ledger.api.connect``), as for the spec app.

The Connect app answers requests that authenticate with ``app_id`` + ``app_key`` (the
Harmony Connect SDKs). Its routes are read from the app itself, so a Connect route added
later fails ``test_every_connect_route_is_classified`` until it is given its expected
answers here. Every route refuses a missing or wrong key with 403, and another account's
chains, entries and identities are 404 to read and 422 to append to, without a trace of
the owner's data in the answer and without any change to the owner's chain.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ledger.core.addresses import identity_public_key
from ledger.core.entry import chain_id_from_external_ids
from ledger.core.keys import SigningKey
from tests.reliability.api_target import Target, app_routes, started_api

OWNER_EXT_ID = base64.b64encode(b"owned").decode()
OWNER_CONTENT = base64.b64encode(b"first").decode()
KEY = SigningKey.from_seed(bytes([9]) * 32)
IDPUB = identity_public_key(KEY.public_key)
IDPUB2 = identity_public_key(SigningKey.from_seed(bytes([10]) * 32).public_key)

# What account B's call to a route naming (or searching for) account A's data answers:
# the status, or None for a route that answers B with B's own view (200, checked for leaks).
FOREIGN: dict[tuple[str, str], int | None] = {
    ("GET", "/v1"): None,
    ("GET", "/v1/"): None,
    ("GET", "/v1/openapi.json"): None,
    ("GET", "/v1/chains"): None,
    ("POST", "/v1/chains"): 422,  # A's chain ID already exists
    ("POST", "/v1/chains/search"): None,  # a list, empty for B
    ("GET", "/v1/chains/{chain_id}"): 404,
    ("POST", "/v1/chains/{chain_id}/entries"): 422,
    ("GET", "/v1/chains/{chain_id}/entries"): 404,
    ("GET", "/v1/chains/{chain_id}/entries/first"): 404,
    ("GET", "/v1/chains/{chain_id}/entries/last"): 404,
    ("POST", "/v1/chains/{chain_id}/entries/search"): 404,
    ("GET", "/v1/chains/{chain_id}/entries/{entry_hash}"): 404,
    ("POST", "/v1/identities"): 202,  # B's own new identity (names and keys of B's choice)
    ("GET", "/v1/identities/{chain_id}"): 404,
    ("GET", "/v1/identities/{chain_id}/keys"): 404,
    ("POST", "/v1/identities/{chain_id}/keys"): 404,
    ("GET", "/v1/identities/{chain_id}/keys/{key}"): 404,
    ("GET", "/v1/receipts/{entry_hash}"): 404,
    ("GET", "/v1/anchors/{object_identifier}"): 404,  # A's entry hash
}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with started_api(tmp_path_factory.mktemp("connect-security")) as api:
        yield api


def routes(target: Target) -> list[tuple[str, str]]:
    return app_routes(target.app.state.connect_app)


def fill(target: Target, path: str) -> str:
    return target.fill(path, key=IDPUB, object_identifier=target.entry_hash)


def body_for(verb: str, path: str) -> Any:
    """The JSON body a route takes (aimed at the owner's chain), or None for a GET."""
    if verb != "POST":
        return None
    if path.endswith("/search"):
        return {"external_ids": [OWNER_EXT_ID]}
    if path == "/v1/identities":
        return {"names": [base64.b64encode(b"b's own").decode()], "keys": [IDPUB]}
    if path.endswith("/keys"):
        return {
            "old_key": IDPUB,
            "new_key": IDPUB2,
            "signature": base64.b64encode(bytes(64)).decode(),
            "signer_key": IDPUB,
        }
    return {"external_ids": [OWNER_EXT_ID], "content": OWNER_CONTENT}


def derived(verb: str, path: str) -> str:
    """The chain ID that the external IDs of a chain creation's body name."""
    if (verb, path) != ("POST", "/v1/chains"):
        return ""
    ext_ids = [base64.b64decode(x) for x in body_for(verb, path)["external_ids"]]
    return chain_id_from_external_ids(ext_ids).hex()


def call(target: Target, verb: str, path: str, headers: dict[str, Any]) -> Any:
    return target.client.request(
        verb, fill(target, path), json=body_for(verb, path), headers=headers
    )


def owner_view(target: Target) -> str:
    """Everything of the owner's chain, as the owner reads it (spec shapes)."""
    base = f"/v1/chains/{target.chain_id}"
    pages = [target.client.get(p, headers=target.headers).text for p in (base, f"{base}/entries")]
    return json.dumps(pages)


def test_every_connect_route_is_classified(target: Target) -> None:
    found = set(routes(target))
    assert len(found) >= 19
    assert found <= set(FOREIGN), f"unclassified routes: {sorted(found - set(FOREIGN))}"


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ({"app_id": "x"}, "Authentication Parameters Missing"),
        ({"app_key": ""}, "Authentication Parameters Missing"),
        ({"app_id": "", "app_key": "k"}, "Authentication Parameters Missing"),
        ({"app_id": "app", "app_key": "wrong"}, "Authentication Failed"),
        ({"app_id": "app", "app_key": "x" * 10_000}, "Authentication Failed"),
    ],
    ids=["id-only", "empty-key", "empty-id", "wrong", "long"],
)
def test_every_connect_route_refuses_a_missing_or_wrong_key(
    target: Target, headers: dict[str, Any], name: str
) -> None:
    before = owner_view(target)
    for verb, path in routes(target):
        response = call(target, verb, path, headers)
        assert response.status_code == 403, (verb, path, response.status_code, response.text)
        assert response.json()["error"]["name"] == name, (verb, path)
        assert OWNER_CONTENT not in response.text
    assert owner_view(target) == before


def test_every_connect_route_keeps_one_account_out_of_anothers_chains(target: Target) -> None:
    other = {"app_id": "mallory", "app_key": target.new_key("mallory")}
    before = owner_view(target)
    for verb, path in sorted(routes(target)):
        response = call(target, verb, path, other)
        expected = FOREIGN[(verb, path)]
        where = (verb, path, response.status_code, response.text[:300])
        assert response.status_code == (200 if expected is None else expected), where
        # nothing of A's comes back that B did not send or could compute from it (a chain
        # ID is the hash of its external IDs)
        sent = json.dumps(body_for(verb, path)) + fill(target, path) + derived(verb, path)
        for secret in (target.chain_id, target.entry_hash, OWNER_CONTENT):
            if secret not in sent:
                assert secret not in response.text, (where, secret)
    assert owner_view(target) == before
