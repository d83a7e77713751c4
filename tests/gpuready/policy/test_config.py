"""The policy config file: Pulumi's format, read the same way offline; mistakes named with the fix."""

from __future__ import annotations

import json

import pytest

from gpuready.errors import UserError
from gpuready.policy import RULES
from gpuready.policy.config import load, resolve


def test_levels_come_from_the_rule_then_all_then_the_default():
    resolved = resolve(RULES, {})
    assert resolved["gpu-taint-tolerated"] == ("mandatory", {})
    assert resolved["gpu-root-volume-size"] == ("advisory", {"minGiB": 100})
    resolved = resolve(RULES, {"all": "advisory", "gpu-metrics": "mandatory",
                               "gpu-capacity-caps": {"enforcementLevel": "disabled", "maxGpus": 4}})
    assert resolved["gpu-taint-tolerated"][0] == "advisory"
    assert resolved["gpu-metrics"][0] == "mandatory"
    assert resolved["gpu-capacity-caps"] == ("disabled", {"maxGpus": 4})


@pytest.mark.parametrize("data,words", [
    ({"gpu-capcity-caps": {}}, "did you mean 'gpu-capacity-caps'"),
    ({"all": "strict"}, "not an enforcement level"),
    ({"gpu-capacity-caps": {"maxGPUs": 4}}, "settings: maxGpus, maxUsdPerHour"),
    ({"gpu-capacity-caps": {"maxGpus": "four"}}, "must be of JSON type integer"),
    ({"helm-pinned-version": {"version": "1"}}, "it has none"),
])
def test_mistakes_are_user_errors(data, words):
    with pytest.raises(UserError, match=words):
        resolve(RULES, data)


def test_file_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load(bad)


def test_the_shipped_config_is_valid_for_every_rule():
    from tests.conftest import ROOT

    data = json.loads((ROOT / "policies" / "policy-config.json").read_text())
    resolved = resolve(RULES, data)
    assert resolved["cost-allocation-tags"] == ("mandatory", {"requiredTags": ["team", "cost-center"]})
