"""Shared helpers of the benchmarks: figures, a terminal table, one JSON file of results.

Every figure is measured beside a baseline in the same run (this machine is shared and
noisy, so ratios count more than absolute times).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class Figure:
    """One measured figure with its baseline and goal (``higher_is_better`` sets the direction)."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    goal: float | None = None
    higher_is_better: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if not self.baseline:
            return None
        return self.value / self.baseline

    @property
    def meets_goal(self) -> bool | None:
        if self.goal is None:
            return None
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal


def machine() -> dict[str, Any]:
    """Where the figures came from."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_results(name: str, figures: list[Figure]) -> Path:
    """Write ``bench/results/<name>.json`` and return its path."""
    return write_json(name, {"figures": [_figure_json(f) for f in figures]})


def write_json(name: str, data: dict[str, Any]) -> Path:
    """Write ``bench/results/<name>.json``: ``{"machine": machine(), **data}``; its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2) + "\n")
    return path


def _figure_json(figure: Figure) -> dict[str, Any]:
    data = asdict(figure)
    data["ratio"] = figure.ratio
    data["meets_goal"] = figure.meets_goal
    return data


def print_table(title: str, figures: list[Figure]) -> None:
    """Print the figures as a rich table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("figure", "value", "baseline", "ratio", "goal", "ok"):
        table.add_column(column, justify="right" if column != "figure" else "left")
    for f in figures:
        base = f"{f.baseline:,.2f} ({f.baseline_name})" if f.baseline is not None else ""
        ratio = f"{f.ratio:.2f}" if f.ratio is not None else ""
        goal = (
            ("≥ " if f.higher_is_better else "≤ ") + f"{f.goal:,.2f}" if f.goal is not None else ""
        )
        ok = {True: "yes", False: "NO", None: ""}[f.meets_goal]
        table.add_row(f.name, f"{f.value:,.2f} {f.unit}", base, ratio, goal, ok)
    Console().print(table)


@contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """``with stopwatch() as elapsed: ...; elapsed()`` in seconds."""
    start = time.perf_counter()
    end: list[float] = []
    yield lambda: (end[0] if end else time.perf_counter()) - start
    end.append(time.perf_counter())


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident set size of this process (or of its waited-for children), MB."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def process_peak_rss_mb(pid: int) -> float | None:
    """Peak resident set size (``VmHWM``) of a running process, MB; ``None`` off Linux.

    Read while the process still runs: once it is reaped, only ``RUSAGE_CHILDREN`` knows,
    and that mixes every waited-for child.
    """
    return _proc_status_mb(pid, "VmHWM:")


def process_rss_mb(pid: int) -> float | None:
    """Resident set size now (``VmRSS``) of a running process and its descendants (the
    stack's proof-of-work miner runs in a child), MB; ``None`` off Linux or once it has
    exited."""
    sizes = [_proc_status_mb(p, "VmRSS:") for p in process_tree(pid)]
    known = [size for size in sizes if size is not None]
    return sum(known) if sizes and sizes[0] is not None else None


def process_tree(pid: int) -> list[int]:
    """``pid`` and its living descendants (Linux ``/proc/<pid>/task/*/children``);
    ``[pid]`` where that cannot be read."""
    tree, queue = [pid], [pid]
    while queue:
        parent = queue.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            tree += children
            queue += children
    return tree


def _proc_status_mb(pid: int, field: str) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return None


def process_cpu_s(pid: int) -> float | None:
    """CPU time (user + system) a running process and its living descendants have used so
    far, seconds; ``None`` off Linux."""
    own = _cpu_s(pid)
    if own is None:
        return None
    return own + sum(_cpu_s(child) or 0.0 for child in process_tree(pid)[1:])


def _cpu_s(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": fields 3.. of proc(5)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rusage_cpu_s(who: int) -> float:
    """CPU seconds (user + system) of ``resource.RUSAGE_SELF`` or ``RUSAGE_CHILDREN``."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def require_free_space(where: Path, need_bytes: int, *, what: str, hint: str) -> None:
    """Exit with the figures unless ``where`` has ``need_bytes`` free (``what`` says for
    what, ``hint`` what to do instead)."""
    free = shutil.disk_usage(where).free
    if free < need_bytes:
        raise SystemExit(
            f"{what} need about {need_bytes / 2**30:.1f} GiB under {where}; "
            f"{free / 2**30:.1f} GiB free: {hint}"
        )


def warm_up_prefect() -> None:
    """Run one empty flow, so that Prefect's client and temporary server start before a
    timing rather than inside it."""
    from prefect import flow

    flow(name="warm-up")(_nothing)()


def _nothing() -> None:
    """The warm-up flow's body."""
