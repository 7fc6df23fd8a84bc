"""Fixtures: the real bundled stack on free loopback ports, and a Prefect test harness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.settings import PipelineSettings
from ledger.stack import Stack, StackSettings, StackThread
from tests.harness.ports import free_port


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def stack_settings(data_dir: Path) -> StackSettings:
    """A test network over ``data_dir``: free loopback ports, 0.5 s blocks, SQLite at
    ``synchronous=NORMAL`` (no test here is about power loss)."""
    return StackSettings(
        data_dir=data_dir,
        node_port=free_port(),
        wallet_port=free_port(),
        api_port=free_port(),
        anchor_port=free_port(),
        block_time_s=0.5,
        sqlite_synchronous="NORMAL",
    )


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(stack_settings(tmp_path / "data"))
    stack.prepare()
    thread = StackThread(stack)
    thread.start()
    try:
        yield stack
    finally:
        thread.stop()


@pytest.fixture
def pipeline_settings(stack: Stack) -> PipelineSettings:
    s = stack.settings
    return PipelineSettings(
        data_dir=s.data_dir,
        api_url=s.api_url,
        node_url=s.node_url,
        anchor_url=s.anchor_url,
        batch_size=7,
        ledger_wait_s=60,
    )
