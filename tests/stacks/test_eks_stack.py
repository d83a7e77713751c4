"""The eks reference stack: renders offline, exports what the smoke test reads, reads its secrets as secrets."""

from __future__ import annotations

import json

import pytest

from gpuready_components.k8s_gpu.facts import KUEUE_CHART

from gpuready_components.errors import ConfigError
from gpuready.cli import main
from gpuready.plan.render import ec2_id, mock_id, render
from gpuready.project import find_project, load_stack_config
from tests.conftest import ROOT, non_camel_keys


def _render(**changes):
    project = find_project(ROOT)
    config = load_stack_config(project.stack_file("eks"), project.name)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value if isinstance(value, str) else json.dumps(value)
    return render(project.main, project.name, "eks", config)


@pytest.fixture(scope="module")
def rendering():
    return _render()


def test_reference_stack_builds_network_cluster_node_group_and_software(rendering):
    types = [r.type for r in rendering.resources]
    for token in ("gpuready:aws:Network", "gpuready:aws:EksGpuCluster", "gpuready:k8s:GpuSoftware",
                  "aws:eks/cluster:Cluster"):
        assert types.count(token) == 1, token
    groups = {r.name: r for r in rendering.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert set(groups) == {"eks-gpu", "eks-gpu-4x", "eks-system"}  # one GPU group per GPU count
    assert [groups[g].inputs["instanceTypes"] for g in ("eks-gpu", "eks-gpu-4x")] == [
        ["g6.xlarge", "g6.2xlarge"], ["g6.12xlarge"]]
    ng = groups["eks-gpu"]
    private = {mock_id(s.type, s.name) for s in rendering.of_type("aws:ec2/subnet:Subnet") if "private" in s.name}
    assert set(ng.inputs["subnetIds"]) == private
    assert ng.inputs["labels"] == {"workload": "gpu", "nvidia.com/gpu.present": "true",
                                   "k8s.amazonaws.com/accelerator": "nvidia-l4",
                                   "gpuready.io/gpu-pool": "gpu"}  # the stack's teams: its flavor selects it
    (cluster,) = rendering.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["publicAccessCidrs"] == ["0.0.0.0/0"]


def test_reference_stack_exports_what_gpuready_smoke_reads(rendering):
    out = rendering.outputs
    assert out["platform"] == "eks"
    assert out["gpuTaint"] == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert out["gpuNodeLabels"]["nvidia.com/gpu.present"] == "true"
    assert out["gpuModels"] == ["L4"] and out["maxGpusPerNode"] == 4 and out["maxGpus"] == 20  # 4 x 1 + 4 x 4
    assert out["nodeGroupName"] == "eks-gpu" and out["nodeGroupNames"] == ["eks-gpu", "eks-gpu-4x"]
    assert out["autoscaler"] == "cluster-autoscaler"
    assert out["gpuNamespace"] == "nvidia-gpu"
    assert json.loads(out["kubeconfig"])["current-context"] == out["clusterName"]


def test_every_input_key_is_camel_case(rendering):
    for resource in rendering.resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_existing_cluster_with_secret_kubeconfig_and_the_operator():
    rendering = _render(**{"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1",
                           "gpuready:install": "gpu-operator", "gpuready:apiAllowedCidrs": None})
    assert not rendering.of_type("aws:eks/cluster:Cluster")
    (provider,) = rendering.of_type("pulumi:providers:kubernetes")
    assert provider.secret_inputs == {"kubeconfig"}
    (release,) = [r for r in rendering.of_type("kubernetes:helm.sh/v3:Release") if r.name != "eks-kueue"]
    assert release.inputs["chart"] == "gpu-operator" and release.inputs["version"] == "v26.7.0"


@pytest.mark.parametrize("changes,field", [
    ({"gpuready:existingCluster": "prod"}, "gpuready:kubeconfig"),
    ({"gpuready:kubeconfig": "x"}, "gpuready:kubeconfig"),
    ({"gpuready:mig": {"strategy": "single", "profile": "x"}}, "gpuready:mig.profile"),
    ({"gpuready:instanceType": ["g6.xlarge"]}, "gpuready:instanceType"),
])
def test_config_mistakes_name_the_key(changes, field):
    with pytest.raises(ConfigError) as error:
        _render(**changes)
    assert error.value.field == field


def test_plan_cli_shows_node_group_releases_and_capacity(capsys):
    assert main(["plan", "--stack", "eks"]) == 0
    out = capsys.readouterr().out
    assert "taints: nvidia.com/gpu=true:NO_SCHEDULE" in out and "AMI: AL2023_x86_64_NVIDIA" in out
    assert "chart: nvidia-device-plugin 0.20.0" in out and "chart: dcgm-exporter 4.8.2" in out
    assert "installs device-plugin" in out and "the node image ships driver, toolkit" in out
    assert "total: 20 GPUs (L4), $22.32/h" in out


def test_plan_shows_what_cluster_autoscaler_adds_from_zero(capsys):
    assert main(["plan", "--stack", "eks"]) == 0
    out = capsys.readouterr().out
    assert ("scale from zero: cluster-autoscaler adds eks-gpu (g6.xlarge, 1 GPU) or eks-gpu-4x (g6.12xlarge, "
            "4 GPUs)") in out
    assert "chart: cluster-autoscaler 9.59.0" in out
    assert main(["plan", "--stack", "eks", "--json"]) == 0
    scaling = json.loads(capsys.readouterr().out)["scale_from_zero"]
    assert scaling["ok"] and scaling["fits"] == {"1": ["eks-gpu", "eks-gpu-4x"], "4": ["eks-gpu-4x"]}


def test_existing_cluster_relies_on_its_own_autoscaler_and_plan_warns(tmp_path, capsys):
    stack = (ROOT / "stacks" / "Pulumi.eks.yaml").read_text().replace(
        "  gpuready:apiAllowedCidrs:\n    - 0.0.0.0/0\n",
        "  gpuready:existingCluster: prod\n  gpuready:kubeconfig: 'apiVersion: v1'\n")
    path = tmp_path / "Pulumi.eks-existing.yaml"
    path.write_text(stack)
    assert main(["plan", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "scale from zero: no autoscaler installed" in out and "warning: GPU node groups at minSize 0 rely" in out
    assert "cluster-autoscaler 9.59.0" not in out


def test_existing_cluster_with_cluster_autoscaler_needs_its_version():
    existing = {"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1",
                "gpuready:apiAllowedCidrs": None, "gpuready:autoscaler": "cluster-autoscaler"}
    with pytest.raises(ConfigError, match="gpuready:kubernetesVersion"):
        _render(**existing)
    rendering = _render(**existing, **{"gpuready:kubernetesVersion": "1.33"})
    (release,) = [r for r in rendering.of_type("kubernetes:helm.sh/v3:Release")
                  if r.inputs["chart"] == "cluster-autoscaler"]
    assert release.inputs["values"]["image"] == {"tag": "v1.33.6"}


def test_no_autoscaler_on_a_new_cluster_at_min_size_0_is_refused():
    with pytest.raises(ConfigError, match="gpuready:autoscaler") as error:
        _render(**{"gpuready:autoscaler": "none"})
    assert "wait forever" in str(error.value)
    assert _render(**{"gpuready:autoscaler": "none", "gpuready:minSize": 1}).outputs["autoscaler"] == "none"


def test_auto_mode_variant_renders_a_node_pool_and_no_nvidia_plugin(tmp_path, capsys):
    rendering = _render(**{"gpuready:autoscaler": "auto-mode"})
    assert not rendering.of_type("aws:eks/nodeGroup:NodeGroup")
    (pool,) = rendering.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert pool.inputs["spec"]["limits"] == {"nvidia.com/gpu": "16"}
    assert sorted(r.inputs["chart"] for r in rendering.of_type("kubernetes:helm.sh/v3:Release")) == [
        "dcgm-exporter", KUEUE_CHART.name]
    assert rendering.outputs["nodeGroupName"] == "gpuready-gpu" and rendering.outputs["autoscaler"] == "auto-mode"
    path = tmp_path / "Pulumi.eks-auto.yaml"
    path.write_text((ROOT / "stacks" / "Pulumi.eks.yaml").read_text() + "  gpuready:autoscaler: auto-mode\n")
    assert main(["plan", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("scale from zero: auto-mode adds gpuready-gpu (g6.xlarge, 1 GPU; g6.2xlarge, 1 GPU; g6.12xlarge, "
            "4 GPUs)") in out
    assert "total: 16 GPUs (L4)" in out and " 0 mandatory " in out and "gpu-scale-from-zero" not in out


def test_auto_mode_is_refused_for_an_existing_cluster_and_with_the_operator():
    with pytest.raises(ConfigError, match="when the cluster is created"):
        _render(**{"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1",
                   "gpuready:apiAllowedCidrs": None, "gpuready:autoscaler": "auto-mode"})
    with pytest.raises(ConfigError, match="its own NVIDIA device plugin"):
        _render(**{"gpuready:autoscaler": "auto-mode", "gpuready:install": "gpu-operator"})


def test_karpenter_variant_renders_its_controller_queue_and_gpu_node_pool(tmp_path, capsys):
    rendering = _render(**{"gpuready:autoscaler": "karpenter"})
    assert [r.name for r in rendering.of_type("aws:eks/nodeGroup:NodeGroup")] == ["eks-system"]
    assert len(rendering.of_type("aws:cloudwatch/eventRule:EventRule")) == 5
    (pool,) = rendering.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert pool.inputs["spec"]["limits"] == {"nvidia.com/gpu": "16"}
    assert rendering.outputs["autoscaler"] == "karpenter" and rendering.outputs["nodeGroupName"] == "gpuready-gpu"
    path = tmp_path / "Pulumi.eks-karpenter.yaml"
    path.write_text((ROOT / "stacks" / "Pulumi.eks.yaml").read_text() + "  gpuready:autoscaler: karpenter\n")
    assert main(["plan", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "scale from zero: karpenter adds gpuready-gpu (g6.xlarge, 1 GPU; g6.2xlarge, 1 GPU; g6.12xlarge, " \
           "4 GPUs)" in out
    assert "chart: oci://public.ecr.aws/karpenter/karpenter 1.13.0" in out and " 0 mandatory " in out


EFA = {"gpuready:efa": True, "gpuready:instanceTypes": ["p4d.24xlarge"]}


def test_efa_variant_puts_the_gpu_nodes_in_one_private_subnet_and_exports_the_fabric(tmp_path, capsys):
    rendering = _render(**EFA)
    assert rendering.outputs["gpuFabric"] == "efa"
    assert rendering.outputs["gpuEfaInterfaces"] == 4  # p4d.24xlarge: what the multi-node pods ask for
    assert "gpuFabric" not in _render().outputs  # TCP sockets: the output is absent
    (ng,) = [r for r in rendering.of_type("aws:eks/nodeGroup:NodeGroup") if r.name == "eks-gpu"]
    private = sorted(mock_id(s.type, s.name) for s in rendering.of_type("aws:ec2/subnet:Subnet") if "private" in s.name)
    assert len(ng.inputs["subnetIds"]) == 1 and ng.inputs["subnetIds"][0] in private
    (sg,) = rendering.of_type("aws:ec2/securityGroup:SecurityGroup")
    assert sg.inputs["vpcId"] == ec2_id("vpc", "eks")  # the cluster's VPC, as EKS reports it (plan's stand-in)
    path = tmp_path / "Pulumi.eks-efa.yaml"
    path.write_text((ROOT / "stacks" / "Pulumi.eks.yaml").read_text().replace(
        "    - g6.xlarge\n    - g6.2xlarge\n    - g6.12xlarge\n", "    - p4d.24xlarge\n") + "  gpuready:efa: true\n")
    assert main(["plan", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "chart: aws-efa-k8s-device-plugin v0.5.30" in out and " 0 mandatory " in out


@pytest.mark.parametrize("changes,field,words", [
    ({"gpuready:efa": True}, "gpuready:instanceTypes", "no EFA"),
    ({**EFA, "gpuready:autoscaler": "karpenter"}, "gpuready:efa", "cluster-autoscaler"),
])
def test_efa_mistakes_name_the_key(changes, field, words):
    with pytest.raises(ConfigError) as error:
        _render(**changes)
    assert error.value.field == field and words in str(error.value)


def test_burn_in_ships_the_installed_probe_and_names_its_keys():
    from importlib import resources

    rendering = _render(**{"gpuready:burnIn": True, "gpuready:burnInDcgmLevel": 1})
    (config_map,) = [r for r in rendering.of_type("kubernetes:core/v1:ConfigMap")
                     if r.inputs["metadata"]["name"] == "gpuready-burn-in"]
    assert config_map.inputs["data"]["core.py"] == resources.files("gpuready.probe").joinpath("core.py").read_text()
    (ds,) = rendering.of_type("kubernetes:apps/v1:DaemonSet")
    assert "dcgmi diag -r 1 " in ds.inputs["spec"]["template"]["spec"]["initContainers"][1]["command"][-1]
    with pytest.raises(ConfigError) as error:
        _render(**{"gpuready:burnInDcgmLevel": 7, "gpuready:burnIn": True})
    assert error.value.field == "gpuready:burnInDcgmLevel"


def test_the_gpu_node_groups_repair_as_the_stack_file_says():
    """``gpuready:repair``: the limits reach every GPU node group's nodeRepairConfig; off turns repair off there."""
    tuned = _render(**{"gpuready:repair": {"maxParallel": 2, "maxUnhealthyPercent": 10, "waitMinutes": 30}})
    groups = [g for g in tuned.of_type("aws:eks/nodeGroup:NodeGroup") if "nodeRepairConfig" in g.inputs]
    assert len(groups) == 2
    for group in groups:
        config = group.inputs["nodeRepairConfig"]
        assert (config["enabled"], config["maxParallelNodesRepairedCount"],
                config["maxUnhealthyNodeThresholdPercentage"]) == (True, 2, 10)
        assert {o["minRepairWaitTimeMins"] for o in config["nodeRepairConfigOverrides"]} == {30}
    off = _render(**{"gpuready:repair": {"enabled": False}})
    assert [g.inputs["nodeRepairConfig"] for g in off.of_type("aws:eks/nodeGroup:NodeGroup")
            if "nodeRepairConfig" in g.inputs] == [{"enabled": False}] * 2


def test_repair_limits_eks_would_refuse_name_the_stack_key():
    with pytest.raises(ConfigError) as error:
        _render(**{"gpuready:repair": {"maxParallel": 0}})
    assert str(error.value) == "gpuready:repair.maxParallel = 0: EKS takes 1 or more. Fix: set a whole number of 1 or more"
