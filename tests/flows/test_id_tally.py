"""``IdTally`` against the ``Counter`` it replaces (hypothesis), and its memory shape."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.id_tally import IdTally

adds = st.lists(
    st.tuples(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=3)),
    max_size=120,
)


@given(adds)
def test_counts_like_a_counter(pairs: list[tuple[int, int]]) -> None:
    tally, model = IdTally(), Counter[int]()
    for nid, count in pairs:
        tally.add(nid, count)
        model[nid] += count
    assert list(tally) == sorted(model)
    assert len(tally) == len(model)
    for nid in range(-2, 64):
        assert (nid in tally) == (nid in model)
        assert tally.count(nid) == model.get(nid, 0)
    # ranges are disjoint and never touch: each holds a maximal stretch of ids
    stretches = sum(1 for nid in model if nid - 1 not in model)
    assert tally.ranges == stretches


def test_a_run_of_increasing_ids_is_one_range_whatever_the_order_inside() -> None:
    ids = list(range(1_000, 101_000))
    head = ids[:500]
    random.Random(7).shuffle(head)  # the first ones out of order, as windows finish
    ids[:500] = head
    tally = IdTally()
    for nid in ids:
        tally.add(nid)
    assert (len(tally), tally.ranges) == (100_000, 1)
    assert 999 not in tally and 1_000 in tally and 100_999 in tally and 101_000 not in tally


def test_bad_ids_and_counts_are_refused() -> None:
    tally = IdTally()
    for nid, count in ((-1, 1), (3, 0)):
        with pytest.raises(ValueError):
            tally.add(nid, count)
    assert len(tally) == 0 and "3" not in tally
