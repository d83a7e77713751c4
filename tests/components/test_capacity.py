"""The checks every platform's reservation shares (components/capacity.py), at their boundaries."""

from __future__ import annotations

import contextlib
import datetime

import pytest

from gpuready_components.capacity import check_reservation_facts
from gpuready_components.errors import ConfigError

NOW = datetime.datetime(2026, 11, 28, 12, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("start, refused", [("2027-01-01T00:00:00Z", True), ("2026-12-31T23:59:59Z", False)])
def test_a_reservation_must_start_before_it_ends_not_at_its_end(start, refused):
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext() as error:
        check_reservation_facts("node_pool.reservation", count=None, start=start, end="2027-01-01T00:00:00Z", now=NOW)
    if refused:
        assert error.value.field == "node_pool.reservation.start" and "not before the end" in str(error.value)


@pytest.mark.parametrize("end, refused", [("2026-11-28T12:00:00Z", True), ("2026-11-28T12:00:01Z", False)])
def test_a_reservation_ending_now_has_ended(end, refused):
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext() as error:
        check_reservation_facts("node_pool.reservation", count=None, start=None, end=end, now=NOW)
    if refused:
        assert error.value.field == "node_pool.reservation.end" and "has ended" in str(error.value)


@pytest.mark.parametrize("count, refused", [(0, True), (1, False)])
def test_a_reservation_holds_one_machine_or_more(count, refused):
    with pytest.raises(ConfigError) if refused else contextlib.nullcontext():
        check_reservation_facts("node_pool.reservation", count=count, start=None, end=None, now=NOW)
