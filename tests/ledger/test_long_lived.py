"""``freeze_long_lived``: what is alive leaves the collector's generations, garbage does not."""

from __future__ import annotations

import gc
import weakref

from ledger.long_lived import freeze_long_lived


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_live_objects_are_frozen_and_garbage_collected_first() -> None:
    kept = _Node()
    cycle_a, cycle_b = _Node(), _Node()
    cycle_a.other, cycle_b.other = cycle_b, cycle_a  # garbage once the names go
    gone = weakref.ref(cycle_a)
    del cycle_a, cycle_b
    try:
        freeze_long_lived()
        assert gone() is None  # collected before the freeze, not frozen for ever
        assert gc.get_freeze_count() > 0
        assert not any(o is kept for o in gc.get_objects())  # no generation holds it now
    finally:
        gc.unfreeze()  # the rest of the session collects as before
    assert any(o is kept for o in gc.get_objects())
