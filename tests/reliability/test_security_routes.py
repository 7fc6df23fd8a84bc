"""Route-by-route security of the publishing API, and loopback defaults of every service.

Routes are read from the app (``Target.routes()``), so a route added later is checked here
without editing this file; a route of a kind this file does not know fails
``test_every_route_is_classified`` until it is given its expected answers.

Statuses are those of docs/rest-api.md (§2 Authentication, §7 Errors): a request
without a key is 403 "Authentication Parameters Missing", a wrong key 403 "Authentication
Failed" (docs/rest-api.md §7 keeps 401 for a login or session that cannot be created, which this API
does not have). Another account's chain or entry is 404 "Page Not Found", exactly like an
unknown one, and appending to it is 422 (``ledger/api/http/routes.py`` module doc); neither
answer may carry the owner's data, and the owner's chain must not change.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_settings import BaseSettings

from ledger.anchor.settings import AnchorSettings
from ledger.api.settings import ApiSettings
from ledger.core.entry import chain_id_from_external_ids
from ledger.node.settings import NodeSettings
from ledger.stack import Stack, StackSettings
from ledger.wallet.settings import WalletSettings
from tests.reliability.api_target import Target, started_api

OWNER_EXT_ID = base64.b64encode(b"owned").decode()
OWNER_CONTENT = base64.b64encode(b"first").decode()

# What account B's call to a route naming (or searching for) account A's data answers.
# Keys: (verb, path template). Values: (status, error name), or None for a route that
# names no chain and answers B with B's own view (checked for leaks below).
FOREIGN: dict[tuple[str, str], tuple[int, str] | None] = {
    ("GET", "/v1"): None,
    ("GET", "/v1/"): None,
    ("GET", "/v1/openapi.json"): None,
    ("GET", "/v1/chains"): None,
    ("POST", "/v1/chains"): (422, "Unprocessable entity"),  # A's chain ID already exists
    ("POST", "/v1/chains/search"): (404, "Page Not Found"),
    ("GET", "/v1/chains/{chain_id}"): (404, "Page Not Found"),
    ("POST", "/v1/chains/{chain_id}/entries"): (422, "Unprocessable entity"),
    ("GET", "/v1/chains/{chain_id}/entries"): (404, "Page Not Found"),
    ("GET", "/v1/chains/{chain_id}/entries/first"): (404, "Page Not Found"),
    ("GET", "/v1/chains/{chain_id}/entries/last"): (404, "Page Not Found"),
    ("POST", "/v1/chains/{chain_id}/entries/search"): (404, "Page Not Found"),
    ("GET", "/v1/chains/{chain_id}/entries/{entry_hash}"): (404, "Page Not Found"),
}

# Routes that answer a foreign account 202 with one refusal per item (the bulk write,
# docs/rest-api.md §5.2): each item is (status, error name), as operation 6 answers it.
FOREIGN_ITEMS: dict[tuple[str, str], tuple[int, str]] = {
    ("POST", "/v1/chains/{chain_id}/entries/bulk"): (422, "Unprocessable entity"),
}

# Routes that need no key: they serve the same public bytes to anyone and hold no account's
# data (the offline proof verifier page, docs/rest-api.md).
PUBLIC: frozenset[tuple[str, str]] = frozenset({("GET", "/verify")})

# The health and metrics probes (docs/rest-api.md §5), answered by the outermost middleware
# before any route, so ``Target.routes()`` does not list them: no key, no account's data
# (counts and ages only). Readiness may be 503 (this API has no wallet or node behind it).
PROBES: dict[tuple[str, str], frozenset[int]] = {
    ("GET", "/health"): frozenset({200}),
    ("GET", "/health/live"): frozenset({200}),
    ("GET", "/health/ready"): frozenset({200, 503}),
    ("GET", "/metrics"): frozenset({200}),
}


def keyed_routes(target: Target) -> list[tuple[str, str]]:
    """The routes that need a key: every route but the ``PUBLIC`` ones."""
    return [route for route in target.routes() if route not in PUBLIC]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with started_api(tmp_path_factory.mktemp("security-api")) as api:
        yield api


def body_for(verb: str, path: str) -> Any:
    """The JSON body a route takes (aimed at the owner's chain), or None for a GET."""
    if verb != "POST":
        return None
    if path.endswith("/search"):
        return {"external_ids": [OWNER_EXT_ID]}
    if path.endswith("/bulk"):
        return {"entries": [{"external_ids": [OWNER_EXT_ID], "content": OWNER_CONTENT}] * 2}
    return {"external_ids": [OWNER_EXT_ID], "content": OWNER_CONTENT}


def derived_chain_id(verb: str, path: str) -> str:
    """The chain ID that the external IDs of the body of a chain creation name."""
    body = body_for(verb, path)
    if path != "/v1/chains" or body is None:
        return ""
    ext_ids = [base64.b64decode(x) for x in body["external_ids"]]
    return chain_id_from_external_ids(ext_ids).hex()


def call(target: Target, verb: str, path: str, headers: dict[str, Any]) -> Any:
    return target.client.request(
        verb, target.fill(path), json=body_for(verb, path), headers=headers
    )


def error_name(response: Any) -> str:
    body = response.json()
    assert body["error"]["code"] == response.status_code
    return str(body["error"]["name"])


def test_every_route_is_classified(target: Target) -> None:
    """A new route needs its expected answers to a foreign account in ``FOREIGN``."""
    routes = set(target.routes())
    assert len(routes) >= 11  # the eleven operations of docs/rest-api.md §5 at least
    known = set(FOREIGN) | set(FOREIGN_ITEMS) | PUBLIC
    assert routes <= known, f"unclassified routes: {sorted(routes - known)}"


def test_public_routes_answer_anyone_and_show_no_account_data(target: Target) -> None:
    for verb, path in sorted(PUBLIC):
        response = call(target, verb, path, {})
        assert response.status_code == 200, (verb, path, response.status_code)
        assert OWNER_CONTENT not in response.text and target.chain_id not in response.text


def test_probes_answer_anyone_and_show_no_account_data(target: Target) -> None:
    keys = (target.headers["user-key"], target.new_key("probe-watcher"))
    for (verb, path), statuses in sorted(PROBES.items()):
        for headers in ({}, {"user-key": "wrong"}):
            response = call(target, verb, path, headers)
            assert response.status_code in statuses, (verb, path, response.status_code)
            for secret in (OWNER_CONTENT, target.chain_id, target.entry_hash, *keys):
                assert secret not in response.text, (path, secret)
    assert not set(PROBES) & set(target.routes())  # not routes: the middleware's own


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ({}, "Authentication Parameters Missing"),
        ({"user-key": ""}, "Authentication Parameters Missing"),
        ({"app_id": "x"}, "Authentication Parameters Missing"),
        ({"user-key": "wrong"}, "Authentication Failed"),
        ({"user-key": "x" * 10_000}, "Authentication Failed"),
        ({"user-key": b"\xe9t\xe9\xff"}, "Authentication Failed"),  # not UTF-8
        ({"app_id": "app", "app_key": "wrong"}, "Authentication Failed"),
        ({"Authorization": "Bearer anything"}, "Authentication Parameters Missing"),
    ],
    ids=["none", "empty", "app-id-only", "wrong", "long", "non-ascii", "wrong-pair", "bearer"],
)
def test_every_route_refuses_a_missing_or_wrong_key(
    target: Target, headers: dict[str, Any], name: str
) -> None:
    before = entry_count(target)
    for verb, path in keyed_routes(target):
        response = call(target, verb, path, headers)
        assert response.status_code == 403, (verb, path, response.status_code, response.text)
        assert error_name(response) == name, (verb, path)
        assert OWNER_CONTENT not in response.text and target.chain_id not in response.text
    assert entry_count(target) == before


def test_every_route_keeps_one_account_out_of_anothers_chains(target: Target) -> None:
    other = {"user-key": target.new_key("mallory")}
    before = entry_count(target)
    for verb, path in keyed_routes(target):
        response = call(target, verb, path, other)
        expected = FOREIGN.get((verb, path))
        where = (verb, path, response.status_code, response.text[:300])
        if (verb, path) in FOREIGN_ITEMS:
            assert response.status_code == 202, where
            items = response.json()["items"]
            assert len(items) == 2, where
            for item in items:
                error = item["error"]
                assert (error["code"], error["name"]) == FOREIGN_ITEMS[(verb, path)], where
        elif expected is not None:
            assert (response.status_code, error_name(response)) == expected, where
        else:
            assert response.status_code == 200, where
        # nothing of A's comes back that B did not send itself (or could compute from it:
        # a chain ID is the hash of its external IDs, public on the ledger anyway)
        sent = json.dumps(body_for(verb, path)) + target.fill(path) + derived_chain_id(verb, path)
        for secret in (target.chain_id, target.entry_hash, OWNER_CONTENT):
            if secret not in sent:
                assert secret not in response.text, (where, secret)
    assert entry_count(target) == before
    listed = target.client.get("/v1/chains", headers=other).json()["items"]
    assert all(item["chain_id"] != target.chain_id for item in listed)


def test_the_owner_still_reaches_every_route(target: Target) -> None:
    """The refusals above are about the key, not the route: the owner's own calls work."""
    for verb, path in target.routes():
        response = call(target, verb, path, target.headers)
        assert response.status_code in (200, 202), (verb, path, response.text[:300])


def entry_count(target: Target) -> int:
    path = f"/v1/chains/{target.chain_id}/entries"
    response = target.client.get(path, headers=target.headers)
    assert response.status_code == 200, response.text
    return int(response.json()["count"])


# -- loopback defaults -----------------------------------------------------------------

SERVICE_SETTINGS: list[type[BaseSettings]] = [
    NodeSettings,
    WalletSettings,
    ApiSettings,
    AnchorSettings,
    StackSettings,
]


@pytest.mark.parametrize("settings_class", SERVICE_SETTINGS, ids=lambda c: c.__name__)
def test_every_service_binds_loopback_by_default(
    settings_class: type[BaseSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = settings_class.model_config.get("env_prefix", "")
    assert prefix.startswith("NOTARY_")
    monkeypatch.delenv(f"{prefix}HOST", raising=False)
    settings: Any = settings_class()
    assert settings.host == "127.0.0.1"


def test_the_stack_hands_its_loopback_host_to_every_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for settings_class in SERVICE_SETTINGS:
        monkeypatch.delenv(
            f"{settings_class.model_config.get('env_prefix', '')}HOST", raising=False
        )
    stack = Stack(StackSettings())
    services = [
        stack.node_settings(),
        stack.wallet_settings(),
        stack.api_settings(),
        stack.anchor_settings(),
    ]
    assert [s.host for s in services] == ["127.0.0.1"] * 4
    urls = [stack.settings.node_url, stack.settings.wallet_url, stack.settings.api_url]
    assert all(url.startswith("http://127.0.0.1:") for url in urls)
