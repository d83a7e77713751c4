"""The driver every smoke target runs under (gpuready/smoke/target.py): its steps in order, and the cleanup on every
way out once something may exist. A recording target stands in for a platform; the targets themselves are tested
against moto and the fake API server in their own files."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from gpuready.cli import Terminated
from gpuready.smoke.result import SmokeResult
from gpuready.smoke.target import ENDED, FAILED, INTERRUPTED, Request, SmokeTarget, drive


class Recording(SmokeTarget):
    """Records each step it is taken through; ``raises`` maps a step to what it raises there."""

    def __init__(self, *, ready: bool = True, ended: bool = True, raises: Optional[dict[str, BaseException]] = None,
                 verdict: bool = True) -> None:
        super().__init__({"platform": "test"}, Request(timeout=5))
        self.ready, self.ended, self.raises, self.verdict = ready, ended, raises or {}, verdict
        self.steps: list[str] = []

    def _step(self, name: str) -> None:
        self.steps.append(name)
        if name in self.raises:
            raise self.raises[name]

    def preflight(self) -> bool:
        self.result = SmokeResult(target="test")
        self._step("preflight")
        return self.ready

    def submit(self) -> None:
        self._step("submit")

    def follow(self) -> bool:
        self._step("follow")
        return self.ended

    def collect(self) -> None:
        self._step("collect")

    def cleanup(self, reason: str) -> None:
        self.steps.append(f"cleanup:{reason}")

    def interrupted(self) -> Any:
        self.steps.append("interrupted")
        return self.result if self.verdict else None


def test_a_run_goes_through_every_step_then_cleans_up():
    target = Recording()
    assert drive(target) is target.result
    assert target.steps == ["preflight", "submit", "follow", "collect", f"cleanup:{ENDED}"]


def test_work_that_did_not_end_is_not_collected():
    target = Recording(ended=False)
    drive(target)
    assert target.steps == ["preflight", "submit", "follow", f"cleanup:{ENDED}"]


def test_a_preflight_that_says_no_submits_nothing_and_has_nothing_to_clean_up():
    target = Recording(ready=False)
    assert drive(target) is target.result and target.steps == ["preflight"]


def test_a_failing_preflight_has_nothing_to_clean_up():
    target = Recording(raises={"preflight": ValueError("no queue")})
    with pytest.raises(ValueError):
        drive(target)
    assert target.steps == ["preflight"]


@pytest.mark.parametrize("step", ["submit", "follow", "collect"])
def test_an_error_after_preflight_is_raised_after_the_cleanup(step):
    target = Recording(raises={step: RuntimeError("API down")})
    with pytest.raises(RuntimeError):
        drive(target)
    assert target.steps[-2:] == [step, f"cleanup:{FAILED}"]


@pytest.mark.parametrize("step", ["submit", "follow", "collect"])
def test_ctrl_c_cleans_up_first_then_is_the_runs_verdict(step):
    target = Recording(raises={step: KeyboardInterrupt()})
    assert drive(target) is target.result
    assert target.steps[-4:] == [step, f"cleanup:{INTERRUPTED}", "interrupted", f"cleanup:{INTERRUPTED}"]


def test_ctrl_c_where_it_is_no_verdict_is_raised_after_the_cleanup():
    target = Recording(raises={"follow": KeyboardInterrupt()}, verdict=False)
    with pytest.raises(KeyboardInterrupt):
        drive(target)
    assert target.steps[-3:] == [f"cleanup:{INTERRUPTED}", "interrupted", f"cleanup:{INTERRUPTED}"]


def test_sigterm_is_raised_after_the_cleanup_never_a_verdict():
    target = Recording(raises={"follow": Terminated()})
    with pytest.raises(Terminated):
        drive(target)
    assert "interrupted" not in target.steps and target.steps[-2:] == [f"cleanup:{INTERRUPTED}"] * 2


def test_a_target_must_give_every_step():
    class Partial(SmokeTarget):
        def preflight(self) -> bool:
            return True

    with pytest.raises(TypeError, match="abstract"):
        Partial({}, Request())
