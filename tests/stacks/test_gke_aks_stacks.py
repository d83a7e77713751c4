"""The gke and aks reference stacks: render offline, export what the smoke test reads, import only their own SDKs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpuready_components.k8s_gpu.facts import KUEUE_CHART

from gpuready_components.errors import ConfigError
from gpuready.cli import main
from gpuready.plan.render import render
from gpuready.project import find_project, load_stack_config
from tests.conftest import ROOT, non_camel_keys


def _render(stack: str, **changes):
    project = find_project(ROOT)
    config = load_stack_config(project.stack_file(stack), project.name)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value if isinstance(value, str) else json.dumps(value)
    return render(project.main, project.name, stack, config)


@pytest.mark.parametrize("stack,pool_type,pool_key", [
    ("gke", "gcp:container/nodePool:NodePool", "nodePoolName"),
    ("aks", "azure-native:containerservice:AgentPool", "nodePoolName"),
])
def test_reference_stack_renders_and_exports_what_gpuready_smoke_reads(stack, pool_type, pool_key):
    rendering = _render(stack)
    out = rendering.outputs
    assert out["platform"] == stack and pool_key in out
    assert json.loads(out["kubeconfig"])["current-context"] == out["clusterName"]
    assert out["gpuTaint"]["effect"] == "NoSchedule"
    assert rendering.of_type(pool_type)
    for resource in rendering.resources:
        assert list(non_camel_keys(resource.inputs)) == [], resource.urn


def test_gke_reference_stack_uses_gke_driver_and_managed_dcgm():
    out = _render("gke").outputs
    assert out["gpuModels"] == ["L4"] and out["maxGpusPerNode"] == 2 and out["maxGpus"] == 8
    assert out["gpuNodeLabels"] == {"workload": "gpu", "cloud.google.com/gke-accelerator": "nvidia-l4"}
    assert "gpuNamespace" not in out  # GKE provides everything: no NVIDIA chart


def test_aks_reference_stack_installs_device_plugin_and_exporter():
    rendering = _render("aks")
    assert sorted(r.inputs["chart"] for r in rendering.of_type("kubernetes:helm.sh/v3:Release")) == [
        "dcgm-exporter", "nvidia-device-plugin", KUEUE_CHART.name]
    out = rendering.outputs
    assert out["gpuTaint"] == {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
    assert out["gpuModels"] == ["T4"] and out["maxGpus"] == 4 and out["gpuNamespace"] == "nvidia-gpu"


def test_gke_operator_mode_from_config():
    rendering = _render("gke", **{"gpuready:install": "gpu-operator", "gpuready:gpuDriverVersion": None})
    (release,) = [r for r in rendering.of_type("kubernetes:helm.sh/v3:Release") if r.name != "gke-kueue"]
    assert release.inputs["chart"] == "gpu-operator"


def test_plan_passes_the_gke_operator_on_gkes_own_driver(tmp_path, capsys):
    """The README's variant: GKE installs the driver, the GPU Operator the rest, MIG by the operator's manager."""
    import yaml

    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.gke.yaml").read_text())
    stack["config"].update({"gpuready:install": "gpu-operator", "gpuready:gpuDriverVersion": "LATEST",
                            "gpuready:machineType": "a2-highgpu-1g", "gpuready:mig": {"config": "all-1g.5gb"},
                            "gpuready:apiAllowedCidrs": ["198.51.100.0/24"]})
    path = tmp_path / "Pulumi.gke-operator.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert main(["plan", "--stack-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "driver: LATEST" in out and "nvidia.com/mig.config=all-1g.5gb" in out
    assert "priority classes: system-node-critical, system-cluster-critical" in out and "no violations" in out


@pytest.mark.parametrize("stack,changes,field", [
    ("gke", {"gpuready:machineType": "g2-standard-8", "gpuready:accelerator": "nvidia-tesla-t4"},
     "gpuready:accelerator"),
    ("gke", {"gpuready:location": None}, "gpuready:location"),
    ("gke", {"gpuready:gpuSharing": {"strategy": "MPS", "clients": 4}}, "gpuready:gpuSharing.clients"),
    ("aks", {"gpuready:vmSize": "Standard_D8s_v5"}, "gpuready:vmSize"),
    ("aks", {"gpuready:resourceGroup": "x"}, "gpuready:resourceGroup"),
])
def test_config_mistakes_name_the_field(stack, changes, field):
    with pytest.raises(ConfigError) as error:
        _render(stack, **changes)
    assert error.value.field == field


NEVER_IN_A_PLAN = ("boto3", "kubernetes", "jsonschema", "gpuready.smoke", "gpuready.refresh", "gpuready.repair",
                   "gpuready.probe")
"""What no plan needs: the AWS and Kubernetes API clients, the smoke test, catalog refresh, repair and probe code."""


def _others(*packages: str) -> tuple[str, ...]:
    """The validation and component modules of other platforms' component packages."""
    return tuple(f"gpuready_components.{p}.{m}" for p in packages for m in ("validation", "component"))


@pytest.mark.parametrize("stack,absent", [
    ("gke", ("pulumi_aws", "pulumi_azure_native", *_others("aks_gpu", "batch_gpu", "eks_gpu"))),
    ("aks", ("pulumi_aws", "pulumi_gcp", *_others("batch_gpu", "eks_gpu", "gke_gpu"))),
    ("eks", ("pulumi_gcp", "pulumi_azure_native", *_others("aks_gpu", "batch_gpu", "gke_gpu"))),
    ("aws-batch", ("pulumi_gcp", "pulumi_azure_native", "pulumi_kubernetes",
                   *_others("aks_gpu", "eks_gpu", "gke_gpu", "k8s_gpu"))),
])
def test_a_plan_imports_only_its_platforms_sdk(stack, absent):
    """A plan loads its own platform's SDK and modules, not another's (nor what no plan uses): it costs little more
    than loading the classes it declares (bench/plan_bench.py)."""
    absent = (*absent, *NEVER_IN_A_PLAN)
    code = ("import sys, io, contextlib\nfrom gpuready.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['plan', '--stack', {stack!r}]) == 0\n"
            f"print(sorted(m for m in {absent!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_plan_cli_for_gke_and_aks(capsys):
    assert main(["plan", "--stack", "gke"]) == 0
    out = capsys.readouterr().out
    assert "GPUs: 2x nvidia-l4 (L4 22.35 GiB)" in out and "driver: LATEST" in out and "managed DCGM: True" in out
    assert "total: 8 GPUs (L4), $8.00/h" in out
    assert main(["plan", "--stack", "aks"]) == 0
    out = capsys.readouterr().out
    assert "taints: sku=gpu:NoSchedule" in out and "GPU driver: Install" in out
    assert "total: 4 GPUs (T4), $4.82/h" in out


def test_aks_deployer_and_admin_groups_get_cluster_admin_offline(capsys):
    role = "azure-native:authorization:RoleAssignment"
    (grant,) = _render("aks").of_type(role)
    assert grant.name == "aks-deployer-admin" and grant.inputs["principalType"] == "User"
    group = "6f1c2a5e-1111-4222-8333-944455556666"
    rendering = _render("aks", **{"gpuready:deployerAdmin": False, "gpuready:adminGroupObjectIds": [group]})
    (grant,) = rendering.of_type(role)
    assert (grant.inputs["principalId"], grant.inputs["principalType"]) == (group, "Group")
    (cluster,) = rendering.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["aadProfile"]["adminGroupObjectIDs"] == [group]
    (grant,) = _render("aks", **{"gpuready:deployerPrincipalType": "ServicePrincipal"}).of_type(role)
    assert grant.inputs["principalType"] == "ServicePrincipal"
    assert main(["plan", "--stack", "aks"]) == 0
    assert "role: Azure Kubernetes Service RBAC Cluster Admin" in capsys.readouterr().out


def test_gke_private_nodes_get_cloud_nat_on_the_network_the_stack_creates(capsys):
    nat = "gcp:compute/routerNat:RouterNat"
    rendering = _render("gke")
    (subnet,) = rendering.of_type("gcp:compute/subnetwork:Subnetwork")
    (router_nat,) = rendering.of_type(nat)
    assert router_nat.property_dependencies["subnetworks"] == (subnet.urn,)
    yours = {"gpuready:network": {"network": "shared-vpc", "subnetwork": "gpu-nodes"}}
    assert not _render("gke", **yours).of_type(nat)
    (router_nat,) = _render("gke", **yours, **{"gpuready:cloudNat": True}).of_type(nat)
    assert router_nat.inputs["subnetworks"][0]["name"] == \
        "projects/my-gpu-project/regions/us-central1/subnetworks/gpu-nodes"
    assert main(["plan", "--stack", "gke"]) == 0
    assert "internet egress for: gke-subnet" in capsys.readouterr().out
    with pytest.raises(ConfigError) as error:
        _render("gke", **{"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "x",
                          "gpuready:apiAllowedCidrs": None, "gpuready:cloudNat": False})
    assert error.value.field == "gpuready:cloudNat"


STARTUP_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/gpuready-burn-in"


@pytest.mark.parametrize("stack,pool_type", [("gke", "gcp:container/nodePool:NodePool"),
                                             ("aks", "azure-native:containerservice:AgentPool")])
def test_burn_in_taints_the_pool_with_a_startup_taint_the_managed_autoscaler_knows(stack, pool_type):
    """GKE and AKS run the cluster autoscaler themselves (no --startup-taint flag of ours reaches it): the burn-in
    taint carries the autoscaler's startup-taint prefix, so an empty pool still scales up for a pending GPU pod."""
    rendering = _render(stack, **{"gpuready:burnIn": True})
    (pool,) = [r for r in rendering.of_type(pool_type) if r.name.endswith("-gpu")]
    if stack == "gke":
        taints = {(t["key"], t["value"], t["effect"]) for t in pool.inputs["nodeConfig"]["taints"]}
        assert (STARTUP_TAINT, "pending", "NO_SCHEDULE") in taints
    else:
        assert f"{STARTUP_TAINT}=pending:NoSchedule" in pool.inputs["nodeTaints"]
    assert STARTUP_TAINT not in {t["key"] for t in rendering.outputs["gpuNodeTaints"]}  # pods never tolerate it
    (daemonset,) = [r for r in rendering.of_type("kubernetes:apps/v1:DaemonSet")
                    if r.inputs["metadata"]["name"] == "gpuready-burn-in"]
    spec = daemonset.inputs["spec"]["template"]["spec"]
    assert {"key": STARTUP_TAINT, "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    probe = next(c for c in spec["initContainers"] if c["name"] == "probe")
    assert {"name": "BURN_IN_TAINT_KEY", "value": STARTUP_TAINT} in probe["env"]
    driver = [v for v in spec["volumes"] if v["name"] == "driver"]
    if stack == "gke":  # GKE's own driver: mounted from the host, as GKE's device plugin mounts it for GPU pods
        assert driver == [{"name": "driver", "hostPath": {"path": "/home/kubernetes/bin/nvidia", "type": "Directory"}}]
        assert {"name": "driver", "mountPath": "/usr/local/nvidia", "readOnly": True} in probe["volumeMounts"]
        assert rendering.of_type("kubernetes:core/v1:ResourceQuota")  # GKE admits critical pods only under one
    else:  # AKS's driver comes with the NVIDIA container runtime, which mounts it
        assert driver == []
