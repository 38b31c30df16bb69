"""Tests for the injected clocks and Kubernetes timestamps.

Covers:
- RealClock: monotonic ``now()``, timezone-aware UTC ``wall()``.
- FakeClock: starts where told, stands still, ``advance`` and ``set`` move it forward only
  (negative, backwards and non-finite moves are errors), ``wall()`` is epoch + fake seconds,
  epochs must be timezone-aware and are normalised to UTC, concurrent advances are not lost,
  subscribers are told about every move and may read the clock while being told.
- Protocols: both clocks are ``Clock``s; only FakeClock is a ``ManualClock``.
- format_timestamp: RFC 3339 in UTC with whole seconds, like ``metav1.Time``; naive datetimes
  are rejected.
"""

from __future__ import annotations

import datetime
import math
import threading

import pytest

from inference_operator.core.clock import Clock, ManualClock, RealClock, format_timestamp
from inference_operator.sim.clock import DEFAULT_FAKE_EPOCH, FakeClock

UTC = datetime.UTC


# -- RealClock -------------------------------------------------------------------------


def test_real_clock_now_never_goes_backwards() -> None:
    clock = RealClock()
    readings = [clock.now() for _ in range(1000)]
    assert readings == sorted(readings)


def test_real_clock_wall_is_timezone_aware_utc_and_current() -> None:
    before = datetime.datetime.now(UTC)
    wall = RealClock().wall()
    after = datetime.datetime.now(UTC)
    assert wall.utcoffset() == datetime.timedelta(0)
    assert before <= wall <= after


# -- FakeClock -------------------------------------------------------------------------


def test_fake_clock_starts_at_zero_and_stands_still() -> None:
    clock = FakeClock()
    assert clock.now() == 0.0
    assert clock.now() == 0.0
    assert clock.wall() == DEFAULT_FAKE_EPOCH


def test_fake_clock_starts_where_told() -> None:
    assert FakeClock(42.5).now() == 42.5


def test_fake_clock_default_epoch_is_2026_new_year_utc() -> None:
    assert datetime.datetime(2026, 1, 1, tzinfo=UTC) == DEFAULT_FAKE_EPOCH
    assert FakeClock().epoch == DEFAULT_FAKE_EPOCH


def test_fake_clock_advance_moves_now_and_wall_together() -> None:
    clock = FakeClock()
    assert clock.advance(5) == 5.0
    assert clock.now() == 5.0
    assert clock.wall() == datetime.datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert format_timestamp(clock.wall()) == "2026-01-01T00:00:05Z"


def test_fake_clock_wall_is_epoch_plus_now_when_started_later() -> None:
    clock = FakeClock(start=60.0)
    assert clock.wall() == DEFAULT_FAKE_EPOCH + datetime.timedelta(minutes=1)


def test_fake_clock_advance_by_zero_is_allowed() -> None:
    clock = FakeClock(3.0)
    clock.advance(0)
    assert clock.now() == 3.0


@pytest.mark.parametrize("seconds", [-0.001, -5.0, math.nan, math.inf])
def test_fake_clock_refuses_to_advance_by_negative_or_non_finite_amounts(seconds: float) -> None:
    clock = FakeClock(1.0)
    with pytest.raises(ValueError, match="advance"):
        clock.advance(seconds)
    assert clock.now() == 1.0


def test_fake_clock_set_jumps_forward() -> None:
    clock = FakeClock()
    clock.set(12.25)
    assert clock.now() == 12.25
    clock.set(12.25)
    assert clock.now() == 12.25


def test_fake_clock_set_refuses_to_move_backwards() -> None:
    clock = FakeClock(10.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(9.999)
    assert clock.now() == 10.0


@pytest.mark.parametrize("t", [math.nan, math.inf])
def test_fake_clock_set_refuses_non_finite_times(t: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        FakeClock().set(t)


def test_fake_clock_refuses_a_non_finite_start() -> None:
    with pytest.raises(ValueError, match="finite"):
        FakeClock(math.nan)


def test_fake_clock_uses_a_custom_epoch() -> None:
    epoch = datetime.datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    clock = FakeClock(epoch=epoch)
    clock.advance(90)
    assert format_timestamp(clock.wall()) == "2030-06-01T12:01:30Z"


def test_fake_clock_normalises_an_offset_epoch_to_utc() -> None:
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    clock = FakeClock(epoch=datetime.datetime(2026, 1, 1, 2, 0, tzinfo=plus_two))
    assert clock.wall() == DEFAULT_FAKE_EPOCH
    assert clock.wall().utcoffset() == datetime.timedelta(0)


def test_fake_clock_refuses_a_naive_epoch() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        FakeClock(epoch=DEFAULT_FAKE_EPOCH.replace(tzinfo=None))


def test_fake_clock_does_not_lose_concurrent_advances() -> None:
    clock = FakeClock()
    threads = [threading.Thread(target=lambda: [clock.advance(0.5) for _ in range(1000)]) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    assert clock.now() == 4000.0  # 0.5 is exact in binary, so the sum is exact


def test_fake_clock_tells_subscribers_about_every_move_outside_its_lock() -> None:
    clock = FakeClock()
    seen: list[float] = []
    clock.subscribe(lambda: seen.append(clock.now()))  # reading the clock here must not deadlock
    clock.advance(1)
    clock.set(4)
    clock.advance(0)
    assert seen == [1.0, 4.0, 4.0]


def test_fake_clock_does_not_tell_subscribers_about_refused_moves() -> None:
    clock = FakeClock(5.0)
    calls: list[None] = []
    clock.subscribe(lambda: calls.append(None))
    with pytest.raises(ValueError, match="backwards"):
        clock.set(1)
    with pytest.raises(ValueError, match="advance"):
        clock.advance(-1)
    assert calls == []


# -- protocols -------------------------------------------------------------------------


def test_both_clocks_satisfy_the_clock_protocol() -> None:
    clocks: list[Clock] = [RealClock(), FakeClock()]
    for clock in clocks:
        assert isinstance(clock.now(), float)
        assert clock.wall().tzinfo is not None


def test_only_the_fake_clock_is_a_manual_clock() -> None:
    assert isinstance(FakeClock(), ManualClock)
    assert not isinstance(RealClock(), ManualClock)


# -- format_timestamp ------------------------------------------------------------------


def test_format_timestamp_gives_rfc3339_utc_with_a_z_suffix() -> None:
    moment = datetime.datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert format_timestamp(moment) == "2026-03-04T05:06:07Z"


def test_format_timestamp_drops_fractional_seconds_like_kubernetes() -> None:
    moment = datetime.datetime(2026, 1, 1, 0, 0, 5, 999_999, tzinfo=UTC)
    assert format_timestamp(moment) == "2026-01-01T00:00:05Z"


def test_format_timestamp_converts_other_offsets_to_utc() -> None:
    minus_five = datetime.timezone(datetime.timedelta(hours=-5))
    moment = datetime.datetime(2025, 12, 31, 19, 30, 0, tzinfo=minus_five)
    assert format_timestamp(moment) == "2026-01-01T00:30:00Z"


def test_format_timestamp_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_timestamp(DEFAULT_FAKE_EPOCH.replace(tzinfo=None))


def test_format_timestamp_of_the_fake_clock_wall_is_stable() -> None:
    clock = FakeClock()
    clock.advance(5.7)
    assert format_timestamp(clock.wall()) == "2026-01-01T00:00:05Z"
