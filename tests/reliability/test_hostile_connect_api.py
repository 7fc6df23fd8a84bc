"""Hostile requests in Connect mode (``app_id`` + ``app_key``): 4xx JSON errors, never 5xx.

The same inputs as ``test_hostile_api`` (raw bodies, other verbs, hypothesis bodies, paths
and queries), sent with the Harmony Connect SDK's headers to every route of the Connect
app, read from the app itself; plus bodies aimed at the identity routes' fields and the
``stages`` filter.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ledger.core.addresses import identity_public_key
from ledger.core.keys import SigningKey
from tests.reliability.api_target import Target, app_routes, started_api
from tests.reliability.test_hostile_api import (
    FUZZ,
    MAX_BODY_BYTES,
    RAW_BODIES,
    assert_clean_error,
    bodies,
    json_values,
    query_values,
    segments,
)

IDPUB = identity_public_key(SigningKey.from_seed(bytes([3]) * 32).public_key)
PARAMETERS = ("chain_id", "entry_hash", "key", "object_identifier")


class EmptyLedger:
    """A node that knows no receipt and no anchor (receipts and anchors answer 404)."""

    def receipt(self, entry_hash: str) -> dict[str, Any] | None:
        return None

    def anchors(
        self, *, height: int | None = None, key: str | None = None
    ) -> dict[str, Any] | None:
        return None

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("hostile-connect")
    with started_api(root, max_body_bytes=MAX_BODY_BYTES) as api:
        api.app.state.connect_app.state.ledger_reads = EmptyLedger()
        api.headers = {"app_id": "fuzz", "app_key": api.headers["user-key"]}
        yield api


def routes(target: Target) -> list[tuple[str, str]]:
    return app_routes(target.app.state.connect_app)


def fill(target: Target, path: str, **overrides: str) -> str:
    values = {"key": IDPUB, "object_identifier": target.entry_hash, **overrides}
    return target.fill(path, **values)


@pytest.mark.parametrize("name", list(RAW_BODIES))
def test_raw_bodies_to_every_connect_route(target: Target, name: str) -> None:
    body, allowed = RAW_BODIES[name]
    headers = {**target.headers, "content-type": "application/json"}
    for verb, path in routes(target):
        response = target.client.request(verb, fill(target, path), content=body, headers=headers)
        if verb == "POST":
            assert_clean_error(response, *allowed)
        else:
            assert_clean_error(response, 404, 413)  # 404: no identity, receipt or anchor yet


@pytest.mark.parametrize("other", ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_every_verb_on_every_connect_route_is_answered_cleanly(target: Target, other: str) -> None:
    headers = {**target.headers, "content-type": "application/json"}
    for _verb, path in routes(target):
        response = target.client.request(other, fill(target, path), content=b"{}", headers=headers)
        assert_clean_error(response)


base64_values = st.binary(max_size=200).map(lambda b: base64.b64encode(b).decode())
identity_fields = st.fixed_dictionaries(
    {},
    optional={
        "names": st.lists(base64_values, max_size=4) | json_values,
        "keys": st.lists(st.sampled_from([IDPUB, "idpub", "", "x" * 60]), max_size=4) | json_values,
        "old_key": st.sampled_from([IDPUB, "", "idpubX"]) | json_values,
        "new_key": st.sampled_from([IDPUB, "", "idpubX"]) | json_values,
        "signer_key": st.sampled_from([IDPUB, ""]) | json_values,
        "signature": base64_values | json_values,
        "callback_stages": st.lists(st.sampled_from(["replicated", "factom", "x", ""]), max_size=3),
    },
)
connect_bodies = bodies | identity_fields.map(lambda b: json.dumps(b).encode())


@FUZZ
@given(data=st.data())
def test_hostile_bodies_to_every_connect_post_route(target: Target, data: st.DataObject) -> None:
    posts = [route for route in routes(target) if route[0] == "POST"]
    verb, path = data.draw(st.sampled_from(posts), label="route")
    body = data.draw(connect_bodies, label="body")
    headers = {**target.headers, "content-type": "application/json"}
    response = target.client.request(verb, fill(target, path), content=body, headers=headers)
    event(f"{path}: {response.status_code}")
    assert_clean_error(response)


@FUZZ
@given(data=st.data())
def test_hostile_paths_and_queries_to_every_connect_route(
    target: Target, data: st.DataObject
) -> None:
    verb, path = data.draw(st.sampled_from(routes(target)), label="route")
    overrides = {
        name: quote(data.draw(segments, label=name), safe="%")
        for name in PARAMETERS
        if "{" + name + "}" in path
    }
    query = data.draw(
        st.dictionaries(
            st.sampled_from(["limit", "offset", "stages", "x"]),
            query_values | st.sampled_from(["factom,", ",,", "replicated,anchored"]),
            max_size=3,
        ),
        label="query",
    )
    body = b"{}" if verb == "POST" else None
    headers = {**target.headers, "content-type": "application/json"}
    response = target.client.request(
        verb, fill(target, path, **overrides), params=query, content=body, headers=headers
    )
    event(f"{response.status_code}")
    assert_clean_error(response)
