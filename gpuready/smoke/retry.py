"""Retrying a cloud API call with backoff: the one loop behind the Batch and Kubernetes targets' calls.

Each target says which errors pass (:func:`retry`'s ``retryable``: throttling, 5xx, a reset or unanswered
connection) and what bounds the retries (a number of tries, or a deadline: ``--timeout``, or a cleanup's grace);
this module says how long to wait between tries and when to stop. Cleanups (:func:`persist`) retry on any error,
a Ctrl-C included, since a job left running bills a GPU.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Pauses between tries: ``first`` seconds, doubling after each try, never above ``most``."""

    first: float
    most: float

    def pause(self, attempt: int) -> float:
        """The pause after try ``attempt`` (0 for the first)."""
        return min(self.first * 2 ** attempt, self.most)


def retry(call: Callable[[], T], *, retryable: Callable[[BaseException], bool], backoff: Backoff,
          tries: Optional[int] = None, deadline: Optional[float] = None,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()`` until it returns, what it returns. An error ``retryable`` refuses is raised at once; a passing one
    is tried again after :meth:`Backoff.pause`, unless ``tries`` calls were made or that pause would reach
    ``deadline`` (on ``clock``): then it is raised. Nothing bounds a call itself: give each call its own timeout
    (:meth:`Deadline.limits`)."""
    for attempt in itertools.count():
        try:
            return call()
        except BaseException as error:  # noqa: BLE001 (retryable decides; a Ctrl-C is raised unless it says so)
            pause = backoff.pause(attempt)
            if not retryable(error) or (tries is not None and attempt + 1 >= tries) or \
                    (deadline is not None and clock() + pause >= deadline):
                raise
        sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


FLOOR = 1.0
"""The shortest connect or read timeout a call is given, however little time is left (an API answers well within
it, even from a loaded machine): a call started at its deadline ends at most this long after it."""


class Deadline:
    """When the API calls made from now on must have ended (on ``clock``): the run's ``--timeout``, then its
    cleanup's grace (:meth:`extend`). Every call takes its connect and read timeouts from :meth:`limits`, so that
    no call started before the deadline ends more than :data:`FLOOR` seconds after it."""

    def __init__(self, at: float = float("inf"), clock: Callable[[], float] = time.monotonic) -> None:
        self.at, self.clock = at, clock

    def left(self) -> float:
        """Seconds left (negative once past)."""
        return self.at - self.clock()

    def limits(self, connect: float, read: float) -> tuple[float, float]:
        """``(connect, read)``, each shortened to the time left, never below :data:`FLOOR`."""
        left = max(FLOOR, self.left())
        return min(connect, left), min(read, left)

    def extend(self, grace: float) -> float:
        """Move the deadline to ``grace`` seconds from now, or from the deadline once that has passed (a cleanup's
        time, which starts at the deadline at the latest); the new deadline."""
        self.at = min(self.at, self.clock()) + grace
        return self.at


class HeldInterrupt:
    """The Ctrl-C (or SIGTERM) met while cleaning up, held until every cleanup is done, then raised: a cleanup
    stopped halfway would leave jobs running."""

    def __init__(self) -> None:
        self.stop: Optional[KeyboardInterrupt] = None

    def note(self, error: BaseException) -> None:
        """Hold ``error`` if it is a Ctrl-C (or SIGTERM)."""
        if isinstance(error, KeyboardInterrupt):
            self.stop = error

    def raise_held(self) -> None:
        """Raise the Ctrl-C held, if any."""
        if self.stop is not None:
            raise self.stop


def persist(call: Callable[[], T], *, backoff: Backoff, deadline: float, held: HeldInterrupt,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()`` (an idempotent undo: terminate, deregister, delete), retried on any error, a Ctrl-C included,
    until ``deadline``: a Ctrl-C meanwhile is put in ``held`` for the caller to raise once all is undone. At the
    deadline the last error is raised (and held, if it is a Ctrl-C)."""
    def attempt() -> T:
        try:
            return call()
        except KeyboardInterrupt as stop:
            held.note(stop)
            raise
    return retry(attempt, retryable=lambda error: isinstance(error, (Exception, KeyboardInterrupt)), backoff=backoff,
                 deadline=deadline, clock=clock, sleep=sleep)
