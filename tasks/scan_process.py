"""A folder scanned in a child process: ``scan_in_child`` (and its child, ``main``).

Why a process: listing a folder of small files costs per file Python work under the
interpreter lock (a ``DirEntry``, its ``lstat`` and ``access``, the ignore patterns, the
sort): about 15 % of the flow's main thread at 300,000 files, on the core that also
records every document. A child ``python -m tasks.scan_process`` walks the folder with
``connectors.folder_source.scan_refusing`` (the same walk and the same safety rules: no
link followed, regular readable files only, names that are UTF-8) on another core, and
streams the entries back as it finds them; the flow only unpickles them.

Protocol (``tasks.hash_process``'s messages: a 4-byte length, then a pickle): the parent
sends ``(root, ignore_patterns)`` (the root resolved); the child answers a list of items
per ``ITEMS_PER_MESSAGE`` entries, in scan order, each ``(relative_path, size_bytes,
mtime_s)`` for a file or ``(level, what, relative, detail)`` (a ``Refusal``) for a refused
entry, then ``None`` at the end of the scan. The pipe bounds how far the child runs ahead
of the flow (it blocks on a full pipe). The child exits at the end of its input, so it
ends with its parent (also on SIGKILL).

If the child cannot start or fails on the way, the scan goes on in this process from where
the child stopped (files after the last one received; each refusal reported once), with a
warning: the entries are those ``scan`` yields, in the same order, whatever happens.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import threading
from collections.abc import Iterator, Sequence

from connectors.folder_source import (
    DEFAULT_IGNORE_PATTERNS,
    Refusal,
    ScanEntry,
    SkipHandler,
    report_refusal,
    scan_refusing,
    scan_root,
)
from ledger.pipe_child import PipeChild
from tasks.hash_process import child_requests, pipe_message, read_message

__all__ = ["ITEMS_PER_MESSAGE", "main", "scan_in_child"]

log = logging.getLogger(__name__)

#: Entries per message: large enough that a message's cost is spread, small enough that
#: the flow starts hashing without waiting for the child (a window is 2,000 files).
ITEMS_PER_MESSAGE = 500

_FILE_FIELDS = 3


def scan_in_child(
    root: str | os.PathLike[str],
    *,
    ignore_patterns: Sequence[str] = DEFAULT_IGNORE_PATTERNS,
    on_skip: SkipHandler | None = None,
    python: str = sys.executable,
) -> Iterator[ScanEntry]:
    """``connectors.folder_source.scan`` of ``root``, walked by a child process: the same
    entries in the same order, the same refusals given to ``on_skip`` (and logged here).

    Args:
        root, ignore_patterns, on_skip: as ``scan``.
        python: the interpreter the child runs on (default: this one).

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        FileNotFoundError: ``root`` does not exist.
    """
    base = scan_root(root)
    prefix = f"{base}/" if str(base) != "/" else "/"
    child = _take_child(python)
    finished = False
    last_file: str | None = None
    refused: set[str] = set()
    try:
        child.send(pipe_message((str(base), tuple(ignore_patterns))))
        while (items := read_message(child.receive)) is not None:
            for item in items:
                if len(item) == _FILE_FIELDS:
                    relative, size, mtime = item
                    last_file = relative
                    yield ScanEntry(relative, prefix + relative, size, mtime)
                else:
                    refusal = Refusal(*item)
                    refused.add(refusal.relative)
                    report_refusal(on_skip, refusal)
        finished = True
        return
    except (OSError, ValueError, TypeError, EOFError, pickle.UnpicklingError) as exc:
        log.warning("scanning child failed (%s); scanning in this process", exc)
    finally:
        _give_back(child, python, reusable=finished)

    def report_new(refusal: Refusal) -> None:
        if refusal.relative not in refused:
            report_refusal(on_skip, refusal)

    # Files come in ascending relative path order: those up to the last received are done.
    for entry in scan_refusing(base, ignore_patterns=ignore_patterns, on_refusal=report_new):
        if last_file is None or entry.relative_path > last_file:
            yield entry


# Idle children by (process id, interpreter): the next scan reuses one (a child costs
# ~70 ms of CPU to start); a scan that runs while another does gets its own.
_idle: dict[tuple[int, str], list[PipeChild]] = {}
_idle_lock = threading.Lock()


def _take_child(python: str) -> PipeChild:
    with _idle_lock:
        idle = _idle.get((os.getpid(), python))
        if idle:
            return idle.pop()
    return PipeChild("tasks.scan_process", python=python)


def _give_back(child: PipeChild, python: str, *, reusable: bool) -> None:
    """Keep a child that answered a whole scan for the next; stop any other (it may be
    half way through a scan nobody reads)."""
    if not reusable:
        child.stop()
        return
    with _idle_lock:
        _idle.setdefault((os.getpid(), python), []).append(child)


def main() -> None:
    """The child: answer each ``(root, ignore_patterns)`` request until its input ends."""
    stdout = sys.stdout.buffer
    for root, patterns in child_requests():
        items: list[tuple[object, ...]] = []
        try:
            for entry in scan_refusing(root, ignore_patterns=patterns, on_refusal=items.append):
                items.append((entry.relative_path, entry.size_bytes, entry.mtime_s))
                if len(items) >= ITEMS_PER_MESSAGE:
                    stdout.write(pipe_message(items))
                    stdout.flush()  # the flow waits for it
                    items.clear()  # in place: ``on_refusal`` appends to this list
            stdout.write(pipe_message(items))
            stdout.write(pipe_message(None))
            stdout.flush()
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
