"""Fixtures: the real bundled stack on free loopback ports, and a Prefect test harness.

``running_stack`` is the context manager behind the ``stack`` fixture, for tests that
need the stack configured otherwise (locked, on TLS, longer-lived scopes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.settings import PipelineSettings
from ledger.stack import Stack, StackSettings, StackThread
from tests.harness.ports import free_port


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def stack_settings(data_dir: Path, **overrides: Any) -> StackSettings:
    """A test network over ``data_dir``: free loopback ports, 0.5 s blocks, SQLite at
    ``synchronous=NORMAL`` (no test here is about power loss), unless ``overrides`` (any
    ``StackSettings`` field: ``rpc_auth=True``, TLS files, ...) say otherwise."""
    fields: dict[str, Any] = {
        "data_dir": data_dir,
        "node_port": free_port(),
        "wallet_port": free_port(),
        "api_port": free_port(),
        "anchor_port": free_port(),
        "collector_port": free_port(),
        "block_time_s": 0.5,
        "sqlite_synchronous": "NORMAL",
    }
    return StackSettings(**(fields | overrides))


@contextlib.contextmanager
def running_stack(data_dir: Path, **overrides: Any) -> Iterator[Stack]:
    """The bundled stack over ``data_dir`` (``stack_settings``), in a thread, until exit."""
    stack = Stack(stack_settings(data_dir, **overrides))
    stack.prepare()
    thread = StackThread(stack)
    thread.start()
    try:
        yield stack
    finally:
        thread.stop()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path / "data") as running:
        yield running


def settings_for(stack: Stack) -> PipelineSettings:
    """Pipeline settings that reach ``stack`` (small batches, a one-minute ledger wait)."""
    s = stack.settings
    return PipelineSettings(
        data_dir=s.data_dir,
        api_url=s.api_url,
        node_url=s.node_url,
        anchor_url=s.anchor_url,
        node_tls_ca_file=s.tls_ca_file,
        anchor_tls_ca_file=s.tls_ca_file,
        callback_port=s.collector_port,
        batch_size=7,
        ledger_wait_s=60,
    )


@pytest.fixture
def pipeline_settings(stack: Stack) -> PipelineSettings:
    return settings_for(stack)
