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
    ``deadline`` (on ``clock``): then it is raised. Nothing bounds a call itself: give each call its own timeout."""
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
