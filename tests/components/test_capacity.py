"""The checks every platform's reservation shares (components/capacity.py), at their boundaries."""

from __future__ import annotations

import contextlib
import datetime

import pytest

from gpuready_components.capacity import (RESERVATION_COUNT, RESERVATION_START, best_fill, check_reservation_facts,
                                         parse_time, read_reservation_stamps, reservation_entry, reservation_stamps)
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


@pytest.mark.parametrize("facts, message", [
    ({"count": 0}, "node_pool.reservation.count = 0: a reservation holds 1 VM or more. Fix: set the reserved VM "
                   "count, or leave it out"),
    ({"count": 2, "bound": ("node_pool.max_nodes", 3)},
     "node_pool.max_nodes = 3: the reservation holds 2 VM(s), so the nodes past them are never created. Fix: set "
     "max_nodes to 2 or less"),
    ({"start": "soon"}, "node_pool.reservation.start = 'soon': not an ISO date. Fix: write it like 2026-12-31 or "
                        "2026-12-31T11:30:00Z"),
    ({"end": "2026-11-28"}, "node_pool.reservation.end = '2026-11-28': the reservation has ended. Fix: name a current "
                            "reservation, or remove node_pool.reservation"),
    ({"start": "2027-01-02", "end": "2027-01-01"},
     "node_pool.reservation.start = '2027-01-02': it is not before the end 2027-01-01. Fix: copy start and end from "
     "the reservation as the cloud describes it"),
])
def test_each_refusal_names_the_key_the_value_and_a_fix(facts, message):
    with pytest.raises(ConfigError) as error:
        check_reservation_facts("node_pool.reservation", **{"count": None, "start": None, "end": None, **facts},
                                now=NOW)
    assert str(error.value) == message


def test_a_count_that_holds_every_node_passes():
    check_reservation_facts("node_pool.reservation", count=3, start=None, end=None, bound=("node_pool.max_nodes", 3),
                            now=NOW)


def test_a_reservation_entry_holds_what_is_known_and_nothing_unknown():
    assert reservation_entry(pool="gpu-4x", kind="odcr", target="cr-0123456789abcdef0", only=True,
                             start="2026-12-01T00:00:00Z", end="2027-01-01T00:00:00Z", count=4, zone="us-east-1a",
                             subnet_zones=("us-east-1a", "us-east-1b"), facts_read=False) == {
        "pool": "gpu-4x", "kind": "odcr", "target": "cr-0123456789abcdef0", "only": True,
        "start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z", "count": 4, "zone": "us-east-1a",
        "subnetZones": ["us-east-1a", "us-east-1b"], "factsRead": False}
    assert reservation_entry(kind="odcr", target="open", only=False) == {"kind": "odcr", "target": "open",
                                                                          "only": False}


@pytest.mark.parametrize("value, when", [
    ("2026-12-31", datetime.datetime(2026, 12, 31, tzinfo=datetime.timezone.utc)),
    ("2026-12-31T11:30:00Z", datetime.datetime(2026, 12, 31, 11, 30, tzinfo=datetime.timezone.utc)),
    ("2026-12-31T13:30:00+02:00", datetime.datetime(2026, 12, 31, 11, 30, tzinfo=datetime.timezone.utc)),
    ("20261231t113000z", datetime.datetime(2026, 12, 31, 11, 30, tzinfo=datetime.timezone.utc)),
])
def test_a_time_is_read_in_utc_whatever_its_form(value, when):
    assert parse_time(value) == when and parse_time(value).tzinfo == datetime.timezone.utc


def test_the_stamps_read_back_what_was_written_and_skip_the_unreadable():
    stamps = reservation_stamps(only=True, start="2026-12-01T00:00:00Z", end="2027-01-01", count=3)
    assert read_reservation_stamps(stamps) == {"start": "2026-12-01T00:00:00Z", "end": "2027-01-01T00:00:00Z",
                                               "count": 3}
    assert read_reservation_stamps({**stamps, RESERVATION_START: "soon", RESERVATION_COUNT: "many"}) == {
        "end": "2027-01-01T00:00:00Z"}
    assert read_reservation_stamps(None) == {} and read_reservation_stamps({}) == {}


@pytest.mark.parametrize("budget, items, best", [
    (96, [(48, 4.0)], 8.0),  # two g6.12xlarge in 96 vCPUs
    (95, [(48, 4.0)], 4.0),  # a vCPU short of the second
    (47, [(48, 4.0)], 0.0),  # not even one
    (10, [(4, 1.0), (3, 1.0)], 3.0),  # any mix: 4 + 3 + 3
    (1, [(1, 2.5)], 2.5), (0, [(1, 2.5)], 0.0),  # the smallest budgets
    (5, [(0, 9.0), (2, 1.0)], 2.0),  # a cost of 0 buys nothing
])
def test_the_best_fill_of_a_budget(budget, items, best):
    assert best_fill(budget, items) == best
