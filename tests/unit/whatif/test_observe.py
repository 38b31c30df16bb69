"""The what-if's measures of serving capacity over time.

Covers: the lowest count of serving pods, how long it lasted in all (over separate dips) and
when it first began; the seconds below the wanted count; a count that never dipped; samples
that end at the end of the run (the last count lasts until then).
"""

from __future__ import annotations

from inference_operator.whatif.observe import Capacity


def test_the_lowest_count_adds_up_every_dip_to_it_and_says_when_the_first_began() -> None:
    capacity = Capacity(4, samples=[(0.0, 4), (5.0, 3), (10.0, 2), (12.0, 3), (20.0, 2), (21.5, 4)])
    assert capacity.lowest(end=30.0) == (2, 3.5, 10.0)
    assert capacity.below(end=30.0) == 16.5


def test_a_count_that_never_dips_is_never_below() -> None:
    capacity = Capacity(2, samples=[(0.0, 2), (3.0, 3), (8.0, 2)])
    assert capacity.below(end=60.0) == 0
    assert capacity.lowest(end=60.0) == (2, 55.0, 0.0)


def test_the_last_count_lasts_until_the_end_of_the_run() -> None:
    capacity = Capacity(2, samples=[(0.0, 2), (1.0, 1)])
    assert capacity.lowest(end=3600.0) == (1, 3599.0, 1.0)
    assert capacity.below(end=3600.0) == 3599.0
