"""A Prefect server next to the bundled services, and how commands find it.

Without a Prefect server, every ``notary`` command that runs a flow starts Prefect's
temporary local server (10-15 s on a small machine) and stops it at exit. ``notary up
--prefect`` runs ``prefect server start`` once, as a child process in its own process
group, and writes its API URL to ``<data_dir>/prefect-api-url``; ``prepare_prefect`` makes
the other commands use it (``PipelineSettings.known_prefect_api_url``), unless the user set
``PREFECT_API_URL``. A URL whose server does not answer (``notary up`` was killed) is
ignored, so a stale file never breaks a command.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from flows.settings import PipelineSettings, quiet_prefect_defaults
from ledger.exposure import client_host

__all__ = ["PrefectServer", "prepare_prefect", "server_answers"]


def server_answers(api_url: str, *, timeout_s: float = 1.0) -> bool:
    """True when ``GET <api_url>/health`` answers 200 (``api_url`` ends with ``/api``)."""
    try:
        return httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def prepare_prefect(settings: PipelineSettings) -> str | None:
    """Set Prefect's environment defaults before Prefect is imported; returns the server
    URL the command will use, or ``None`` for a temporary server."""
    url = settings.known_prefect_api_url()
    if url is not None and not server_answers(url):
        url = None
    quiet_prefect_defaults(settings.data_dir, prefect_api_url=url)
    return os.environ.get("PREFECT_API_URL")


def _stop_with_parent() -> None:
    """In the child before exec: SIGTERM when ``notary up`` dies, even by SIGKILL, so no
    orphaned server keeps the port (Linux ``prctl(PR_SET_PDEATHSIG)``)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class PrefectServer:
    """``prefect server start`` as a child process, its URL kept in ``url_file``.

    Args:
        data_dir: the stack's data folder (Prefect's home is ``<data_dir>/prefect``; the
            server's output goes to ``<data_dir>/prefect/server.log``).
        url_file: where to write the API URL while the server runs.
        host, port: where the server listens (``notary up``: loopback unless
            ``--prefect-host``).
        auth_string: ``user:password`` the server requires (Prefect's
            ``PREFECT_SERVER_API_AUTH_STRING``; its health check stays open); clients send
            it as ``PREFECT_API_AUTH_STRING``.
    """

    def __init__(
        self,
        data_dir: Path,
        url_file: Path,
        *,
        host: str,
        port: int,
        auth_string: str | None = None,
    ) -> None:
        self.home = (data_dir / "prefect").resolve()
        self.url_file = url_file
        self.url = f"http://{client_host(host)}:{port}/api"
        self._host, self._port = host, port
        self._auth_string = auth_string
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def launched(self) -> bool:
        """True between ``launch()`` and ``stop()``."""
        return self._process is not None

    def start(self, *, timeout_s: float = 120.0) -> str:
        """``launch()`` then ``wait_ready()``; returns the API URL."""
        self.launch()
        return self.wait_ready(timeout_s=timeout_s)

    def launch(self) -> None:
        """Start the server process without waiting for it.

        Raises:
            RuntimeError: something already answers at the server's address.
        """
        if server_answers(self.url):
            raise RuntimeError(f"something already answers at {self.url}")
        self.home.mkdir(parents=True, exist_ok=True)
        env = os.environ | {
            "PREFECT_HOME": str(self.home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
        }
        if self._auth_string is not None:
            env["PREFECT_SERVER_API_AUTH_STRING"] = self._auth_string
        command = [sys.executable, "-m", "prefect", "server", "start"]
        command += ["--host", self._host, "--port", str(self._port), "--analytics-off"]
        with open(self.home / "server.log", "ab") as log:
            # Own session: Ctrl-C in the terminal reaches `notary up`, which stops the
            # server itself after the services.
            self._process = subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_stop_with_parent if sys.platform == "linux" else None,
            )

    def wait_ready(self, *, timeout_s: float = 120.0) -> str:
        """Wait until the launched server answers, then write ``url_file``; return the URL.

        Raises:
            RuntimeError: the server exited or did not answer within ``timeout_s`` (it is
                then stopped; see ``server.log``).
        """
        self._wait_answering(timeout_s)
        self.url_file.write_text(self.url + "\n")
        return self.url

    def _wait_answering(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not server_answers(self.url, timeout_s=2.0):
            if self._process is None:
                raise RuntimeError("the Prefect server was stopped")
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the Prefect server exited with code {self._process.returncode} "
                    f"(see {self.home / 'server.log'})"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Prefect server did not answer within {timeout_s:.0f} s")
            time.sleep(0.25)

    def stop(self, *, timeout_s: float = 20.0) -> None:
        """Remove ``url_file`` and stop the server's process group (SIGTERM, then SIGKILL)."""
        with contextlib.suppress(FileNotFoundError):
            self.url_file.unlink()
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout_s)
