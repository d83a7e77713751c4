"""The eks reference stack: renders offline, exports what the smoke test reads, reads its secrets as secrets."""

from __future__ import annotations

import json

import pytest

from components.errors import ConfigError
from gpuready.cli import main
from gpuready.plan.render import render
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
    assert set(groups) == {"eks-gpu", "eks-system"}
    ng = groups["eks-gpu"]
    private = {s.name + "-id" for s in rendering.of_type("aws:ec2/subnet:Subnet") if "private" in s.name}
    assert set(ng.inputs["subnetIds"]) == private
    assert ng.inputs["labels"] == {"workload": "gpu", "nvidia.com/gpu.present": "true"}
    (cluster,) = rendering.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["publicAccessCidrs"] == ["0.0.0.0/0"]


def test_reference_stack_exports_what_gpuready_smoke_reads(rendering):
    out = rendering.outputs
    assert out["platform"] == "eks"
    assert out["gpuTaint"] == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert out["gpuNodeLabels"]["nvidia.com/gpu.present"] == "true"
    assert out["gpuModels"] == ["L4"] and out["maxGpusPerNode"] == 4 and out["maxGpus"] == 16
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
    (release,) = rendering.of_type("kubernetes:helm.sh/v3:Release")
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
    assert "total: 16 GPUs (L4), $18.41/h" in out
