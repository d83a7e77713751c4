"""The smoke target interface: one run of the GPU probe somewhere (a Batch job, a Kubernetes Job, a gang job on N
nodes, a sweep of every GPU node, this machine), as five steps that :func:`drive` takes every target through with
the same guarantees: nothing is created before :meth:`SmokeTarget.submit`, and from then on every way out (an
error, the timeout, Ctrl-C, SIGTERM) cleans up before it leaves.

Each target is a class of the module that knows its platform (:mod:`.batch`, :mod:`.batch_multinode`,
:mod:`.sweep_batch`, :mod:`.kubernetes`, :mod:`.kubernetes_multinode`, :mod:`.sweep_kubernetes`, :mod:`.local`);
the platform registry names the one of each mode (:attr:`gpuready_components.platforms.Platform.targets`) and
:mod:`.dispatch` looks it up. A platform from outside gpuready brings its own subclass.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Mapping, Optional

ENDED = "finished"
"""The reason :func:`drive` gives :meth:`SmokeTarget.cleanup` after the run ended its own way (a verdict returned)."""
INTERRUPTED = "interrupted"
"""...after a Ctrl-C (or SIGTERM)."""
FAILED = "stopped by an error"
"""...after any other error."""


@dataclass(frozen=True)
class Request:
    """What the user asked of a run (the CLI's options), whichever target runs it; each target reads what
    applies to it."""

    timeout: float = 1800
    """Seconds the work may take before it is stopped and the run fails (``--timeout``)."""
    gpus: Optional[int] = None
    """GPUs a job asks for (``--gpus``); None: the target's own default (1; a gang or sweep: all of a node's)."""
    nodes: Optional[int] = None
    """``gpuready smoke``: 1, or N for one gang job on N nodes; ``gpuready sweep``: how many nodes (None: the
    target's default)."""
    keep: bool = False
    """Leave the work running on timeout, Ctrl-C or an error (``--keep``)."""
    full: bool = False
    """The probe's sustained tier (``--full``)."""
    quarantine: bool = False
    """Take failing nodes out of service (``gpuready sweep --quarantine``; Kubernetes only)."""
    repair: bool = False
    """Failing nodes are to be repaired by the platform after the sweep (``gpuready sweep --repair``, which
    :mod:`gpuready.repair` does; Kubernetes only): a target that cannot refuses in :meth:`SmokeTarget.preflight`."""
    trust_kubeconfig_exec: bool = False
    """Let the outputs' kubeconfig run any credential command (``--trust-kubeconfig-exec``)."""
    team: Optional[str] = None
    """The team whose queue the work goes through (``--team``: a name in the stack's ``teams`` output); None: no
    team (a stack without teams, or a platform's path for jobs without one)."""


class SmokeTarget(abc.ABC):
    """One run on one platform, in the order :func:`drive` calls its steps: :meth:`preflight`; then, when it says
    go, :meth:`submit`, :meth:`follow` and, when the work ended, :meth:`collect`; :meth:`cleanup` on every way out
    once :meth:`submit` was called; :meth:`interrupted` after a Ctrl-C.

    Every step is bounded in time: ``--timeout`` bounds :meth:`submit` and :meth:`follow` together; what runs after
    the deadline (:meth:`collect`'s last reads, :meth:`cleanup`) takes a few seconds' grace at most. A passing fault
    (throttling, 5xx, a reset or unanswered connection) is retried (:mod:`.retry`), never a refusal. A mistake the
    user must fix (outputs that name nothing there, a kubeconfig that runs an unknown command) is a
    :class:`~gpuready.errors.UserError`: one line, exit 2."""

    result: Any
    """What the run found so far (:class:`.result.SmokeResult`, or :class:`.sweep.SweepResult` for a sweep): set
    by :meth:`preflight`, returned by :func:`drive`."""

    def __init__(self, outputs: Mapping[str, Any], request: Request) -> None:
        """A run of ``request`` on the stack whose outputs are ``outputs`` (as :func:`.outputs.load_outputs` reads
        them): how :mod:`.dispatch` makes every target, so a subclass takes these two first; it may add keyword-only
        settings of its own (poll intervals, clocks, where progress goes). Reads and creates nothing:
        :meth:`preflight` does."""
        self.outputs, self.request = dict(outputs), request

    @abc.abstractmethod
    def preflight(self) -> bool:
        """Read what the run needs (the stack's outputs, the platform's queue, definition or nodes) and check that
        the work can run, creating nothing, and set :attr:`result`. False when :attr:`result` already holds the
        verdict and nothing is to be submitted (a job no instance of the queue can hold: a failing check says
        why; no GPU node to sweep); raises for what stops the run (a ``UserError`` for a mistake to fix)."""

    @abc.abstractmethod
    def submit(self) -> None:
        """Create the work (a job definition and jobs; a ConfigMap and Jobs...), each object at most once: after
        a call whose answer was lost, what may have landed is looked up (or AlreadyExists adopted) before any
        retry, so no fault makes two. Before each create call is sent, note that the object may exist, so that
        :meth:`cleanup` undoes it even when this raises or is interrupted halfway."""

    @abc.abstractmethod
    def follow(self) -> bool:
        """Wait for the work to end, or for ``--timeout``: progress on stderr, work that waits (Pending,
        RUNNABLE) explained in :attr:`result`'s diagnosis. True when it ended and :meth:`collect` is to judge
        it; False at the timeout, with :attr:`result` holding the verdict (a failing ``job_finished``) and the
        work stopped (unless ``--keep``)."""

    @abc.abstractmethod
    def collect(self) -> None:
        """Read what the ended work left (its logs: the probe's reports) into :attr:`result`: the job's status,
        each probe check, a row per node. A report that cannot be found is a failing check, never an error."""

    @abc.abstractmethod
    def cleanup(self, reason: str) -> None:
        """Undo everything the run created or may have created (a create sent, its answer lost), so that nothing
        is left running and nothing is left behind, unless ``--keep`` (then what a kept job needs stays, and a
        line on stderr says how to remove it). Called by :func:`drive` on every way out after :meth:`submit`
        (``reason``: :data:`ENDED`, :data:`INTERRUPTED`, :data:`FAILED`, which a platform may record), maybe more
        than once: idempotent, each object undone once. Each undo is retried on any error for a few seconds; one
        that still fails is a line on stderr naming the command that undoes it, never an error. A Ctrl-C meanwhile
        does not stop it: it is raised once everything is undone."""

    def interrupted(self) -> Optional[Any]:
        """The verdict of a run stopped by Ctrl-C (:meth:`cleanup` has run): :attr:`result` with a failing check
        saying so (the CLI exits 1), or None where a Ctrl-C is no verdict (the CLI exits 130)."""
        return None


def drive(target: SmokeTarget) -> Any:
    """Run ``target`` through its steps and return its result, whose verdict the CLI prints as the run's one
    verdict line. Once :meth:`SmokeTarget.submit` is called, :meth:`SmokeTarget.cleanup` runs before anything leaves: an
    error (raised after the cleanup), Ctrl-C (:meth:`SmokeTarget.interrupted`'s verdict, else raised: exit 130),
    SIGTERM (the CLI's subclass of KeyboardInterrupt: raised after the cleanup, exit 143)."""
    if not target.preflight():
        return target.result
    reason = FAILED
    try:
        target.submit()
        if target.follow():
            target.collect()
        reason = ENDED
        return target.result
    except KeyboardInterrupt as stop:
        reason = INTERRUPTED
        target.cleanup(INTERRUPTED)
        if type(stop) is not KeyboardInterrupt:  # SIGTERM (the CLI's subclass): cleaned up, now stop
            raise
        verdict = target.interrupted()
        if verdict is None:
            raise
        return verdict
    finally:
        target.cleanup(reason)
