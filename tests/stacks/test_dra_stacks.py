"""``gpuready:install: dra`` on each Kubernetes reference stack, through ``gpuready plan`` as a user runs it: the DRA
driver's release shown with its chart and version, the output the smoke reads, and every mistake refused at preview
with one line naming the key, the value and the fix (exit 2, no traceback)."""

from __future__ import annotations

import pytest
import yaml

from gpuready.cli import main
from tests.conftest import ROOT

CHART = "chart: oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu 0.4.1"
VERSIONED = {"eks": {}, "gke": {"gpuready:kubernetesVersion": "1.34"}, "aks": {"gpuready:kubernetesVersion": "1.34"}}
"""What each platform needs besides ``install: dra``: EKS pins 1.34 by default; GKE and AKS leave it to the
platform unless stated."""


def _plan(tmp_path, capsys, stack: str, *args: str, **config) -> tuple[int, str, str]:
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"].update({"gpuready:apiAllowedCidrs": ["198.51.100.0/24"], **config})
    data["config"] = {k: v for k, v in data["config"].items() if v is not None}
    path = tmp_path / f"Pulumi.{stack}-dra.yaml"
    path.write_text(yaml.safe_dump(data))
    code = main(["plan", "--stack-file", str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("stack", sorted(VERSIONED))
def test_plan_shows_the_dra_driver_and_passes_the_policies(tmp_path, capsys, stack):
    code, out, err = _plan(tmp_path, capsys, stack, **{"gpuready:install": "dra", **VERSIONED[stack]})
    assert code == 0, err
    assert CHART in out and "GPUs: claimed through DRA: ResourceClaims of DeviceClass gpu.nvidia.com" in out
    assert "chart: nvidia-device-plugin" not in out or "devicePlugin.enabled: False" in out
    assert "rules, no violations" in out or " 0 mandatory " in out.split("Policies:")[1].split("\n")[0]


def test_the_stack_tells_the_smoke_to_claim_gpus(tmp_path, capsys):
    import json

    code, out, err = _plan(tmp_path, capsys, "gke", "--json", **{"gpuready:install": "dra", **VERSIONED["gke"]})
    plan = json.loads(out)
    assert code == 0 and plan["outputs"]["gpuDeviceClass"] == "gpu.nvidia.com"
    assert plan["outputs"]["gpuNodeLabels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    code, out, _ = _plan(tmp_path, capsys, "gke", "--json")
    assert "gpuDeviceClass" not in json.loads(out)["outputs"]


@pytest.mark.parametrize("stack,config,line", [
    ("eks", {"gpuready:kubernetesVersion": "1.33"},
     "gpuready:kubernetesVersion = '1.33': install 'dra' needs Kubernetes 1.34.2 or later"),
    ("aks", {"gpuready:kubernetesVersion": "1.34.1"},
     "gpuready:kubernetesVersion = '1.34.1': install 'dra' needs Kubernetes 1.34.2 or later"),
    ("gke", {}, "gpuready:kubernetesVersion = None: install 'dra' needs Kubernetes 1.34.2 or later, and GKE's REGULAR "
     "channel picks a new cluster's version, which preview cannot know. Fix: set the cluster's version, 1.34 or later"),
    ("aks", {}, "gpuready:kubernetesVersion = None: install 'dra' needs Kubernetes 1.34.2 or later, and AKS gives a "
     "new cluster its default version"),
    ("aks", {"gpuready:existingCluster": "prod", "gpuready:kubeconfig": "apiVersion: v1", "gpuready:apiAllowedCidrs":
             None}, "gpuready:kubernetesVersion = None: install 'dra' needs Kubernetes 1.34.2 or later, and the "
     "version is not stated"),
    ("eks", {"gpuready:amiType": "BOTTLEROCKET_x86_64_NVIDIA"},
     "gpuready:install = 'dra': eks/BOTTLEROCKET_x86_64_NVIDIA runs its own device plugin"),
    ("eks", {"gpuready:autoscaler": "auto-mode"}, "gpuready:install = ['install: dra']: EKS Auto Mode runs its own"),
    ("gke", {"gpuready:kubernetesVersion": "1.34", "gpuready:gpuSharing": {"strategy": "TIME_SHARING",
                                                                           "maxClientsPerGpu": 2}},
     "gpuready:gpuSharing = 'TIME_SHARING': GKE's GPU sharing needs GKE's device plugin, which install 'dra' turns "
     "off"),
    ("gke", {"gpuready:kubernetesVersion": "1.34", "gpuready:gpuDriverVersion": "INSTALLATION_DISABLED"},
     "gpuready:install = 'dra': gke/driver-disabled ships no NVIDIA driver"),
    ("eks", {"gpuready:timeSlicingReplicas": 4}, "gpuready:timeSlicingReplicas = 4: not offered with install 'dra'"),
])
def test_a_dra_stack_that_cannot_work_is_refused_in_one_line(tmp_path, capsys, stack, config, line):
    code, out, err = _plan(tmp_path, capsys, stack, **{"gpuready:install": "dra", **config})
    assert code == 2, out
    assert line in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_compute_domains_without_dra_are_refused(tmp_path, capsys):
    code, _, err = _plan(tmp_path, capsys, "eks", **{"gpuready:computeDomains": True})
    assert code == 2 and "gpuready:computeDomains = True: ComputeDomains are the DRA driver's, and install is " \
        "device-plugin. Fix: set install 'dra' too, or gpuready:computeDomains false" in err


@pytest.mark.parametrize("install,mapped", [("dra", True), ("device-plugin", False)])
def test_the_stacks_kueue_charges_gpu_claims_only_with_dra(install, mapped):
    """The eks stack's teams: Kueue's release carries the DeviceClass mapping exactly when the GPUs are DRA's."""
    from tests.gpuready.policy.helpers import render_stack

    rendering = render_stack("eks", **{"gpuready:install": install})
    (kueue,) = [r for r in rendering.of_type("kubernetes:helm.sh/v3:Release") if r.name == "eks-kueue"]
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    mappings = (config.get("resources") or {}).get("deviceClassMappings")
    assert mappings == ([{"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}] if mapped else None)


@pytest.mark.parametrize("domains", [True, False])
def test_the_stacks_queues_admit_a_compute_domain_gang_only_with_its_channels_mapped_and_covered(domains):
    """The eks stack's teams with ComputeDomains: Kueue's release maps the channels' DeviceClass too, every queue
    and the Cohort cover what it maps, and the multi-node smoke's gang (GPUs and one channel a pod) is admitted to
    the operators' queue by Kueue's arithmetic (tests/kueue_sim.py) over the objects the stack renders; without
    ComputeDomains nothing but the GPUs is mapped or covered."""
    from gpuready_components.k8s_gpu import facts
    from tests.components.k8s_gpu.test_kueue_channels import gang_claims
    from tests.gpuready.policy.helpers import render_stack
    from tests.kueue_sim import Kueue

    rendering = render_stack("eks", **{"gpuready:install": "dra", "gpuready:computeDomains": domains})
    (release,) = [r for r in rendering.of_type("kubernetes:helm.sh/v3:Release") if r.name == "eks-kueue"]
    config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    mapped = [m["name"] for m in config["resources"]["deviceClassMappings"]]
    assert mapped == [facts.GPU_RESOURCE, *([facts.IMEX_CHANNEL_RESOURCE] if domains else [])]
    objects = [r.inputs for r in rendering.resources if r.type.startswith(f"kubernetes:{facts.KUEUE_API}:")]
    queues = [o for o in objects if o["kind"] in ("ClusterQueue", "Cohort")]
    assert len(queues) == 4
    for queue in queues:
        assert set(mapped) <= set(queue["spec"]["resourceGroups"][0]["coveredResources"]), queue["metadata"]["name"]
        assert (facts.IMEX_CHANNEL_RESOURCE in queue["spec"]["resourceGroups"][0]["coveredResources"]) == domains
    flavor = next(o for o in objects if o["kind"] == "ResourceFlavor")
    gang = Kueue(objects, config).submit("gang", facts.OPERATORS_NAMESPACE, facts.OPERATORS_QUEUE, {}, count=2,
                                         claims=gang_claims(1, namespace=facts.OPERATORS_NAMESPACE),
                                         node_selector=flavor["spec"]["nodeLabels"])
    assert gang.admitted == domains, gang.message
    if not domains:
        assert f"DeviceClass {facts.DRA_COMPUTE_DOMAIN_CLASS} is not mapped" in gang.message
