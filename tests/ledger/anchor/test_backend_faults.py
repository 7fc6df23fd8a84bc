"""The anchoring service when its external chain fails part-way through a round.

``FailingBackend`` is a test double: the bundled chain's backend, made to raise
``AnchorBackendError`` from a chosen call on (as a Bitcoin node that goes down in the
middle of a round). What was sent before the failure is kept, nothing after it is marked,
and the next round carries on without sending anything twice. The real node's faults are
in ``test_bitcoin_service.py``.
"""

from __future__ import annotations

import pytest

from ledger.anchor.backend import AnchorBackendError, EmbeddedPowBackend
from ledger.core.anchor_record import WindowCommitment
from tests.ledger.anchor.conftest import CONFIRMATIONS, Network
from tests.ledger.anchor.test_service import publish_document

pytestmark = pytest.mark.anyio


class FailingBackend(EmbeddedPowBackend):
    """Test double: fails every submission from the ``fail_from``-th on (1-based), while
    ``failing``; counts what it sent."""

    def __init__(self, inner: EmbeddedPowBackend, fail_from: int) -> None:
        super().__init__(inner.pow_chain)
        self.fail_from = fail_from
        self.failing = True
        self.sent: list[str] = []

    def _gate(self, what: str) -> None:
        if self.failing and len(self.sent) + 1 >= self.fail_from:
            raise AnchorBackendError("node-unreachable", f"{what}: the test double is down")
        self.sent.append(what)

    def submit_anchor(self, height: int, keymr: bytes) -> bytes:
        self._gate(f"anchor {height}")
        return super().submit_anchor(height, keymr)

    def submit_window(self, window: WindowCommitment) -> bytes:
        self._gate(f"window {window.height_min}..{window.height_max}")
        return super().submit_window(window)


async def test_a_round_cut_short_keeps_what_was_sent(network: Network) -> None:
    for i in range(3):
        await publish_document(network, b"page %d" % i, path=f"p{i}.txt")
        await network.block()
    top = network.node.tip.height
    double = FailingBackend(network.anchor.backend, fail_from=3)
    network.anchor.service.backend = double

    with pytest.raises(AnchorBackendError):
        await network.anchor_round()
    assert double.sent == ["anchor 0", "anchor 1"]
    assert network.anchor.state.last_height() == 1  # the two sent are kept, no more
    assert network.anchor.state.window_for(0) is None  # their window was not sent
    assert network.anchor.service.fault is not None
    assert network.anchor.service.fault.reason == "node-unreachable"

    double.failing = False
    report = await network.anchor_round()
    assert report.submitted == top - 1
    assert double.sent[2:] == [f"anchor {h}" for h in range(2, top + 1)] + [f"window 0..{top}"]
    assert network.anchor.service.fault is None
    network.mine(CONFIRMATIONS)
    report = await network.anchor_round()
    assert (report.recorded, report.windows_recorded) == (top + 1, 1)
    assert len(double.sent) == top + 2  # every block once, one window


async def test_a_failing_window_leaves_the_blocks_to_the_next_window(network: Network) -> None:
    await publish_document(network, b"single page")
    await network.block()
    top = network.node.tip.height
    double = FailingBackend(network.anchor.backend, fail_from=top + 2)  # the window fails
    network.anchor.service.backend = double
    with pytest.raises(AnchorBackendError):
        await network.anchor_round()
    assert network.anchor.state.last_height() == top
    await network.block()
    double.failing = False
    await network.anchor_round()
    window = network.anchor.state.window_for(0)
    assert window is not None and (window.height_min, window.height_max) == (0, top + 1)
