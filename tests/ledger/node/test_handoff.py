"""``GroupWorker``: the worker thread of the store's group commit and the signature checker."""

from __future__ import annotations

import threading

from ledger.node.handoff import GroupWorker
from tests.harness.waiting import wait_until


def test_a_group_is_what_was_queued_meanwhile_up_to_the_bound_in_order() -> None:
    gate = threading.Event()
    groups: list[list[int]] = []

    def work(group: list[int]) -> None:
        groups.append(list(group))
        gate.wait(10)

    worker: GroupWorker[int] = GroupWorker(work, name="test-group", max_group=3)
    worker.put(0)
    wait_until(lambda: groups == [[0]], timeout_s=10)
    for item in range(1, 8):  # queued while the first group is being worked on
        worker.put(item)
    gate.set()
    worker.close()
    assert groups == [[0], [1, 2, 3], [4, 5, 6], [7]]


def test_close_finishes_what_is_queued_then_stops_the_thread() -> None:
    done: list[int] = []
    started = threading.Event()
    gate = threading.Event()

    def work(group: list[int]) -> None:
        started.set()
        gate.wait(10)
        done.extend(group)

    worker: GroupWorker[int] = GroupWorker(work, name="test-close")
    worker.put(1)
    assert started.wait(10)
    worker.put(2)
    worker.put(3)
    closing = threading.Thread(target=worker.close)
    closing.start()
    gate.set()
    closing.join(10)
    assert done == [1, 2, 3]
    assert worker.closed
    worker.close()  # idempotent
    assert not any(t.name == "test-close" for t in threading.enumerate())
