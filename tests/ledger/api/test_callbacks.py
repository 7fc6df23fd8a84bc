"""Status callbacks: query parameters, stages, signature, retries, host policy."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from ledger.api.models import CallbackRow
from ledger.api.outbox.callback_targets import HostPolicy
from ledger.api.outbox.callbacks import callback_target
from ledger.core.callback_signature import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    sign_callback,
    verify_callback_signature,
)

from .conftest import Api, ApiFactory, Receiver

HOOK = "http://127.0.0.1:9/hook?ref=abc&stage=mine"


def test_every_stage_is_called_back_with_the_spec_parameters(
    hooked: Api, receiver: Receiver
) -> None:
    stages = ["multi_az", "ledger", "anchor"]
    answer = hooked.post_chain([b"cb"], b"x", callback_url=HOOK, callback_stages=stages).json()
    assert hooked.run_worker().callbacks == 1
    block = hooked.ledger.mine_block()
    assert hooked.run_worker().callbacks == 1
    hooked.ledger.anchor_block(block.height, "aa" * 32)
    assert hooked.run_worker().callbacks == 1
    assert receiver.params() == [
        [("ref", "abc"), ("entry_hash", answer["entry_hash"]), ("stage", "multi_az")],
        [("ref", "abc"), ("dblock_keymr", block.keymr), ("stage", "ledger")],
        [("ref", "abc"), ("anchor_block_hash", "aa" * 32), ("stage", "anchor")],
    ]
    for request in receiver.requests:
        assert request.method == "POST" and request.content == b"{}"
        assert request.headers["content-type"] == "application/json"
        assert str(request.url).startswith("http://127.0.0.1:9/hook?")


def test_default_stages_are_ledger_and_anchor(hooked: Api, receiver: Receiver) -> None:
    chain_id = hooked.post_chain([b"cb"]).json()["chain_id"]
    hooked.post_entry(chain_id, [b"e"], callback_url=HOOK)
    hooked.run_worker()
    block = hooked.ledger.mine_block()
    hooked.run_worker()
    hooked.ledger.anchor_block(block.height)
    hooked.run_worker()
    assert [dict(p)["stage"] for p in receiver.params()] == ["ledger", "anchor"]


def test_no_callback_url_means_no_callback(hooked: Api, receiver: Receiver) -> None:
    hooked.post_chain([b"quiet"], callback_stages=["multi_az"])
    hooked.run_worker()
    hooked.ledger.mine_block()
    hooked.run_worker()
    assert receiver.requests == []


def test_signature_header_verifies_with_the_service_secret(hooked: Api, receiver: Receiver) -> None:
    hooked.post_chain([b"sig"], callback_url=HOOK, callback_stages=["multi_az"])
    hooked.run_worker()
    (request,) = receiver.requests
    timestamp = int(request.headers[TIMESTAMP_HEADER])
    assert timestamp == int(hooked.clock.now())
    signature = request.headers[SIGNATURE_HEADER]
    args = {"timestamp": timestamp, "url": str(request.url), "body": request.content}
    assert verify_callback_signature(b"test-secret", signature=signature, **args)
    assert not verify_callback_signature(b"other-secret", signature=signature, **args)
    assert not verify_callback_signature(
        b"test-secret", signature=signature, **{**args, "body": b"{ }"}
    )


def test_failed_delivery_is_retried_with_exponential_backoff(make_api: ApiFactory) -> None:
    receiver = Receiver([500, 503, 200])
    api = make_api(
        callback_allowed_hosts=["127.0.0.0/8"],
        callback_retry_base_s=5,
        http_transport=httpx.MockTransport(receiver),
    )
    api.post_chain([b"retry"], callback_url=HOOK, callback_stages=["multi_az"])
    api.run_worker()
    assert len(receiver.requests) == 1
    api.clock.advance(4.9)
    api.run_worker()
    assert len(receiver.requests) == 1
    api.clock.advance(0.1)
    api.run_worker()
    assert len(receiver.requests) == 2
    api.clock.advance(9)
    api.run_worker()
    assert len(receiver.requests) == 2  # second delay is 10 s
    api.clock.advance(1)
    assert api.run_worker().callbacks == 1
    api.clock.advance(1000)
    api.run_worker()
    assert len(receiver.requests) == 3
    with api.services.db.read() as session:
        row = session.scalars(select(CallbackRow)).one()
    assert (row.status, row.attempts) == ("delivered", 3)


def test_delivery_gives_up_after_the_time_limit(make_api: ApiFactory) -> None:
    receiver = Receiver([500] * 100)
    api = make_api(
        callback_allowed_hosts=["127.0.0.1"],
        callback_retry_base_s=10,
        callback_give_up_s=60,
        http_transport=httpx.MockTransport(receiver),
    )
    api.post_chain([b"give up"], callback_url=HOOK, callback_stages=["multi_az"])
    for _ in range(10):
        api.run_worker()
        api.clock.advance(10)
    sent = len(receiver.requests)
    assert sent == 3  # at 0 s, 10 s, 30 s; the next try (70 s) is past the limit
    api.clock.advance(1000)
    api.run_worker()
    assert len(receiver.requests) == sent
    with api.services.db.read() as session:
        assert session.scalars(select(CallbackRow)).one().status == "dropped"


def test_names_resolving_to_private_addresses_are_refused_at_delivery(make_api: ApiFactory) -> None:
    receiver = Receiver()
    addresses = {"hooks.example.org": ["10.0.0.5"], "public.example.org": ["93.184.216.34"]}
    api = make_api(
        http_transport=httpx.MockTransport(receiver), resolver=lambda host: addresses[host]
    )
    for host in addresses:
        response = api.post_chain(
            [host.encode()], callback_url=f"https://{host}/cb", callback_stages=["multi_az"]
        )
        assert response.status_code == 202
    api.run_worker()
    assert [r.url.host for r in receiver.requests] == ["public.example.org"]
    with api.services.db.read() as session:
        statuses = sorted(r.status for r in session.scalars(select(CallbackRow)))
    assert statuses == ["delivered", "dropped"]


def test_callback_target_keeps_caller_parameters_and_replaces_clashes() -> None:
    url = callback_target(
        "https://x.org/p/a?id=7&stage=old&empty=", {"dblock_keymr": "ab", "stage": "ledger"}
    )
    assert url == "https://x.org/p/a?id=7&empty=&dblock_keymr=ab&stage=ledger"
    assert callback_target("https://x.org", {"stage": "anchor"}) == "https://x.org?stage=anchor"


@pytest.mark.parametrize(
    ("url", "allowed", "refused"),
    [
        ("https://example.org/cb", [], False),
        ("http://93.184.216.34/cb", [], False),
        ("http://127.0.0.1/cb", [], True),
        ("http://127.0.0.1/cb", ["127.0.0.1"], False),
        ("http://10.9.8.7/cb", ["10.0.0.0/8"], False),
        ("http://192.168.1.1/cb", ["10.0.0.0/8"], True),
        ("http://169.254.169.254/latest", [], True),
        ("http://[::1]:8000/", [], True),
        ("http://[fd00::1]/", [], True),
        ("http://0.0.0.0/", [], True),
        ("http://localhost:8000/", [], True),
        ("http://localhost:8000/", ["localhost"], False),
        ("http://api.localhost/", [], True),
        ("file:///etc/passwd", [], True),
        ("not a url", [], True),
    ],
)
def test_host_policy_at_acceptance(url: str, allowed: list[str], refused: bool) -> None:
    assert (HostPolicy(allowed).refusal_at_acceptance(url) is not None) is refused


#: The bundled stack's policy: loopback only at the collector's port (8092 by default).
STACK_TARGETS = ["127.0.0.1:8092", "[::1]:8092"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9999/cb",
        "http://127.0.0.1:8088/v2",  # the node
        "http://127.0.0.1:8089/v2",  # the wallet
        "http://127.0.0.1:4200/api",  # Prefect
        "http://127.0.0.1/cb",  # port 80
        "https://127.0.0.1/cb",  # port 443
        "http://127.0.0.2:8092/cb",  # another loopback address, the collector's port
        "http://127.1:9999/cb",
        "http://2130706433:9999/cb",
        "http://0x7f000001:9999/cb",
        "http://0177.0.0.1:9999/cb",
        "http://0x7f.1:9999/cb",
        "http://[::ffff:127.0.0.1]:9999/cb",
        "http://[::ffff:7f00:1]:9999/cb",
        "http://[::1]:9999/cb",
        "http://[::127.0.0.1]:8092/cb",  # IPv4-compatible: reserved
        "http://10.0.0.1:8092/cb",
        "http://167772161:8092/cb",  # 10.0.0.1 in decimal
        "http://[::ffff:10.0.0.1]:8092/cb",
        "http://0:8092/cb",  # 0.0.0.0
        "http://localhost:8092/cb",
        "http://99999999999:8092/cb",  # numeric, but no address
    ],
)
def test_the_stack_policy_refuses_every_other_loopback_or_private_target(url: str) -> None:
    reason = HostPolicy(STACK_TARGETS).refusal_at_acceptance(url)
    assert reason is not None, url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8092/callbacks",
        "http://127.1:8092/callbacks",
        "http://2130706433:8092/callbacks",
        "http://0x7f000001:8092/callbacks",
        "http://[::ffff:127.0.0.1]:8092/callbacks",
        "http://[::1]:8092/callbacks",
        "https://example.org/cb",
    ],
)
def test_the_stack_policy_lets_callbacks_reach_the_collector_in_any_spelling(url: str) -> None:
    assert HostPolicy(STACK_TARGETS).refusal_at_acceptance(url) is None


def test_a_refusal_names_the_address_and_the_rule() -> None:
    reason = HostPolicy(STACK_TARGETS).refusal_at_acceptance("http://0x7f000001:8089/v2")
    assert reason is not None
    assert "address 127.0.0.1 (0x7f000001) is loopback" in reason
    assert "rule: callbacks reach only public addresses or the allowed targets" in reason
    assert "127.0.0.1:8092, [::1]:8092" in reason


def test_names_are_checked_with_their_port_after_resolution() -> None:
    policy = HostPolicy(STACK_TARGETS, resolver=lambda _host: ["::ffff:127.0.0.1"])
    assert policy.refusal_at_acceptance("http://cb.example:8089/") is None  # no DNS yet
    reason = policy.refusal_at_delivery("http://cb.example:8089/")
    assert reason is not None and "resolves to loopback address 127.0.0.1" in reason
    assert policy.refusal_at_delivery("http://cb.example:8092/") is None


def test_the_bundled_stack_allows_only_the_collector_port(tmp_path: Path) -> None:
    from ledger.stack import Stack, StackSettings

    stack = Stack(StackSettings(data_dir=tmp_path, collector_port=18092))
    policy = HostPolicy(stack.api_settings().callback_allowed_hosts)
    assert policy.refusal_at_acceptance("http://127.0.0.1:18092/callbacks") is None
    assert policy.refusal_at_acceptance("http://127.0.0.1:8092/callbacks") is not None


def test_sign_callback_known_answer() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"12\nhttp://h/x?a=1\n{}", hashlib.sha256).hexdigest()
    assert (
        sign_callback(b"k", timestamp=12, url="http://h/x?a=1", body=b"{}") == "sha256=" + expected
    )
