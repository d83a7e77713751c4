"""``gpuready:extraInstanceTypes`` (GPU facts of types newer than the catalog) and the catalog's refusals of types
gpuready cannot run, as a stack user meets them through `gpuready plan`."""

from __future__ import annotations

import json

import pytest

from gpuready_components import catalog
from gpuready_components.errors import ConfigError
from gpuready.resources import aws, kubernetes, read
from tests.gpuready.policy.helpers import render_stack

from .test_config_messages import _plan

G9 = {"name": "g9.xlarge", "gpuModel": "L4", "gpus": 1, "gpuMemoryGiB": 22.35, "vcpus": 4, "memoryGiB": 16}
FOUR_GPU_TEAMS = {"gpuready:teams": [{"name": "research", "gpus": 1, "borrow": 2},
                                     {"name": "inference", "gpus": 1, "lend": 0, "weight": 2}]}
"""The eks stack's teams resized for one group of 1-GPU types (4 GPUs at full scale): the reference's 4 + 4 would
not fit, and research's borrow of 8 could not be lent."""


@pytest.mark.parametrize("stack", ["aws-batch", "eks"])
def test_a_declared_type_is_used_like_a_catalog_row(tmp_path, capsys, stack):
    code, _ = _plan(tmp_path, stack, {"gpuready:instanceTypes": ["g9.xlarge"], "gpuready:extraInstanceTypes": [G9],
                                      **(FOUR_GPU_TEAMS if stack == "eks" else {})})
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "g9.xlarge (1x L4 22.35 GiB)" in out.out and "(L4), $0.00/h" in out.out
    assert "not priced: g9.xlarge" in out.out
    assert catalog.find("aws", "g9.xlarge") is None  # the plan read it from the resources, as the policy pack does


@pytest.mark.parametrize("stack,changes,reader,gpus", [
    ("aws-batch", {}, aws.BatchComputeEnvironment, 16),  # maxVcpus 64 of 4-vCPU instances
    ("eks", FOUR_GPU_TEAMS, aws.EksNodeGroup, 4),  # maxSize 4
    ("eks", {"gpuready:autoscaler": "karpenter", **FOUR_GPU_TEAMS}, kubernetes.KarpenterNodePool, 4),  # its limit
])
def test_the_pools_of_a_declared_type_carry_its_facts(stack, changes, reader, gpus):
    """Each resource that launches a declared type carries its GPU facts (an AWS tag, a NodePool annotation), so its
    reader knows the type in a process that never ran the stack program: the policy pack's."""
    rendering = render_stack(stack, **{"gpuready:instanceTypes": ["g9.xlarge"], "gpuready:extraInstanceTypes": [G9],
                                       **changes})
    assert catalog.find("aws", "g9.xlarge") is None
    launching = [r for r in rendering.of_type(reader.TOKEN) if read(r.type, r.inputs).instance_types == ["g9.xlarge"]]
    (pool,) = [read(r.type, r.inputs) for r in launching]
    row = pool.row("g9.xlarge")
    assert (row.gpu_model, row.gpus, row.gpu_memory_gib, row.vcpus, row.memory_gib, row.price_usd_hour) == \
        ("L4", 1, 22.35, 4, 16, None)
    capacity = pool.capacity()
    assert (capacity.max_gpus, capacity.unknown_types, capacity.rows) == (gpus, (), (row,))
    stamped = [r.name for r in rendering.resources if "gpu-facts.gpuready.io/g9.xlarge" in json.dumps(r.inputs)]
    assert stamped == [r.name for r in launching]


def test_catalog_types_carry_no_facts():
    rendering = render_stack("eks", **{"gpuready:extraInstanceTypes": [G9]})  # declared, but not used
    assert not [r.name for r in rendering.resources if "gpu-facts.gpuready.io" in json.dumps(r.inputs)]


def test_the_next_render_forgets_them(tmp_path, capsys):
    assert _plan(tmp_path, "aws-batch", {"gpuready:instanceTypes": ["g9.xlarge"],
                                         "gpuready:extraInstanceTypes": [G9]})[0] == 0
    assert _plan(tmp_path, "aws-batch", {"gpuready:instanceTypes": ["g9.xlarge"]})[0] == 2
    assert catalog.find("aws", "g9.xlarge") is None


def _catalog_state() -> dict:
    return {name: value for name, value in vars(catalog).items() if not name.startswith("__")}


def test_one_render_declares_its_types_for_itself_alone():
    """Two stacks rendered one after the other in one process (as `gpuready plan` and the tests do): the first
    declares g9.xlarge, the second does not and never sees it; the catalog module is as it was."""
    before = _catalog_state()
    first = render_stack("eks", **{"gpuready:instanceTypes": ["g9.xlarge"], "gpuready:extraInstanceTypes": [G9],
                                   **FOUR_GPU_TEAMS})
    assert [r for r in first.resources if "gpu-facts.gpuready.io/g9.xlarge" in json.dumps(r.inputs)]
    with pytest.raises(ConfigError, match=r"gpuready:instanceTypes.*'g9.xlarge': unknown instance type"):
        render_stack("aws-batch", **{"gpuready:instanceTypes": ["g9.xlarge"]})
    second = render_stack("aws-batch", **{"gpuready:instanceTypes": ["g6.xlarge"]})
    assert not [r for r in second.resources if "gpu-facts.gpuready.io" in json.dumps(r.inputs)]
    assert _catalog_state() == before and catalog.find("aws", "g9.xlarge") is None


@pytest.mark.parametrize("rows,key,phrase", [
    ([{**G9, "gpus": 0}], "gpuready:extraInstanceTypes[0]", "0 GPUs: a whole number from 1 to 16"),
    ([{**G9, "gpuModel": "MI300X"}], "gpuready:extraInstanceTypes[0]", "GPU model 'MI300X' is not one of"),
    ([{**G9, "memoryGiB": 2}], "gpuready:extraInstanceTypes[0]", "at least 1 GiB per vCPU"),
    ([{k: v for k, v in G9.items() if k != "vcpus"}], "gpuready:extraInstanceTypes[0].vcpus", "required"),
    ([{**G9, "gpus": "one"}], "gpuready:extraInstanceTypes[0].gpus", "must be a int"),
    ([{**G9, "cores": 4}], "gpuready:extraInstanceTypes[0].cores", "unknown key"),
    ([{**G9, "name": "g6.xlarge"}], "gpuready:extraInstanceTypes[0].name", "already in gpuready's catalog"),
    ([G9, G9], "gpuready:extraInstanceTypes[1].name", "listed twice"),
])
def test_declared_types_are_checked_like_catalog_rows(tmp_path, capsys, rows, key, phrase):
    code, _ = _plan(tmp_path, "aws-batch", {"gpuready:instanceTypes": ["g9.xlarge"],
                                            "gpuready:extraInstanceTypes": rows})
    err = capsys.readouterr().err
    assert code == 2 and key in err and phrase in err, err


@pytest.mark.parametrize("stack,changes,phrase", [
    ("aks", {"gpuready:vmSize": "Standard_ND96isr_MI300X_v5"}, "its GPUs are AMD Instinct MI300X's, not NVIDIA's"),
    ("aws-batch", {"gpuready:instanceTypes": ["g4ad.xlarge"]}, "its accelerators are AMD Radeon Pro V520, not NVIDIA GPUs"),
    ("aws-batch", {"gpuready:instanceTypes": ["g6f.xlarge"]}, "a fractional GPU type"),
    ("aws-batch", {"gpuready:instanceTypes": ["g5g.xlarge"]}, "arm64 (Graviton) GPU types"),
    ("aws-batch", {"gpuready:instanceTypes": ["g5g.xlarge", "g6.xlarge"]}, "one AMI cannot boot both"),
    ("eks", {"gpuready:instanceTypes": ["g5g.xlarge"]}, "not x86_64 instances, which AL2023_x86_64_NVIDIA needs"),
    ("eks", {"gpuready:instanceTypes": ["p6e-gb200.36xlarge"]}, "not x86_64 instances, which AL2023_x86_64_NVIDIA"),
    ("eks", {"gpuready:instanceTypes": ["p6e-gb200.36xlarge"], "gpuready:amiType": "AL2023_ARM_64_NVIDIA"},
     "p6e-gb200.36xlarge is sold only inside UltraServers"),
])
def test_types_gpuready_cannot_run_say_why(tmp_path, capsys, stack, changes, phrase):
    code, _ = _plan(tmp_path, stack, changes)
    err = capsys.readouterr().err
    assert code == 2 and phrase in err, err


def test_arm64_gpu_types_plan_on_the_arm64_eks_ami(tmp_path, capsys):
    code, _ = _plan(tmp_path, "eks", {"gpuready:instanceTypes": ["g5g.xlarge"],
                                      "gpuready:amiType": "AL2023_ARM_64_NVIDIA", **FOUR_GPU_TEAMS})
    assert code == 0, capsys.readouterr().err
