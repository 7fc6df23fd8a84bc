"""The bundled ledger's services as separate processes, for crash tests.

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
in one process.

Every process runs in a session (process group) of its own: a SIGKILL reaches whatever the
process itself started, and nothing it started outlives the harness. Output goes to
``<root>/logs/<name>.log`` (appended across restarts), never to a pipe that nobody reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from ledger.stack import Stack, StackSettings

__all__ = [
    "SERVICES",
    "LedgerProcesses",
    "ManagedProcess",
    "ServiceDown",
    "child_env",
    "free_port",
    "settings_env",
]

ROOT = Path(__file__).resolve().parents[2]
#: Dependency order (each service calls the ones before it); clean-up runs in reverse.
SERVICES = ("node", "wallet", "api", "anchor")
_MODULES = {name: f"ledger.{name}" for name in SERVICES}
_PROBE_INTERVAL_S = 0.05
#: A restart may find its port briefly held (a socket of the killed process closing).
_BIND_RETRIES = 40
_handed_out: set[int] = set()
_ports_lock = threading.Lock()


class ServiceDown(RuntimeError):
    """A service did not answer in time, or exited while starting (its log tail attached)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` that nothing is bound to now, below the ephemeral range.

    Ports of the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``)
    are avoided: while a killed service is down, an outgoing connection of any process
    could be given its port, and the restart would fail with "address in use". Ports
    handed out before by this process are never handed out again.
    """
    low = _ephemeral_low()
    rng = random.SystemRandom()
    with _ports_lock:
        for _ in range(500):
            port = rng.randrange(max(1024, low - 12_000), low)
            if port in _handed_out:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port below {low} on {host}")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default lower bound


def settings_env(settings: BaseSettings) -> dict[str, str]:
    """``settings`` as the environment variables its class reads (its ``env_prefix``).

    Every field with a value is written (``None`` fields are left out, so the default
    applies): secrets in clear, lists and dicts as JSON (how pydantic-settings parses
    complex fields), booleans as ``true``/``false``.
    """
    prefix = str(settings.model_config.get("env_prefix", ""))
    env: dict[str, str] = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if value is not None:
            env[f"{prefix}{name}".upper()] = _env_text(value)
    return env


def _env_text(value: Any) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | dict):
        return json.dumps(_plain(value))
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any ``NOTARY_*`` variable, plus ``extra``.

    The test runner's own ``NOTARY_*`` settings never leak into a child: what a child is
    configured with is exactly what the harness gives it. The project root leads
    ``PYTHONPATH`` so that children import this work tree.
    """
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NOTARY_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


@dataclass
class ManagedProcess:
    """One child process in a session of its own, its output appended to ``log_path``.

    Attributes:
        name: label used in logs and errors.
        argv: the command (``[sys.executable, "-m", ...]``).
        env: its whole environment.
        log_path: file receiving stdout and stderr of every run.
        proc: the running ``Popen`` (``None`` before ``spawn`` and after ``kill9``/``stop``).
        returncode: exit status of the last run that ended (negative: killed by a signal).
    """

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    returncode: int | None = None
    _log_offset: int = 0

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def alive(self) -> bool:
        """True while the current run has not ended (an ended run is reaped here)."""
        return self.proc is not None and self.poll() is None

    def spawn(self) -> None:
        """Start a new run (the previous one must have ended).

        Raises:
            RuntimeError: a run of this process is still alive.
        """
        if self.alive:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            log.write(f"--- {self.name} started {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.returncode = None

    def poll(self) -> int | None:
        """The exit status once the current run ended (it is then reaped), else ``None``."""
        if self.proc is None:
            return self.returncode
        code = self.proc.poll()
        if code is not None:
            self._reap(code)
        return code

    def wait(self, timeout_s: float) -> int:
        """Wait for the current run to end; its exit status.

        Raises:
            subprocess.TimeoutExpired: still running after ``timeout_s``.
        """
        if self.proc is None:
            assert self.returncode is not None, f"{self.name} was never started"
            return self.returncode
        code = self.proc.wait(timeout_s)
        self._reap(code)
        return code

    def kill9(self) -> bool:
        """SIGKILL the process group (no clean-up possible); True when the run was alive."""
        if self.proc is None:
            return False
        was_alive = self.proc.poll() is None
        _signal_group(self.proc, signal.SIGKILL)
        self._reap(self.proc.wait())
        return was_alive

    def stop(self, *, timeout_s: float = 15.0) -> None:
        """SIGTERM the process group, then SIGKILL it if still running after ``timeout_s``."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout_s)
        self.kill9()  # the group: whatever the process started and left behind

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the current (or last) run's output."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                data = log.read()
        except OSError:
            return ""
        return data[-chars:].decode(errors="replace")

    def _reap(self, code: int) -> None:
        self.returncode = code
        self.proc = None


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the session ``proc`` leads (its group id is its pid: ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(proc.pid, sig)


@dataclass
class _Service:
    process: ManagedProcess
    probe: Callable[[httpx.Client], bool]
    kills: int = 0
    start_kills: int = 0


@dataclass
class LedgerProcesses:
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
    """

    root: Path
    block_time_s: float = 0.5
    anchor: bool = False
    start_timeout_s: float = 60.0
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

    def __enter__(self) -> LedgerProcesses:
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
        probes = {
            "node": _rpc_probe(self.node_url, "heights"),
            "wallet": _rpc_probe(self.wallet_url, "properties"),
            "api": _api_probe(self.api_url, self.api_key),
            "anchor": _rpc_probe(self.anchor_url, "pow-info"),
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
                service.process.spawn()
                deadline = time.monotonic() + interrupt_after_s
                answered = False
                with httpx.Client(timeout=1.0) as client:
                    while time.monotonic() < deadline and service.process.alive:
                        answered = answered or _safe_probe(service.probe, client)
                        time.sleep(_PROBE_INTERVAL_S)
                if service.process.kill9():
                    if answered:
                        service.kills += 1
                    else:
                        service.start_kills += 1
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

    def _start(self, name: str, *, spawned: bool = False) -> None:
        """Spawn ``name`` (unless ``spawned``) and wait until it answers."""
        service = self._services[name]
        process = service.process
        for _attempt in range(_BIND_RETRIES):
            if not spawned:
                process.spawn()
            spawned = False
            outcome = _wait_ready(process, service.probe, self.start_timeout_s)
            if outcome == "ready":
                return
            if outcome == "timeout":
                tail = process.log_tail()
                process.kill9()
                raise ServiceDown(f"{name} did not answer within {self.start_timeout_s} s:\n{tail}")
            if "address already in use" not in process.log_tail().lower():
                raise ServiceDown(
                    f"{name} exited while starting (status {process.returncode}):\n"
                    f"{process.log_tail()}"
                )
            time.sleep(0.25)  # the port is still held by a closing socket: try again
        raise ServiceDown(f"{name}: its port stayed in use:\n{process.log_tail()}")


def _wait_ready(
    process: ManagedProcess, probe: Callable[[httpx.Client], bool], timeout_s: float
) -> str:
    """``"ready"``, ``"exited"`` or ``"timeout"``."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return "exited"
            if _safe_probe(probe, client):
                return "ready"
            time.sleep(_PROBE_INTERVAL_S)
        return "ready" if _safe_probe(probe, client) else "timeout"


def _safe_probe(probe: Callable[[httpx.Client], bool], client: httpx.Client) -> bool:
    try:
        return probe(client)
    except (httpx.HTTPError, ValueError):
        return False


def _rpc_probe(url: str, method: str) -> Callable[[httpx.Client], bool]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method}

    def probe(client: httpx.Client) -> bool:
        response = client.post(url, json=body)
        return response.status_code == 200 and "result" in response.json()

    return probe


def _api_probe(url: str, key: str) -> Callable[[httpx.Client], bool]:
    def probe(client: httpx.Client) -> bool:
        return client.get(url, headers={"user-key": key}).status_code == 200

    return probe
