"""The bundled ledger's services as separate processes, for crash and fault tests.

``NodeProcess`` runs one node (``python -m ledger.node``) over a data folder and port.
``LedgerProcesses`` starts the node, the wallet and the publishing API (and the anchoring
service when asked) as ``python -m ledger.<service>`` subprocesses on free loopback ports
over one temporary data folder, waits until each answers, SIGKILLs one (``kill9``) and
starts it again over the same data and port (``restart``), and ends every process it
started when it is closed, also when the test failed. Extra processes (a pipeline run
under test) are started through ``launch`` so that the same clean-up covers them.

The wiring is ``ledger.stack.Stack``'s (ports, data folders, development keys, the API
account whose key is kept in ``<root>/api-key``): each service's settings object is built
by ``Stack`` and handed to its process as ``NOTARY_<SERVICE>_*`` environment variables, so
the processes run with exactly the configuration ``notary up`` gives the four services
in one process. Every process is a ``ManagedProcess``: a session of its own, output in
``<root>/logs/<name>.log``.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from ledger.core.entry import Entry
from ledger.jsonrpc.credentials import BasicCredentials
from ledger.node.settings import NodeSettings
from ledger.stack import Stack, StackSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, ProcessExited, child_env, settings_env
from tests.harness.waiting import WaitTimeout, wait_until

__all__ = [
    "SERVICES",
    "LedgerProcesses",
    "NodeProcess",
    "ServiceDown",
    "StartedServices",
    "entry_body",
]

#: Dependency order (each service calls the ones before it); clean-up runs in reverse.
SERVICES = ("node", "wallet", "api", "anchor")
_MODULES = {name: f"ledger.{name}" for name in SERVICES}
_PROBE_INTERVAL_S = 0.05
#: A restart may find its port briefly held (a socket of the killed process closing).
_BIND_RETRIES = 40

Probe = Callable[[httpx.Client], bool]


class ServiceDown(RuntimeError):
    """A service did not answer in time, or exited while starting (its log tail attached)."""


class NodeProcess:
    """The ledger node as a real subprocess over one data folder and port.

    Args:
        settings: the node's settings, passed to the child as ``NOTARY_NODE_*`` variables.
        extra_env: more variables for the child.
        start_timeout_s: longest wait for the node to answer after starting.
    """

    def __init__(
        self,
        settings: NodeSettings,
        *,
        extra_env: dict[str, str] | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        self.settings = settings
        self.start_timeout_s = start_timeout_s
        env = child_env(settings_env(settings) | (extra_env or {}))
        log = settings.data_dir.parent / f"node-{settings.port}.log"
        self.process = ManagedProcess("node", [sys.executable, "-m", "ledger.node"], env, log)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}/v2"

    @property
    def alive(self) -> bool:
        return self.process.alive

    def start(self) -> None:
        """Start the node and wait until it answers ``heights``.

        Raises:
            ServiceDown: it exited or did not answer in time (its output attached).
        """
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.process.spawn()
        probe = rpc_probe(self.url, "heights")
        with httpx.Client(timeout=1.0) as client:
            try:
                self.process.wait_ready(
                    lambda: safe_probe(probe, client), timeout_s=self.start_timeout_s
                )
            except ProcessExited as exc:
                raise ServiceDown(f"the node exited at start-up:\n{self.output()}") from exc
            except WaitTimeout as exc:
                self.kill()
                raise ServiceDown(f"the node did not answer:\n{self.output()}") from exc

    def output(self) -> str:
        """What the node wrote to stdout and stderr so far (all its runs)."""
        log = self.process.log_path
        return log.read_text(errors="replace") if log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no chance to clean up (the harshest way to go down)."""
        self.process.kill9()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 20 s."""
        self.process.stop(timeout_s=20.0)


@dataclass
class _Service:
    process: ManagedProcess
    probe: Probe
    kills: int = 0
    start_kills: int = 0


class StartedServices:
    """A context manager over services: ``start()`` on entry, ``close()`` on exit; a start
    that fails half way closes what it started before the error goes on.

    Subclasses define ``start`` and ``close`` (stopping whatever runs, safe to call with
    nothing started)."""

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass
class LedgerProcesses(StartedServices):
    """Node, wallet and publishing API (and anchoring) of one development network.

    Use as a context manager (``with LedgerProcesses(tmp_path) as ledger: ...``): entering
    prepares the data folder and starts the services, leaving ends every process started
    through it, whatever happened in between.

    Args:
        root: the data folder (``node/``, ``wallet/``, ``api/``, ``anchor/``, ``logs/``,
            ``api-key``).
        block_time_s: directory block period of the network, seconds.
        anchor: also run the anchoring service.
        start_timeout_s: longest wait for a service to answer after (re)starting.
        rpc_auth: lock the JSON-RPC services (``StackSettings.rpc_auth``: True locks them,
            None keeps what the data folder has); the probes send the credentials.
    """

    root: Path
    block_time_s: float = 0.5
    anchor: bool = False
    start_timeout_s: float = 60.0
    rpc_auth: bool | None = None
    stack: Stack = field(init=False)
    api_key: str = field(init=False, default="")
    _services: dict[str, _Service] = field(init=False, default_factory=dict)
    _extra: list[ManagedProcess] = field(init=False, default_factory=list)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        settings = StackSettings(
            data_dir=self.root,
            node_port=free_port(),
            wallet_port=free_port(),
            api_port=free_port(),
            anchor_port=free_port(),
            block_time_s=self.block_time_s,
            sqlite_synchronous="FULL",  # what a crash test is about
            rpc_auth=self.rpc_auth,
        )
        self.stack = Stack(settings)

    # -- addresses ------------------------------------------------------------------------

    @property
    def settings(self) -> StackSettings:
        return self.stack.settings

    @property
    def node_url(self) -> str:
        return self.settings.node_url

    @property
    def wallet_url(self) -> str:
        return self.settings.wallet_url

    @property
    def api_url(self) -> str:
        return self.settings.api_url

    @property
    def anchor_url(self) -> str:
        return self.settings.anchor_url

    @property
    def names(self) -> tuple[str, ...]:
        """The services this harness runs, in start order."""
        return SERVICES if self.anchor else SERVICES[:3]

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Lay out the data folder and the API account, start every service.

        Raises:
            ServiceDown: a service did not come up.
        """
        self.api_key = self.stack.prepare()
        settings = {
            "node": self.stack.node_settings(),
            "wallet": self.stack.wallet_settings(),
            "api": self.stack.api_settings(),
            "anchor": self.stack.anchor_settings(),
        }
        credentials = self.stack.rpc_credentials()
        probes = {
            "node": rpc_probe(self.node_url, "heights", credentials),
            "wallet": rpc_probe(self.wallet_url, "properties", credentials),
            "api": api_probe(self.api_url, self.api_key),
            "anchor": rpc_probe(self.anchor_url, "pow-info", credentials),
        }
        for name in self.names:
            process = ManagedProcess(
                name,
                [sys.executable, "-m", _MODULES[name]],
                child_env(settings_env(settings[name])),
                self.root / "logs" / f"{name}.log",
            )
            self._services[name] = _Service(process, probes[name])
        # All at once: none needs another to start (the API's worker and the wallet only
        # call the node later, and retry), and the imports overlap.
        for name in self.names:
            self._services[name].process.spawn()
        for name in self.names:
            self._start(name, spawned=True)

    def close(self) -> None:
        """End every process started through this harness (extras first, node last)."""
        with self._lock:
            for process in self._extra:
                process.kill9()
            for name in reversed(self.names):
                service = self._services.get(name)
                if service is not None:
                    service.process.stop(timeout_s=10.0)

    # -- faults ---------------------------------------------------------------------------

    def kill9(self, name: str) -> bool:
        """SIGKILL service ``name``; True when it was running (and is now dead)."""
        with self._lock:
            service = self._service(name)
            killed = service.process.kill9()
            service.kills += killed
            return killed

    def restart(self, name: str, *, interrupt_after_s: float | None = None) -> None:
        """Start service ``name`` again over the same data and port (killing it first if it
        still runs) and wait until it answers.

        ``interrupt_after_s``: first start it and SIGKILL it that long after, before it
        answers if it is still starting (a crash during recovery: journal replay, schema
        creation, key import); ``start_kills`` counts those that hit it before it answered.

        Raises:
            ServiceDown: it did not come back (its log tail is in the message).
        """
        with self._lock:
            service = self._service(name)
            if service.process.alive:
                service.kills += service.process.kill9()
            if interrupt_after_s is not None:
                self._interrupted_start(service, interrupt_after_s)
            self._start(name)

    def start_kills(self) -> dict[str, int]:
        """SIGKILLs that hit a service while it was starting, before it answered."""
        return {name: s.start_kills for name, s in self._services.items()}

    def alive(self, name: str) -> bool:
        return self._service(name).process.alive

    def kills(self) -> dict[str, int]:
        """SIGKILLs that hit a running process, per service."""
        return {name: s.kills for name, s in self._services.items()}

    def process(self, name: str) -> ManagedProcess:
        """The process of service ``name`` (its pid, log file, exit status)."""
        return self._service(name).process

    # -- other processes ------------------------------------------------------------------

    def launch(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> ManagedProcess:
        """Start another process (``argv``, whole ``env``), ended by ``close`` like the
        services; its output goes to ``<root>/logs/<name>.log``."""
        process = ManagedProcess(name, list(argv), dict(env), self.root / "logs" / f"{name}.log")
        with self._lock:
            self._extra.append(process)
            process.spawn()
        return process

    # -- internals ------------------------------------------------------------------------

    def _service(self, name: str) -> _Service:
        try:
            return self._services[name]
        except KeyError:
            raise KeyError(f"{name!r} is not one of the running services {self.names}") from None

    def _interrupted_start(self, service: _Service, after_s: float) -> None:
        """Spawn the service and SIGKILL it ``after_s`` later (or when it dies first),
        counting whether it had answered by then."""
        service.process.spawn()
        client = httpx.Client(timeout=1.0)
        answered = False

        def probe_until_dead() -> bool:
            nonlocal answered
            answered = answered or safe_probe(service.probe, client)
            return not service.process.alive

        with client, contextlib.suppress(WaitTimeout):
            wait_until(probe_until_dead, after_s, _PROBE_INTERVAL_S)
        if service.process.kill9():
            if answered:
                service.kills += 1
            else:
                service.start_kills += 1

    def _start(self, name: str, *, spawned: bool = False) -> None:
        """Spawn ``name`` (unless ``spawned``) and wait until it answers."""
        service = self._services[name]
        process = service.process
        with httpx.Client(timeout=2.0) as client:
            for _attempt in range(_BIND_RETRIES):
                if not spawned:
                    process.spawn()
                spawned = False
                try:
                    process.wait_ready(
                        lambda: safe_probe(service.probe, client),
                        timeout_s=self.start_timeout_s,
                        interval_s=_PROBE_INTERVAL_S,
                    )
                    return
                except WaitTimeout:
                    tail = process.log_tail()
                    process.kill9()
                    raise ServiceDown(
                        f"{name} did not answer within {self.start_timeout_s} s:\n{tail}"
                    ) from None
                except ProcessExited as exc:
                    if "address already in use" not in exc.output.lower():
                        raise ServiceDown(f"{name} exited while starting: {exc}") from None
                time.sleep(0.25)  # the port is still held by a closing socket: try again
        raise ServiceDown(f"{name}: its port stayed in use:\n{process.log_tail()}")


def entry_body(entry: Entry) -> dict[str, Any]:
    """``entry`` as the JSON body the publishing API's ``POST /chains`` and ``POST
    /chains/{chain_id}/entries`` take (docs/rest-api.md): Base64 external IDs and
    content."""
    return {
        "external_ids": [base64.b64encode(x).decode() for x in entry.external_ids],
        "content": base64.b64encode(entry.content).decode(),
    }


def safe_probe(probe: Probe, client: httpx.Client) -> bool:
    """``probe``'s answer, or False when the service cannot be reached or answers garbage."""
    try:
        return probe(client)
    except (httpx.HTTPError, ValueError):
        return False


def rpc_probe(url: str, method: str, credentials: BasicCredentials | None = None) -> Probe:
    """A probe that holds once the JSON-RPC server at ``url`` answers ``method`` (sending
    ``credentials`` to a locked one)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method}
    auth = None if credentials is None else (credentials.user, credentials.password)

    def probe(client: httpx.Client) -> bool:
        response = client.post(url, json=body, auth=auth)
        return response.status_code == 200 and "result" in response.json()

    return probe


def api_probe(url: str, key: str) -> Probe:
    """A probe that holds once the publishing API at ``url`` answers with ``key``."""

    def probe(client: httpx.Client) -> bool:
        return client.get(url, headers={"user-key": key}).status_code == 200

    return probe
