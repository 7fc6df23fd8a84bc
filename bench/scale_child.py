"""The child process of ``bench.pipeline_scale``: one ``notarize_folder`` flow run.

Run by the parent as ``python -m bench.scale_child FOLDER --data DIR --out FILE
--collection NAME --urls JSON [--profile FILE]``, so that its peak RSS and CPU are the
pipeline's alone; writes ``{summary, wall_s, cpu_s, peak_rss_mb}`` (seconds, MB) to
``--out``. ``--profile``: cProfile of every thread, merged into one stats file.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import threading
import time
from pathlib import Path

from bench.common import warm_up_prefect

__all__ = ["run_child"]


def run_child(args: argparse.Namespace) -> None:
    """Run ``notarize_folder`` once and write ``{summary, wall_s, cpu_s, peak_rss_mb}``."""
    import resource

    from flows.settings import quiet_prefect_defaults

    quiet_prefect_defaults(args.data)
    from flows.notarize_folder import notarize_folder
    from flows.settings import PipelineSettings

    warm_up_prefect()  # Prefect's client set-up is not part of the run
    urls = json.loads(args.urls)
    settings = PipelineSettings(data_dir=args.data, **urls)
    profiler = _ThreadProfiles() if args.profile else None
    cpu, start = time.process_time(), time.perf_counter()
    with profiler or contextlib.nullcontext():
        summary = notarize_folder(str(args.folder), args.collection, settings, True)
    wall = time.perf_counter() - start
    if profiler is not None:
        profiler.dump(args.profile)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"summary": summary, "wall_s": wall, "cpu_s": round(time.process_time() - cpu, 2)}
    args.out.write_text(json.dumps(result | {"peak_rss_mb": peak}))


class _ThreadProfiles:
    """cProfile of this thread and of every thread started while it is active (hash
    batches, publishing and Prefect's workers run in threads that a plain ``cProfile``
    of the main thread would not see). Merged by ``dump``."""

    def __init__(self) -> None:
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self._run = threading.Thread.run

    def __enter__(self) -> _ThreadProfiles:
        profiles, lock, run = self._profiles, self._lock, self._run

        def profiled_run(thread: threading.Thread) -> None:
            profile = cProfile.Profile()
            with lock:
                profiles.append(profile)
            profile.runcall(run, thread)

        threading.Thread.run = profiled_run  # type: ignore[method-assign,assignment]
        main = cProfile.Profile()
        self._profiles.append(main)
        main.enable()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._profiles[0].disable()
        threading.Thread.run = self._run  # type: ignore[method-assign]

    def dump(self, path: Path) -> None:
        with self._lock:
            profiles = list(self._profiles)
        stats = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            stats.add(profile)  # a thread still running (an idle pool thread) as it stands
        stats.dump_stats(str(path))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="One notarize_folder run (bench.pipeline_scale).")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--urls", required=True, help="the services' URLs, JSON")
    parser.add_argument("--profile", type=Path, default=None)
    run_child(parser.parse_args(argv))


if __name__ == "__main__":
    main()
