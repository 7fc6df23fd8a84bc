"""``fewer_collections``: the objects alive at a run's start frozen during it, not after."""

from __future__ import annotations

import gc
import weakref

import pytest

from flows.collector import fewer_collections


class Node:
    """An object that can be put in a reference cycle and watched with a weak reference."""

    other: Node | None = None


def test_inside_the_objects_alive_are_frozen_and_thresholds_kept() -> None:
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    with fewer_collections():
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() > frozen_before
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_unfrozen_when_the_run_raises() -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("run failed")
    assert gc.get_freeze_count() == 0


def test_cycles_made_inside_are_still_collected() -> None:
    with fewer_collections():
        a, b = Node(), Node()
        a.other, b.other = b, a
        watched = weakref.ref(a)
        del a, b
        gc.collect()
        assert watched() is None  # not frozen: made after entry


def test_cycles_frozen_at_entry_are_collected_after_exit() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    watched = weakref.ref(a)
    with fewer_collections():
        del a, b
        gc.collect()
        assert watched() is not None  # frozen: left out while the run goes on
    gc.collect()
    assert watched() is None
