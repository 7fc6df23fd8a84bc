"""RFC 3161 tokens for anchored blocks: OpenSSL's TSA (real), a faulty one and one that
does not answer, against the anchoring service with a real node in process. Only blocks
that hold documents are stamped: a block of the ledger's own chains costs no request."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.anchor.app import AnchorRuntime, build_runtime
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.state import AnchoredBlock
from ledger.anchor.timestamp_store import TimestampStore
from ledger.anchor.timestamping import RETRY_BASE_S, STALE_ATTEMPTS, TsaRequester, tsa_access
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import ManualClock
from ledger.core.commit import CommitChain
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.core.timestamps.rfc3161 import verify_token
from ledger.core.timestamps.tsa_chain import TsaTrust
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from tests.harness.ports import free_port
from tests.harness.tsa import TsaAuthority, TsaServer, issue_tsa, tsa_server
from tests.ledger.anchor.conftest import BLOCK_TIME_S, anchor_settings

pytestmark = pytest.mark.anyio


@dataclass
class Stamping:
    runtime: AnchorRuntime
    anchor: httpx.AsyncClient
    clock: ManualClock
    node_tick: object
    good: TsaServer
    faulty: TsaServer
    down_port: int
    authority: TsaAuthority
    node: httpx.AsyncClient

    async def blocks(self, count: int) -> None:
        for _ in range(count * 10):
            self.clock.advance(BLOCK_TIME_S / 10)
            await self.node_tick()  # type: ignore[operator]

    async def documents(self, count: int) -> list[int]:
        """``count`` blocks, each holding one new chain (a document's); their heights."""
        key = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
        heights = []
        for i in range(count):
            first = Entry.first_entry([b"document", str(i).encode()], b"")
            now_ms = int(self.clock.now() * 1000)
            for method, params in (
                (
                    "commit-chain",
                    {"message": CommitChain.create(key, first, timestamp_ms=now_ms).to_hex()},
                ),
                ("reveal-chain", {"entry": first.marshal().hex()}),
            ):
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                assert "result" in (await self.node.post("/v2", json=body)).json()
            heights.append(int((await self._rpc("heights"))["directoryblockheight"]) + 1)
            await self.blocks(1)
        return heights

    async def _rpc(self, method: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method}
        return (await self.node.post("/v2", json=body)).json()["result"]

    def stamped(self) -> list[int]:
        """Heights the stamper takes: the anchored blocks that hold documents."""
        return [b.height for b in self.runtime.state.blocks_with_documents(after=-1, limit=99)]

    async def timestamps(self, height: int) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "anchor-timestamps"}
        body["params"] = {"height": height}
        return (await self.anchor.post("/v2", json=body)).json()["result"]

    async def ready(self) -> dict[str, object]:
        checks = (await self.anchor.get("/health/ready")).json()["checks"]
        return next(c for c in checks if c["name"] == "tsa")


@pytest.fixture
def authority(tmp_path: Path) -> TsaAuthority:
    return issue_tsa(tmp_path / "tsa")


@pytest.fixture
def servers(authority: TsaAuthority) -> Iterator[tuple[TsaServer, TsaServer]]:
    with tsa_server(authority) as good, tsa_server(authority, fault="bad-signature") as bad:
        yield good, bad


@pytest.fixture
async def stamping(
    tmp_path: Path, authority: TsaAuthority, servers: tuple[TsaServer, TsaServer]
) -> AsyncIterator[Stamping]:
    good, faulty = servers
    down_port = free_port()
    clock = ManualClock(1_700_000_000.0)
    node_app = create_node_app(
        NodeSettings(
            data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S, sqlite_synchronous="NORMAL"
        ),
        clock=clock,
        produce_blocks=False,
    )
    node_transport = httpx.ASGITransport(app=node_app)
    settings = anchor_settings(
        tmp_path,
        tsa_urls=f"{good.url}/tsr, {faulty.url}/tsr, http://127.0.0.1:{down_port}/tsr",
        tsa_ca_file=authority.ca_file,
        tsa_timeout_s=5.0,
    )
    app = create_anchor_app(settings, clock=clock, node_transport=node_transport, run_loops=False)
    runtime: AnchorRuntime = app.state.anchor
    async with (
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://anchor"
        ) as client,
        httpx.AsyncClient(transport=node_transport, base_url="http://node") as node,
    ):
        yield Stamping(
            runtime,
            client,
            clock,
            node_app.state.node.tick,
            good,
            faulty,
            down_port,
            authority,
            node,
        )
    await runtime.aclose()
    node_app.state.node.store.close()


async def test_one_verified_token_per_block_and_tsa(stamping: Stamping) -> None:
    heights = await stamping.documents(3)
    await stamping.runtime.service.step()  # submits the anchored blocks
    assert stamping.stamped() == heights
    blocks = len(heights)
    assert stamping.runtime.stamper is not None
    outcome = await stamping.runtime.stamper.step()
    assert (outcome.queued, outcome.stored, outcome.failed) == (3 * blocks, blocks, 2 * blocks)
    assert stamping.good.requests == blocks
    trust = TsaTrust.from_pem(stamping.authority.ca_file.read_bytes(), name="ca.pem")
    for height in heights:
        answer = await stamping.timestamps(height)
        (token,) = answer["rfc3161"]
        keymr = stamping.runtime.state.block(height).keymr  # type: ignore[union-attr]
        verdict = verify_token(base64.b64decode(token["token"]), digest=keymr, trust=trust)
        assert token["subject"] == verdict.tsa == "CN=notary test TSA"
        waiting = {w["tsa"]: w for w in answer["waiting"]}
        assert len(waiting) == 2
        assert "check 7 (signature)" in waiting[f"{stamping.faulty.url}/tsr"]["lasterror"]
        assert "ConnectError" in waiting[f"http://127.0.0.1:{stamping.down_port}/tsr"]["lasterror"]


async def test_failures_are_retried_after_back_off_and_nothing_is_lost(
    stamping: Stamping, authority: TsaAuthority
) -> None:
    stamper = stamping.runtime.stamper
    assert stamper is not None
    heights = await stamping.documents(2)
    await stamping.runtime.service.step()
    blocks = len(heights)
    await stamper.step()
    assert not str((await stamping.ready())["detail"]).startswith("degraded")
    again = await stamper.step()  # nothing due before the back-off ends
    assert (again.stored, again.failed) == (0, 0)
    for attempt in range(1, STALE_ATTEMPTS):
        stamping.clock.advance(RETRY_BASE_S * 2**attempt)
        assert (await stamper.step()).failed == 2 * blocks
    health = await stamping.ready()
    assert health["ok"] is True  # a TSA that is down never stops the service serving
    assert str(health["detail"]).startswith(f"degraded: {2 * blocks} roots after")
    assert f"{blocks} tokens, {2 * blocks} waiting" in str(health["detail"])
    # the authority that did not answer comes up: its tokens arrive, none was dropped
    with tsa_server(authority, port=stamping.down_port):
        stamping.clock.advance(RETRY_BASE_S * 2**STALE_ATTEMPTS)
        assert (await stamper.step()).stored == blocks
    for height in heights:
        answer = await stamping.timestamps(height)
        assert len(answer["rfc3161"]) == 2
        assert [w["tsa"] for w in answer["waiting"]] == [f"{stamping.faulty.url}/tsr"]


async def test_blocks_without_documents_cost_no_request(stamping: Stamping) -> None:
    await stamping.blocks(3)
    heights = await stamping.documents(1)
    await stamping.blocks(2)
    await stamping.runtime.service.step()
    anchored = stamping.runtime.state.last_height() + 1
    assert anchored >= 6 and stamping.stamped() == heights
    assert stamping.runtime.stamper is not None
    outcome = await stamping.runtime.stamper.step()
    assert (outcome.queued, outcome.stored) == (3, 1)  # one block, three TSAs
    assert stamping.good.requests == 1
    assert (await stamping.timestamps(heights[0]))["rfc3161"]
    for height in set(range(anchored)) - set(heights):
        assert not (await stamping.timestamps(height))["rfc3161"]
    again = await stamping.runtime.stamper.step()  # nothing new: the empty ones stay out
    assert again.queued == 0 and stamping.good.requests == 1


def test_urls_need_a_ca_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tsa_ca_file"):
        tsa_access(anchor_settings(tmp_path, tsa_urls="http://127.0.0.1:9/tsr"))
    assert tsa_access(anchor_settings(tmp_path)) is None


async def test_credentials_reach_the_tsa_and_never_the_log(
    tmp_path: Path, authority: TsaAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Basic auth and bearer tokens are sent; an HTTP error is logged by status only."""
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(401)

    settings = anchor_settings(
        tmp_path,
        tsa_urls="http://user:s3cret@tsa.test/tsr",
        tsa_ca_file=authority.ca_file,
        tsa_bearer_token="t0ken",
    )
    access = tsa_access(settings)
    assert access is not None and access.bearer_token == "t0ken"
    runtime = build_runtime(settings, clock=ManualClock(1_700_000_000.0))
    runtime.state.add([AnchoredBlock(0, bytes(32), bytes(32))], None)
    stamper = TsaRequester(
        access,
        anchors=runtime.state,
        store=TimestampStore(settings.state_path),
        clock=ManualClock(1_700_000_000.0),
        transport=httpx.MockTransport(handler),
    )
    assert (await stamper.step()).failed == 1
    assert seen == ["Bearer t0ken"]
    assert "HTTP 401" in caplog.text and "s3cret" not in caplog.text and "t0ken" not in caplog.text
    await stamper.aclose()
    await runtime.aclose()
