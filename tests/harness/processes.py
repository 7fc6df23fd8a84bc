"""Child processes of the tests: started in a session of their own, always ended.

``ManagedProcess`` runs one command in a session (process group) of its own, so that a
SIGKILL reaches whatever the process itself started and nothing it started outlives the
test. Output goes to a log file (appended across restarts), never to a pipe that nobody
reads. ``child_env`` and ``settings_env`` build a child's environment from a settings
object, so a child runs with exactly the configuration the test built.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings

from tests.harness.waiting import wait_until

__all__ = ["ROOT", "ManagedProcess", "ProcessExited", "child_env", "settings_env"]

#: The project root: children run there and import this work tree.
ROOT = Path(__file__).resolve().parents[2]


class ProcessExited(RuntimeError):
    """A process ended while a test waited for it to become ready.

    Attributes:
        name: the process's label.
        returncode: its exit status (negative: killed by a signal).
        output: the end of its output.
    """

    def __init__(self, name: str, returncode: int | None, output: str) -> None:
        super().__init__(f"{name} exited (status {returncode}):\n{output}")
        self.name = name
        self.returncode = returncode
        self.output = output


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
    configured with is exactly what the test gives it. The project root leads
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

    def wait_ready(
        self, ready: Callable[[], bool], *, timeout_s: float, interval_s: float = 0.05
    ) -> None:
        """Poll ``ready`` until it holds; fail at once if the run ends first.

        Raises:
            ProcessExited: the run ended before ``ready`` held.
            WaitTimeout: ``ready`` did not hold within ``timeout_s``.
        """

        def check() -> bool:
            if not self.alive:
                raise ProcessExited(self.name, self.returncode, self.log_tail())
            return ready()

        wait_until(check, timeout_s, interval_s, what=f"{self.name} to be ready")

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

    def send_signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the process itself (not its group), as a terminal's Ctrl-C to a
        program that handles it and stops its own children."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

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

    def log_tail(self, chars: int | None = 4000) -> str:
        """The end of the current (or last) run's output; all of it when ``chars`` is None."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                data = log.read()
        except OSError:
            return ""
        return (data if chars is None else data[-chars:]).decode(errors="replace")

    def _reap(self, code: int) -> None:
        self.returncode = code
        self.proc = None


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the session ``proc`` leads (its group id is its pid: ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(proc.pid, sig)
