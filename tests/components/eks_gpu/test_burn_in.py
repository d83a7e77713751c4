"""Burn-in on EKS: GPU nodes boot with the burn-in taint, the scalers treat it as a startup taint (a pending pod
still adds a node, and waits for the burn-in), and the smoke pod is not told to tolerate it."""

from __future__ import annotations

import pytest

from gpuready_components.eks_gpu import AutoscalerArgs
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.k8s_gpu.scale_from_zero import ScaleGroup, check, template_tags
from gpuready_components.k8s_gpu import BurnInArgs, GpuSoftwareOptions
from gpuready_components.eks_gpu.facts import NODES
from gpuready_components.k8s_gpu.facts import BURN_IN_TAINT
from tests.conftest import one

from .helpers import NODE_GROUP, RELEASE, build

SOFTWARE = GpuSoftwareOptions(burn_in=BurnInArgs(probe_files={"core.py": "print()\n"}))
GPU = NODES.taint
TOLERATE_GPU = [{"key": GPU.key, "operator": "Exists"}]


def test_gpu_node_groups_boot_tainted_and_cluster_autoscaler_ignores_the_taint(render):
    rendering, eks = build(render, software=SOFTWARE)
    taints = one(rendering, NODE_GROUP, "ml-gpu").inputs["taints"]
    assert {"key": "gpuready.io/burn-in", "value": "pending", "effect": "NO_SCHEDULE"} in taints
    assert one(rendering, NODE_GROUP, "ml-system").inputs.get("taints") is None
    (autoscaler,) = [r for r in rendering.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]
    assert autoscaler.inputs["values"]["extraArgs"]["startup-taint"] == "gpuready.io/burn-in"
    # The smoke pod tolerates what gpuNodeTaints lists: not burn-in, so it waits for an admitted node.
    assert eks.outputs["gpuNodeTaints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert eks.capacity.autoscaler == sf.CLUSTER_AUTOSCALER


@pytest.mark.parametrize("mode", ["karpenter", "auto-mode"])
def test_node_pools_declare_it_as_a_startup_taint(render, mode):
    software = SOFTWARE if mode == "karpenter" else GpuSoftwareOptions(
        gpu_feature_discovery=False, burn_in=SOFTWARE.burn_in)
    rendering, _ = build(render, software=software, autoscaler=AutoscalerArgs(mode=mode))
    (pool,) = rendering.of_type("kubernetes:karpenter.sh/v1:NodePool")
    spec = pool.inputs["spec"]["template"]["spec"]
    assert spec["startupTaints"] == [{"key": "gpuready.io/burn-in", "value": "pending", "effect": "NoSchedule"}]
    assert all(t["key"] != "gpuready.io/burn-in" for t in spec["taints"])


def test_a_group_tainted_for_burn_in_scales_up_only_when_the_scaler_knows_it_is_a_startup_taint():
    labels = {"nvidia.com/gpu.present": "true"}
    tags = template_tags(1, labels, [GPU, BURN_IN_TAINT])  # the taint in the template, as a careless setup would
    knows = ScaleGroup("gpu", ("g6.xlarge",), labels, (GPU, BURN_IN_TAINT), tags, startup_taints=(BURN_IN_TAINT,))
    assert check(sf.CLUSTER_AUTOSCALER, [knows], labels, TOLERATE_GPU, 1).ok
    unaware = ScaleGroup("gpu", ("g6.xlarge",), labels, (GPU, BURN_IN_TAINT), tags)
    result = check(sf.CLUSTER_AUTOSCALER, [unaware], labels, TOLERATE_GPU, 1)
    assert not result.ok and "fits no node" in " ".join(result.problems)
