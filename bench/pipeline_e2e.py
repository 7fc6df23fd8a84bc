"""End to end: files in a folder to verified receipts in the audit store.

The bundled stack (node, wallet, API, anchoring; 2 s blocks) runs as its own process, as
users run it (``notary up`` in one terminal, ``notary notarize`` in another), on free
loopback ports; the pipeline runs in this process. Their peak memory is measured apart.

Usage: ``python -m bench.pipeline_e2e [--small 10000] [--large 0] [--large-mib 100]
[--mode aggregate|entry|clear]`` (the publish mode; default the settings', aggregate).

- ``--small N``: N files of 4 KiB (goal: under 30 s wall from flow start to every receipt
  verified and stored). Baseline in the same run: ``sha256sum`` over the files plus one block
  time (the floors of the hash and ledger stages).
- ``--large N``: N files of ``--large-mib`` MiB (goal: within 1.2 x of ``sha256sum`` of the
  same files). Off by default: 100 x 100 MiB writes 10 GiB (the run checks the free space
  first). The files are read from the page cache by both when memory allows: they were
  just written.
- pipeline peak RSS (this process: the flow, its clients, Prefect's client side; goal
  300 MB whatever the file sizes) and the stack's peak RSS (the ``notary up`` process).

``sha256sum`` is timed before and after the pipeline and the faster time is the baseline
(the machine is shared: the ratio then errs against the pipeline, never for it). For large
files ``openssl dgst -sha256`` is timed too (``extra``): where ``sha256sum`` is built without
the CPU's SHA instructions it is the fairer floor.

Prefect's temporary server start is measured apart (it is paid once per process, not per
file; a configured ``PREFECT_API_URL`` avoids it). Writes ``bench/results/pipeline_e2e.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    Figure,
    peak_rss_mb,
    print_table,
    process_cpu_s,
    process_peak_rss_mb,
    require_free_space,
    stopwatch,
    warm_up_prefect,
    write_results,
)
from tests.harness.ports import free_port

BLOCK_TIME_S = 2.0
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class StackUrls:
    """Where the stack process listens."""

    node_url: str
    api_url: str
    anchor_url: str


class StackProcess:
    """``notary up`` in a child process on free loopback ports (ports through the
    ``NOTARY_STACK_*_PORT`` settings, as a user would set them).

    Attributes:
        peak_rss_mb: the child's peak RSS, read just before it is stopped.
    """

    def __init__(self, data_dir: Path, *, block_time_s: float = BLOCK_TIME_S) -> None:
        self.data_dir = data_dir
        self.ports = {name: free_port() for name in ("node", "wallet", "api", "anchor")}
        self.block_time_s = block_time_s
        self.peak_rss_mb: float | None = None
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The stack process's id while it runs."""
        return None if self._child is None else self._child.pid

    def cpu_s(self) -> float | None:
        """CPU seconds the stack process has used so far."""
        return None if self._child is None else process_cpu_s(self._child.pid)

    @property
    def urls(self) -> StackUrls:
        url = "http://127.0.0.1:{}{}".format
        return StackUrls(
            node_url=url(self.ports["node"], "/v2"),
            api_url=url(self.ports["api"], "/v1"),
            anchor_url=url(self.ports["anchor"], "/v2"),
        )

    def __enter__(self) -> StackProcess:
        env = dict(os.environ)
        env.update({f"NOTARY_STACK_{k.upper()}_PORT": str(v) for k, v in self.ports.items()})
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = (self.data_dir / "stack.log").open("wb")
        command = [sys.executable, "-m", "flows.cli", "up", "--data-dir", str(self.data_dir)]
        command += ["--block-time", str(self.block_time_s), *_no_prefect_flag()]
        self._child = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        try:
            self._wait_ready()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop()

    def _wait_ready(self, timeout_s: float = 120.0) -> None:
        # The services start one after the other (node, wallet, API, anchor), so the
        # anchoring service listening means all four do; the API key file is written first.
        assert self._child is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._child.poll() is not None:
                log = (self.data_dir / "stack.log").read_text(errors="replace")
                raise RuntimeError(f"notary up exited with {self._child.returncode}:\n{log}")
            if all(_listening(port) for port in self.ports.values()):
                return
            time.sleep(0.1)
        raise RuntimeError("notary up did not start in time")

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        self.peak_rss_mb = process_peak_rss_mb(child.pid)
        child.send_signal(signal.SIGTERM)  # `notary up` stops its services cleanly on it
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _no_prefect_flag() -> list[str]:
    """``--no-prefect`` where ``notary up`` can also run a Prefect server: the benchmark
    measures Prefect's server start apart, so the stack must not start one of its own
    (it would also compete for the CPU during the run)."""
    import inspect

    from flows.cli.commands.stack import up

    return ["--no-prefect"] if "prefect" in inspect.signature(up).parameters else []


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def _make(folder: Path, count: int, size: int) -> None:
    folder.mkdir(parents=True)
    chunk = os.urandom(1 << 20)
    for i in range(count):
        with (folder / f"f{i:06d}.bin").open("wb") as handle:
            left = size
            handle.write(i.to_bytes(8, "big"))  # every file distinct
            left -= 8
            while left > 0:
                handle.write(chunk[: min(len(chunk), left)])
                left -= len(chunk)


def _sha256sum(folder: Path, tool: tuple[str, ...] = ("sha256sum",)) -> float:
    files = sorted(str(p) for p in folder.iterdir())
    with stopwatch() as elapsed:
        for start in range(0, len(files), 2000):
            subprocess.run(
                [*tool, *files[start : start + 2000]], check=True, stdout=subprocess.DEVNULL
            )
    return elapsed()


def _openssl(folder: Path) -> float | None:
    """``openssl dgst -sha256`` over the files, seconds (``None`` without openssl): the
    SHA-256 of OpenSSL, which Python's ``hashlib`` uses, where ``sha256sum`` may be a
    build without the CPU's SHA instructions (coreutils 9.1 here hashes 5 x slower)."""
    if shutil.which("openssl") is None:
        return None
    return _sha256sum(folder, ("openssl", "dgst", "-sha256"))


def _run(
    folder: Path, data: Path, collection: str, mode: str | None
) -> tuple[dict[str, Any], float | None]:
    """Run the flow against a fresh stack process; return (summary + wall_s +
    entries_published, stack RSS)."""
    from sqlalchemy import text

    from connectors.audit import AuditStore
    from flows.notarize_folder import notarize_folder
    from flows.settings import PipelineSettings

    with StackProcess(data) as stack:
        urls = stack.urls
        settings = PipelineSettings(
            data_dir=data, api_url=urls.api_url, node_url=urls.node_url, anchor_url=urls.anchor_url
        )
        if mode is not None:
            settings = settings.model_copy(update={"publish_mode": mode})
        stack_cpu, cpu = stack.cpu_s(), time.process_time()
        with stopwatch() as elapsed:
            summary = notarize_folder(str(folder), collection, settings, True)
        summary["wall_s"] = elapsed()
        summary["pipeline_cpu_s"] = round(time.process_time() - cpu, 2)
        stack_after = stack.cpu_s()
        if stack_cpu is not None and stack_after is not None:
            summary["stack_cpu_s"] = round(stack_after - stack_cpu, 2)
    with AuditStore(settings.audit_url) as store, store.engine.connect() as conn:
        count = "SELECT count(*) FROM notarizations WHERE collection = :c"  # a row per entry
        summary["entries_published"] = conn.execute(text(count), {"c": collection}).scalar_one()
        summary["publish_mode"] = settings.publish_mode
    return summary, stack.peak_rss_mb


def _rates(run: dict[str, Any]) -> dict[str, Any]:
    stages = run["stage_seconds"]
    published = int(run["published"])
    extra: dict[str, Any] = {"stage_seconds": stages, "published": published}
    extra |= {k: run[k] for k in ("publish_mode", "entries_published") if k in run}
    # CPU seconds are steadier than wall time on a shared machine.
    extra |= {k: run[k] for k in ("pipeline_cpu_s", "stack_cpu_s") if k in run}
    extra["load_average_1m"] = round(os.getloadavg()[0], 2)
    if stages.get("publish"):
        extra["publish_entries_per_s"] = round(published / stages["publish"], 1)
    if stages.get("hash"):
        extra["hash_mb_per_s"] = round(int(run["bytes_hashed"]) / stages["hash"] / 1e6, 1)
    return extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=0)
    parser.add_argument("--large-mib", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="where to put the files")
    parser.add_argument("--mode", choices=("aggregate", "entry", "clear"), default=None)
    args = parser.parse_args()
    figures: list[Figure] = []
    stack_rss: list[float] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        if args.large:
            require_free_space(
                root,
                args.large * (args.large_mib << 20) + (1 << 30),
                what=f"{args.large} large files and 1 GiB spare",
                hint="give fewer files (--large) or --dir elsewhere",
            )
        from flows.settings import quiet_prefect_defaults

        quiet_prefect_defaults(root)  # telemetry off, Prefect's home in the temporary folder
        # Prefect gives its temporary server 20 s to start: too little on a busy 2-core machine.
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
        with stopwatch() as prefect_start:
            warm_up_prefect()
        figures.append(
            Figure("Prefect temporary server start", prefect_start(), "s", higher_is_better=False)
        )
        if args.small:
            _make(root / "small", args.small, 4096)
            before = _sha256sum(root / "small")
            run, rss = _run(root / "small", root / "data-small", "bench-small", args.mode)
            base = min(before, _sha256sum(root / "small")) + BLOCK_TIME_S
            assert run["documents_with_receipt"] == args.small, run
            stack_rss += [rss] if rss is not None else []
            figures.append(
                Figure(
                    f"{args.small} files of 4 KiB to verified receipts",
                    float(run["wall_s"]),
                    "s",
                    base,
                    "sha256sum + 1 block",
                    goal=30.0,
                    higher_is_better=False,
                    extra=_rates(run),
                )
            )
            shutil.rmtree(root / "small")
        if args.large:
            _make(root / "large", args.large, args.large_mib << 20)
            before = _sha256sum(root / "large")
            run, rss = _run(root / "large", root / "data-large", "bench-large", args.mode)
            base = min(before, _sha256sum(root / "large"))
            openssl = _openssl(root / "large")
            assert run["documents_with_receipt"] == args.large, run
            stack_rss += [rss] if rss is not None else []
            figures.append(
                Figure(
                    f"{args.large} files of {args.large_mib} MiB to verified receipts",
                    float(run["wall_s"]),
                    "s",
                    base,
                    "sha256sum",
                    goal=1.2 * base,
                    higher_is_better=False,
                    extra=_rates(run) | {"openssl_dgst_s": openssl},
                )
            )
    figures.append(
        Figure("pipeline peak RSS", peak_rss_mb(), "MB", goal=300, higher_is_better=False)
    )
    if stack_rss:
        figures.append(
            Figure("stack (notary up) peak RSS", max(stack_rss), "MB", higher_is_better=False)
        )
    print_table("End to end", figures)
    print(write_results("pipeline_e2e", figures))


if __name__ == "__main__":
    main()
