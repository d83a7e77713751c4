"""Property: whatever a stack file holds, ``gpuready plan`` answers with a plan (0), policy findings (1) or one
paragraph naming the user's key or file (2): never an internal error, a traceback or a raw control character."""

from __future__ import annotations

import io
import re
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuready.cli import main
from tests.conftest import ROOT

STACKS = {name: yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())
          for name in ("aws-batch", "eks", "gke", "aks")}
KEYS = sorted({k for data in STACKS.values() for k in data["config"]})
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12) | st.sampled_from(
    ["", "\x1b[2J", "g6.xlarge", "ON_DEMAND", "-1", "1e400", "true", "null", "~", "[secret]"])
scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([0, 1, 10**12, -5])
           | st.floats(allow_nan=True, allow_infinity=True) | text)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(text | st.integers(0, 9), inner, max_size=3), max_leaves=6)
keys = st.sampled_from(KEYS) | text.map(lambda k: f"gpuready:{k}") | text | st.integers(-3, 3)


def _plan(content: bytes) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.fuzz.yaml"
        path.write_bytes(content)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["plan", "--stack-file", str(path)])
        return code, out.getvalue(), err.getvalue()


def _assert_answer(code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2), err
    assert "Traceback" not in out + err
    assert not CONTROL.search(err), err
    if code == 2:
        message = err.removeprefix("gpuready: ").removeprefix("plan: ")
        assert "gpuready:" in message or "Pulumi.fuzz.yaml" in message or "--stack" in message, err


@FUZZ
@given(stack=st.sampled_from(sorted(STACKS)), changes=st.dictionaries(keys, values, min_size=1, max_size=3))
def test_any_config_values_and_keys(stack, changes):
    data = {"config": {**STACKS[stack]["config"], **changes}}
    _assert_answer(*_plan(yaml.safe_dump(data, allow_unicode=True).encode()))


@FUZZ
@given(stack=st.sampled_from(sorted(STACKS)), extra=st.binary(max_size=40) | st.text(max_size=40).map(str.encode))
def test_any_bytes_in_the_stack_file(stack, extra):
    original = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_bytes()
    at = len(extra) * 7 % (len(original) + 1)
    _assert_answer(*_plan(original[:at] + extra + original[at:]))
