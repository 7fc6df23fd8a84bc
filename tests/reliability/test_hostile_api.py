"""Hostile requests to the publishing REST API: every answer is a 4xx JSON error, never 5xx.

The app runs in process (Starlette's ``TestClient``) on SQLite with the in-memory twin
ledger, as ``tests/ledger/api`` does. Routes are read from the app itself, so a route
added later is fuzzed too. Two kinds of input:

* raw bodies, sent to every route: oversized, nested 100,000 deep, invalid UTF-8, empty,
  an array of 10,000 items, ``text/plain``; and every route called with the other verbs;
* hypothesis: JSON bodies of any shape for the routes that take one, and path segments
  and query parameters (``limit``/``offset``) of any text for every route.

Every error must have the API's one error shape (``{"error": {"code", "name",
"message"}}`` with ``code`` equal to the HTTP status). ``tests/ledger/api/test_errors.py``
checks the exact status of each named case; this module checks that nothing escapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.ledger.api.conftest import b64
from tests.reliability.api_target import Target, started_api

MAX_BODY_BYTES = 65_536
EXAMPLES = 150


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    limits = {"max_body_bytes": MAX_BODY_BYTES, "bulk_max_body_bytes": MAX_BODY_BYTES}
    with started_api(tmp_path_factory.mktemp("hostile-api"), **limits) as api:
        yield api


def assert_clean_error(response: Any, *allowed: int) -> None:
    """A 4xx (one of ``allowed`` when given) with the API's JSON error body."""
    assert response.status_code < 500, (response.status_code, response.text)
    if response.status_code < 400:
        return
    if allowed:
        assert response.status_code in allowed, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == response.status_code
    assert isinstance(body["error"]["name"], str) and isinstance(body["error"]["message"], str)


# -- raw bodies ------------------------------------------------------------------------

RAW_BODIES: dict[str, tuple[bytes, tuple[int, ...]]] = {
    # name: (body, statuses allowed for a POST route)
    "oversized": (b'{"content": "' + b"A" * MAX_BODY_BYTES + b'"}', (413,)),
    "open-brackets": (b"[" * 100_000, (400, 413)),
    "nested-objects": (b'{"a":' * 20_000 + b"1" + b"}" * 20_000, (400, 413)),
    "nested-field": (b'{"external_ids":' + b"[" * 5_000 + b"]" * 5_000 + b"}", (400,)),
    "invalid-utf8": (b'{"content": "\xff\xfe"}', (400,)),
    "invalid-utf8-bare": (b"\xff\xfe\xfd", (400,)),
    "empty": (b"", (400,)),
    "array-of-10000": (
        json.dumps([{"external_ids": [], "content": ""}] * 10_000).encode(),
        (400, 413),
    ),
    "null": (b"null", (400,)),
    "nan": (b'{"content": NaN}', (400,)),
    "huge-number": (b'{"content": 1e400}', (400,)),
}


@pytest.mark.parametrize("name", list(RAW_BODIES))
def test_raw_bodies_to_every_route(target: Target, name: str) -> None:
    body, allowed = RAW_BODIES[name]
    headers = {**target.headers, "content-type": "application/json"}
    for verb, path in target.routes():
        response = target.client.request(verb, target.fill(path), content=body, headers=headers)
        if verb == "POST":
            assert_clean_error(response, *allowed)
        else:  # a GET ignores its body, unless it is too large to accept at all
            assert_clean_error(response, 413)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain; charset=utf-8", "", "application/jsonx"]
)
def test_non_json_bodies_to_every_post_route_are_415(target: Target, content_type: str) -> None:
    headers = {**target.headers, "content-type": content_type}
    body = json.dumps({"external_ids": [b64(b"x")]}).encode()
    posts = [path for verb, path in target.routes() if verb == "POST"]
    assert len(posts) >= 4
    for path in posts:
        response = target.client.post(target.fill(path), content=body, headers=headers)
        assert_clean_error(response, 415)


@pytest.mark.parametrize("other", ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_every_verb_on_every_route_is_answered_cleanly(target: Target, other: str) -> None:
    """A verb a route does not take: 404 No Mapping Rule Matched (or the route that does)."""
    headers = {**target.headers, "content-type": "application/json"}
    for _verb, path in target.routes():
        response = target.client.request(other, target.fill(path), content=b"{}", headers=headers)
        if other != "HEAD":
            assert_clean_error(response)
        else:
            assert response.status_code < 500


# -- hypothesis ------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["", "=", "YQ==", "YQ", "@@@@", "a" * 4000, "http://127.0.0.1/cb", "ledger"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=15,
)
base64_values = st.binary(max_size=300).map(b64)
# Values that pass each field's validation, so that the hostile ones in the other fields
# (and odd but valid combinations: huge IDs, hostile callback hosts) reach the handlers.
PLAUSIBLE = {
    "external_ids": st.lists(base64_values, max_size=6),
    "content": base64_values | st.just(b64(b"x" * 10_300)),
    "callback_url": st.sampled_from(
        [
            "http://127.0.0.1:9/cb?x=1",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/cb",
            "file:///etc/passwd",
            "gopher://127.0.0.1:25/",
            "http://user:pass@example.invalid/",
            "http://" + "a" * 300 + ".invalid/",
            "http://127.0.0.1:99999/",
            "",
        ]
    ),
    "callback_stages": st.lists(
        st.sampled_from(["multi_az", "ledger", "anchor", "later", ""]), max_size=4
    ),
}
aimed_bodies = st.fixed_dictionaries(
    {},
    optional={
        name: st.sampled_from([0, 1, 2]).flatmap(lambda k, v=values: json_values if k == 0 else v)
        for name, values in PLAUSIBLE.items()
    },
)
bodies = st.sampled_from(["aimed", "aimed", "any", "bytes"]).flatmap(
    lambda kind: {
        "aimed": aimed_bodies.map(lambda b: json.dumps(b).encode()),
        "any": json_values.map(lambda v: json.dumps(v).encode()),
        "bytes": st.binary(max_size=300),
    }[kind]
)
segments = st.text(max_size=80) | st.sampled_from(
    ["..", "%2e%2e", "..%2F..", "%00", "a" * 5000, "AB" * 32, "ab" * 33, " ", "\u202e", "%ff"]
)
query_values = st.text(max_size=20) | st.integers(-(2**70), 2**70).map(str)

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_hostile_bodies_to_every_post_route(target: Target, data: st.DataObject) -> None:
    posts = [route for route in target.routes() if route[0] == "POST"]
    verb, path = data.draw(st.sampled_from(posts), label="route")
    body = data.draw(bodies, label="body")
    headers = {**target.headers, "content-type": "application/json"}
    response = target.client.request(verb, target.fill(path), content=body, headers=headers)
    event(f"{path}: {response.status_code}")
    assert_clean_error(response)


@FUZZ
@given(data=st.data())
def test_hostile_paths_and_queries_to_every_route(target: Target, data: st.DataObject) -> None:
    verb, path = data.draw(st.sampled_from(target.routes()), label="route")
    overrides = {
        name: quote(data.draw(segments, label=name), safe="%")
        for name in ("chain_id", "entry_hash")
        if "{" + name + "}" in path
    }
    query = data.draw(
        st.dictionaries(st.sampled_from(["limit", "offset", "x"]), query_values, max_size=3),
        label="query",
    )
    body = b"{}" if verb == "POST" else None
    headers = {**target.headers, "content-type": "application/json"}
    response = target.client.request(
        verb, target.fill(path, **overrides), params=query, content=body, headers=headers
    )
    event(f"{response.status_code}")
    assert_clean_error(response)
