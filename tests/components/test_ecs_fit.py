"""The one Batch fit rule: what component validation, the policy pack and the smoke diagnosis all decide with."""

from __future__ import annotations

import json

from gpuready_components import catalog
from gpuready_components import ecs_fit as fit
from gpuready.resources.aws import BatchJobDefinition
from gpuready.smoke import diagnose


def _row(name: str) -> catalog.GpuInstanceType:
    row = catalog.find("aws", name)
    assert row is not None
    return row


def test_a_job_fits_when_gpus_vcpus_and_usable_memory_all_fit_one_instance():
    g6 = _row("g6.xlarge")  # 1 L4, 4 vCPU, 16 GiB of which 95% usable
    assert fit.usable_memory_mib(g6) == 15564
    assert fit.fits(fit.Needs(1, 4, 15564), g6)
    assert not fit.fits(fit.Needs(1, 4, 15565), g6)  # ECS keeps its share
    assert not fit.fits(fit.Needs(2, 1, 1), g6)
    assert not fit.fits(fit.Needs(1, 5, 1), g6)


def test_largest_orders_by_gpus_then_vcpus_then_memory():
    rows = [_row(n) for n in ("g6.xlarge", "g6.12xlarge", "g6.2xlarge", "g6e.12xlarge")]
    assert [r.name for r in fit.largest(rows, 3)] == ["g6e.12xlarge", "g6.12xlarge", "g6.2xlarge"]
    # a type that several compute environments offer is one offer, not two
    assert [r.name for r in fit.largest(rows + rows, 3)] == ["g6e.12xlarge", "g6.12xlarge", "g6.2xlarge"]


def test_validation_policy_and_smoke_diagnosis_agree_on_the_same_job():
    """The memory edge of a g6.xlarge: all three places accept 15564 MiB and refuse 15565."""
    from gpuready_components.batch_gpu import GpuJobArgs
    from gpuready_components.batch_gpu.validation import check
    from gpuready_components.errors import ConfigError

    from .batch_gpu.helpers import args

    env = {"computeResources": {"instanceTypes": ["g6.xlarge"]}}
    for memory, holds in ((15564, True), (15565, False)):
        try:
            check(args(instance_types=["g6.xlarge"], job=GpuJobArgs(gpus=1, vcpus=4, memory_mib=memory)))
            validated = True
        except ConfigError:
            validated = False
        container = {"resourceRequirements": [{"type": "GPU", "value": "1"}, {"type": "VCPU", "value": "4"},
                                              {"type": "MEMORY", "value": str(memory)}]}
        (needs,) = BatchJobDefinition({"containerProperties": json.dumps(container)}).needs()
        diagnosed = diagnose.unplaceable({"GPU": 1, "VCPU": 4, "MEMORY": memory}, [env]) is None
        assert (validated, fit.fits(needs, _row("g6.xlarge")), diagnosed) == (holds, holds, holds)


def test_the_smoke_diagnosis_knows_a_declared_type_from_its_environments_tags():
    """DescribeComputeEnvironments answers an environment's tags: the GPU facts of a type the stack declared reach
    the smoke test, whose catalog never held it; without them the type may hold anything."""
    import dataclasses

    declared = dataclasses.replace(_row("g6.xlarge"), name="g9.xlarge", price_usd_hour=None)
    env = {"computeResources": {"instanceTypes": ["g9.xlarge"], "maxvCpus": 64},
           "tags": dict([catalog.stamp(declared)])}
    assert catalog.find("aws", "g9.xlarge") is None
    assert diagnose.unplaceable({"GPU": 1, "VCPU": 4, "MEMORY": 8192}, [env]) is None
    why = diagnose.unplaceable({"GPU": 2, "VCPU": 4, "MEMORY": 8192}, [env])
    assert why and f"g9.xlarge: {fit.capacity(declared)}" in why
    assert diagnose.unplaceable({"GPU": 2, "VCPU": 4, "MEMORY": 8192}, [{**env, "tags": {}}]) is None
