"""The output contract type: a component registers exactly its platform's declared outputs."""

from __future__ import annotations

import pytest

from gpuready_components import platforms
from gpuready_components.outputs import STRING, WHOLE, Contract, Output, contract

TOY = Contract("toy", (Output("platform", STRING, "p", smoke=True), Output("size", WHOLE, "s"),
                       Output("extra", STRING, "e", when="with extra")))


def test_values_keep_the_declared_outputs_and_drop_absent_conditional_ones():
    assert TOY.values({"platform": "toy", "size": 2, "extra": None}) == {"platform": "toy", "size": 2}


@pytest.mark.parametrize("given, says", [
    ({"platform": "toy", "size": 2}, "missing ['extra']"),
    ({"platform": "toy", "size": 2, "extra": None, "other": 1}, "undeclared ['other']"),
    ({"platform": "toy", "size": None, "extra": None}, "size is None"),
])
def test_values_refuse_what_the_contract_does_not_declare(given, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
        TOY.values(given)


def test_every_platform_has_a_contract_naming_itself():
    assert {"aws-batch", "eks", "gke", "aks"} <= set(platforms.names())
    for platform in platforms.names():
        assert contract(platform).platform == platform and contract(platform)["platform"].smoke
    assert contract("nomad") is None
