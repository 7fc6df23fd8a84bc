"""Fixtures of the client interoperability tests: one real stack for the whole package.

The four services run as ``notary up`` runs them (``ledger.stack``), on free loopback
ports, with short blocks so that entries reach ``ledger`` (the hosted service's
``factom``) and ``anchor`` stages in seconds. The clients under test are the published
packages, unchanged (dev dependencies of the project): the Harmony Connect SDK
(``factom-harmony-connect``), ``factom-api``, ``factom-core`` and ``factom-keys``.

``locked_stack`` is a second such stack whose node, wallet and anchoring service are
locked with an RPC user and password (docs/jsonrpc.md §1.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic import SecretStr

from ledger.stack import Stack, StackSettings
from tests.harness.stack import running_stack

T = TypeVar("T")

#: The RPC user and password of the locked stack (``locked_stack``).
USER, PASSWORD = "factom", "rpc-password-for-factom-clients"


@dataclass(frozen=True)
class RunningStack:
    """The running services: their addresses and the development account's API key."""

    stack: Stack
    api_key: str

    @property
    def settings(self) -> StackSettings:
        return self.stack.settings

    def origin(self, port: int) -> str:
        return f"http://{self.settings.host}:{port}"

    @property
    def api_base(self) -> str:
        """Base URL as the Harmony Connect SDK takes it (``.../v1/``)."""
        return self.origin(self.settings.api_port) + "/v1/"

    @property
    def node_host(self) -> str:
        """``http://host:port`` as ``factom-api`` takes it (it appends ``/v2``)."""
        return self.origin(self.settings.node_port)

    @property
    def wallet_host(self) -> str:
        return self.origin(self.settings.wallet_port)


@pytest.fixture(scope="package")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    root: Path = tmp_path_factory.mktemp("interop")
    with running_stack(root / "data", pow_block_time_s=0.5) as stack:
        yield RunningStack(stack, stack.api_key_file.read_text().strip())


@pytest.fixture(scope="package")
def locked_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A second stack whose JSON-RPC services need ``USER`` and ``PASSWORD``."""
    root = tmp_path_factory.mktemp("locked")
    locked = {"rpc_user": USER, "rpc_password": SecretStr(PASSWORD)}
    with running_stack(root / "data", pow_block_time_s=0.5, **locked) as stack:
        yield stack
