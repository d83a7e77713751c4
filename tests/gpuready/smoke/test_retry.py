"""The one retry loop behind both clouds' calls: its pauses, when it stops, and a cleanup that a Ctrl-C does not
stop halfway. A fake clock: the pauses are recorded, never slept."""

from __future__ import annotations

import pytest

from gpuready.smoke.retry import FLOOR, Backoff, Deadline, HeldInterrupt, persist, retry


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now, self.pauses = 100.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


class Passing(Exception):
    """A fault that passes (throttling, a 5xx)."""


def failing(*errors: BaseException, then: object = "done"):
    """A call that raises ``errors`` one by one, then returns ``then``; ``calls`` counts its calls."""
    left = list(errors)

    def call():
        call.calls += 1
        if left:
            raise left.pop(0)
        return then
    call.calls = 0
    return call


def passing(error: BaseException) -> bool:
    return isinstance(error, Passing)


def test_pauses_double_from_first_up_to_most():
    assert [Backoff(0.2, 2.0).pause(a) for a in range(6)] == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert [Backoff(1.0, 10.0).pause(a) for a in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_passing_faults_are_retried_after_each_pause_until_the_call_answers():
    clock, call = Clock(), failing(Passing(), Passing(), Passing())
    assert retry(call, retryable=passing, backoff=Backoff(0.2, 2.0), deadline=200.0, clock=clock,
                 sleep=clock.sleep) == "done"
    assert call.calls == 4 and clock.pauses == [0.2, 0.4, 0.8]


def test_an_error_retryable_refuses_is_raised_at_once():
    clock, call = Clock(), failing(ValueError("refused"))
    with pytest.raises(ValueError, match="refused"):
        retry(call, retryable=passing, backoff=Backoff(0.2, 2.0), clock=clock, sleep=clock.sleep)
    assert call.calls == 1 and clock.pauses == []


def test_ctrl_c_is_raised_at_once_unless_retryable_takes_it():
    clock, call = Clock(), failing(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        retry(call, retryable=passing, backoff=Backoff(0.2, 2.0), clock=clock, sleep=clock.sleep)
    assert call.calls == 1


def test_the_last_of_tries_is_raised_without_a_pause():
    clock, call = Clock(), failing(Passing("1"), Passing("2"), Passing("3"), Passing("4"))
    with pytest.raises(Passing, match="3"):
        retry(call, retryable=passing, backoff=Backoff(1.0, 4.0), tries=3, clock=clock, sleep=clock.sleep)
    assert call.calls == 3 and clock.pauses == [1.0, 2.0]


def test_no_pause_reaches_the_deadline():
    clock = Clock()
    call = failing(*[Passing(str(i)) for i in range(100)])
    with pytest.raises(Passing):
        retry(call, retryable=passing, backoff=Backoff(0.2, 2.0), deadline=clock.now + 3.0, clock=clock,
              sleep=clock.sleep)
    assert clock.pauses == [0.2, 0.4, 0.8] and clock.now <= 100.0 + 3.0  # 1.6 more would reach 103.0


def test_a_cleanup_goes_on_through_ctrl_c_and_holds_it_for_the_caller():
    clock, held = Clock(), HeldInterrupt()
    stop = KeyboardInterrupt()
    call = failing(stop, Passing(), then="deleted")
    assert persist(call, backoff=Backoff(0.2, 1.0), deadline=clock.now + 4.0, held=held, clock=clock,
                   sleep=clock.sleep) == "deleted"
    assert call.calls == 3 and held.stop is stop
    with pytest.raises(KeyboardInterrupt):
        held.raise_held()


def test_a_cleanup_failing_to_its_deadline_raises_the_last_error_and_keeps_an_earlier_ctrl_c():
    clock, held = Clock(), HeldInterrupt()
    call = failing(KeyboardInterrupt(), *[ValueError(str(i)) for i in range(100)])
    with pytest.raises(ValueError):
        persist(call, backoff=Backoff(0.2, 1.0), deadline=clock.now + 4.0, held=held, clock=clock,
                sleep=clock.sleep)
    assert isinstance(held.stop, KeyboardInterrupt) and clock.now < 104.0


def test_nothing_held_raises_nothing():
    HeldInterrupt().raise_held()


@pytest.mark.parametrize("left, limits", [(10.0, (3.0, 5.0)), (4.0, (3.0, 4.0)), (2.0, (2.0, 2.0)),
                                          (0.5, (FLOOR, FLOOR)), (0.1, (FLOOR, FLOOR)), (-3.0, (FLOOR, FLOOR))])
def test_a_calls_timeouts_are_cut_to_the_time_left_never_below_the_floor(left, limits):
    clock = Clock()
    assert Deadline(clock.now + left, clock).limits(3.0, 5.0) == limits


@pytest.mark.parametrize("stopped_at, cleanup_until", [(100.0, 113.0), (129.0, 142.0), (130.0, 143.0),
                                                       (131.5, 143.0)])
def test_a_cleanup_gets_its_grace_from_the_deadline_or_from_an_earlier_stop(stopped_at, cleanup_until):
    """Deadline at 130: a run stopped at once cleans up until 113; one that reached its cleanup 1.5 s late still
    ends by 130 + 13."""
    clock = Clock()
    clock.now = stopped_at
    deadline = Deadline(130.0, clock)
    assert deadline.extend(13.0) == cleanup_until == deadline.at
