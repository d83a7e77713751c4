"""Every Helm release of every reference stack and documented variant, rendered from the vendored pinned chart by a
real Helm engine and read as the cluster would: each object against Kubernetes' OpenAPI schema (strict) or its CRD,
every DaemonSet that must reach the GPU nodes against their taints and boot labels, and system-critical pods against
what the platform admits."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator

import jsonschema
import kubernetes_validate
import pytest

from gpuready_components.k8s_gpu.facts import TAINT_EFFECTS_K8S
from gpuready_components import platforms
from gpuready_components.k8s_gpu.facts import Taint
from gpuready_components.k8s_gpu.scheduling import schedulable, selects, tolerates
from gpuready.plan.render import Rendering
from gpuready.policy.gpu import is_gpu_capacity
from tests import helm
from tests.components.k8s_gpu import kueue_schemas
from tests.gpuready.policy.helpers import break_resource, render_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
A100 = {"gpuready:mig": {"strategy": "single", "config": "all-1g.10gb"}}
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "eks": ("eks", {}),
    "eks-gpu-operator": ("eks", {"gpuready:install": "gpu-operator"}),
    "eks-gpu-operator-mig": ("eks", {"gpuready:install": "gpu-operator", "gpuready:instanceTypes": ["p4de.24xlarge"],
                                     **A100}),
    "eks-time-slicing": ("eks", {"gpuready:timeSlicingReplicas": 4}),
    "eks-bottlerocket": ("eks", {"gpuready:amiType": "BOTTLEROCKET_x86_64_NVIDIA"}),
    "eks-karpenter": ("eks", {"gpuready:autoscaler": "karpenter"}),
    "eks-auto-mode": ("eks", {"gpuready:autoscaler": "auto-mode"}),
    "eks-burn-in": ("eks", {"gpuready:burnIn": True}),
    "eks-burn-in-gpu-operator": ("eks", {"gpuready:burnIn": True, "gpuready:install": "gpu-operator"}),
    "eks-efa": ("eks", {"gpuready:burnIn": True, "gpuready:efa": True,
                        "gpuready:instanceTypes": ["p4d.24xlarge", "p4de.24xlarge"]}),
    "eks-dra": ("eks", {"gpuready:install": "dra"}),
    "eks-dra-compute-domains": ("eks", {"gpuready:install": "dra", "gpuready:computeDomains": True,
                                        "gpuready:burnIn": True}),
    "gke-dra": ("gke", {"gpuready:install": "dra", "gpuready:kubernetesVersion": "1.34"}),
    "aks-dra": ("aks", {"gpuready:install": "dra", "gpuready:kubernetesVersion": "1.34", "gpuready:spot": True}),
    "gke": ("gke", {}),
    "gke-dcgm-chart": ("gke", {"gpuready:managedDcgm": False}),
    "gke-gpu-operator-gke-driver": ("gke", {"gpuready:install": "gpu-operator"}),
    "gke-gpu-operator-gke-driver-mig": ("gke", {"gpuready:install": "gpu-operator",
                                                "gpuready:machineType": "a2-highgpu-1g",
                                                "gpuready:nodeLocations": ["us-central1-a"],
                                                "gpuready:mig": {"config": "all-1g.5gb"}}),
    "gke-gpu-operator-own-driver": ("gke", {"gpuready:install": "gpu-operator",
                                            "gpuready:gpuDriverVersion": "INSTALLATION_DISABLED"}),
    "gke-gpu-operator-time-slicing": ("gke", {"gpuready:install": "gpu-operator", "gpuready:timeSlicingReplicas": 4}),
    "aks": ("aks", {}),
    "aks-spot": ("aks", {"gpuready:spot": True}),
    "aks-gpu-operator": ("aks", {"gpuready:install": "gpu-operator"}),
    "aks-gpu-operator-mig": ("aks", {"gpuready:install": "gpu-operator", "gpuready:vmSize": "Standard_NC24ads_A100_v4",
                                     **A100}),
    "aks-time-slicing": ("aks", {"gpuready:timeSlicingReplicas": 4}),
    "gke-burn-in": ("gke", {"gpuready:burnIn": True}),
    "gke-burn-in-gpu-operator": ("gke", {"gpuready:burnIn": True, "gpuready:install": "gpu-operator"}),
    "aks-burn-in": ("aks", {"gpuready:burnIn": True}),
    "aks-burn-in-gpu-operator": ("aks", {"gpuready:burnIn": True, "gpuready:install": "gpu-operator"}),
}
KUBERNETES_VERSION = "1.34.0"
"""The schemas objects are checked against: the default version of a new eks cluster, and in GKE's and AKS's
supported range."""

CRITICAL = {"system-node-critical", "system-cluster-critical"}
NFD_LABELS = {"feature.node.kubernetes.io/pci-10de.present": "true"}
"""What node-feature-discovery's worker labels a node with an NVIDIA PCI device (vendor 10de) with, as both charts
configure it (``sources.pci.deviceLabelFields: [vendor]``)."""
OPERATOR_GPU_LABELS = ({"nvidia.com/gpu.present": "true"}, NFD_LABELS)
"""The GPU Operator labels a node ``nvidia.com/gpu.deploy.<operand>=true`` (its operands' nodeSelector) when it
carries either of these (gpu-operator controllers/state_manager.go, gpuStateLabels)."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
UNMODELLED = "<not modelled>"
"""A label value no selector names: ``Exists`` matches it, ``In`` does not."""
PLATFORM_GPU_NODE = {
    "gke": ({"cloud.google.com/gke-accelerator": UNMODELLED}, [Taint("nvidia.com/gpu", "present", "NoSchedule")]),
    "aks": ({"kubernetes.azure.com/accelerator": "nvidia"}, []),
    "eks": ({}, []),
}
"""Labels (UNMODELLED: a value we do not model, such as the accelerator type) and taints the platform itself puts on
every GPU node: GKE "automatically adds the nvidia.com/gpu=present:NoSchedule taint" and labels the node with its
accelerator (About GPUs in GKE); AKS labels GPU nodes kubernetes.azure.com/accelerator=nvidia (AKS, Use labels)."""


@dataclass
class GpuNode:
    """What a GPU node of one pool or NodePool registers with, before any DaemonSet labels it."""

    pool: str
    labels: dict[str, str]
    taints: list[Taint]


@dataclass
class Workload:
    """A pod template a release installs, where it runs and who makes it."""

    release: str
    kind: str
    name: str
    namespace: str
    pod: dict[str, Any]


@functools.lru_cache(maxsize=None)
def rendered(variant: str) -> Rendering:
    stack, config = VARIANTS[variant]
    return render_stack(stack, **config)


_RENDERED_CHARTS: dict[int, tuple[Rendering, tuple]] = {}


def chart_objects(rendering: Rendering) -> tuple[tuple[str, dict[str, Any]], ...]:
    """(release name, object) for every object every Helm release of the rendering installs (rendered once)."""
    if id(rendering) not in _RENDERED_CHARTS:
        _RENDERED_CHARTS[id(rendering)] = (rendering, _render_charts(rendering))
    return _RENDERED_CHARTS[id(rendering)][1]


def _render_charts(rendering: Rendering) -> tuple[tuple[str, dict[str, Any]], ...]:
    found = []
    for release in rendering.of_type(RELEASE):
        i = release.inputs
        for obj in helm.render(i["chart"], i["version"], i.get("values") or {}, name=i.get("name") or release.name,
                               namespace=i["namespace"]):
            obj.setdefault("metadata", {}).setdefault("namespace", i["namespace"])
            found.append((release.name, obj))
    return tuple(found)


def stack_objects(rendering: Rendering) -> list[dict[str, Any]]:
    """The Kubernetes objects the stack declares itself (namespaces, quotas, NodePools...)."""
    return [r.inputs for r in rendering.resources
            if r.type.startswith("kubernetes:") and r.type != RELEASE]


def gpu_nodes(rendering: Rendering) -> list[GpuNode]:
    """The GPU nodes the pools and NodePools create, read from the cloud resources as the cloud reads them."""
    platform_labels, platform_taints = PLATFORM_GPU_NODE[rendering.stack]
    nodes = []
    for r in rendering.resources:
        i = r.inputs
        if r.type.endswith(":NodePool") and r.type.startswith("kubernetes:"):
            template = i["spec"]["template"]
            labels, taints = template["metadata"].get("labels", {}), [
                Taint(t["key"], t.get("value", ""), t["effect"]) for t in template["spec"].get("taints", [])]
        elif not is_gpu_capacity(r.type, i):
            continue
        elif r.type == "aws:eks/nodeGroup:NodeGroup":
            labels, taints = i.get("labels", {}), [Taint(t["key"], t.get("value", ""), _effect(t["effect"]))
                                                     for t in i.get("taints", [])]
        elif r.type == "gcp:container/nodePool:NodePool":
            labels, taints = i["nodeConfig"].get("labels", {}), [Taint(t["key"], t.get("value", ""),
                                                                       _effect(t["effect"]))
                                                                 for t in i["nodeConfig"].get("taints", [])]
        elif r.type == "azure-native:containerservice:AgentPool":
            labels, taints = i.get("nodeLabels", {}), [_aks_taint(t) for t in i.get("nodeTaints", [])]
            if i.get("scaleSetPriority") == "Spot":  # AKS adds it to every Spot node
                taints.append(Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"))
        else:
            continue
        # kubelet labels each node with its instance type (well-known label): one node per type the pool launches.
        types = i.get("instanceTypes") if r.type == "aws:eks/nodeGroup:NodeGroup" else None
        for instance_labels in [{INSTANCE_TYPE_LABEL: t} for t in types] if types else [{}]:
            nodes.append(GpuNode(r.name, {**platform_labels, **instance_labels, **labels},
                                 taints + [t for t in platform_taints if t not in taints]))
    assert nodes, "no GPU pool found"
    return nodes


def _effect(api: str) -> str:
    """A taint effect as EKS's and GKE's APIs spell it (NO_SCHEDULE), as Kubernetes does (NoSchedule)."""
    return {spelled: k8s for k8s, spelled in TAINT_EFFECTS_K8S.items()}.get(api, api)


def _aks_taint(text: str) -> Taint:
    key_value, _, effect = text.partition(":")
    key, _, value = key_value.partition("=")
    return Taint(key, value, effect)


def workloads(rendering: Rendering) -> Iterator[Workload]:
    for release, obj in chart_objects(rendering):
        spec = obj.get("spec", {})
        pod = (spec.get("jobTemplate", {}).get("spec", {}) if obj["kind"] == "CronJob" else spec).get(
            "template", {}).get("spec")
        if pod is not None:
            yield Workload(release, obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"], pod)


def _untolerated(pod: dict[str, Any], node: GpuNode) -> list[Taint]:
    """The node's taints that keep the pod off (NoSchedule / NoExecute) and that it does not tolerate."""
    return [t for t in node.taints
            if t.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.get("tolerations"), t)]


def _settled_labels(rendering: Rendering, node: GpuNode) -> dict[str, str]:
    """A node's labels once the DaemonSets that reach it have run: node-feature-discovery's worker adds the NVIDIA
    PCI label, then the GPU Operator its deploy labels."""
    labels = dict(node.labels)
    for w in workloads(rendering):
        if (w.kind == "DaemonSet" and w.name.endswith("node-feature-discovery-worker")
                and schedulable(w.pod, labels, node.taints)):
            labels.update(NFD_LABELS)
    return labels


def _must_reach_gpu_nodes(w: Workload) -> bool:
    # The MPS control daemon runs only on nodes GPU feature discovery marks MPS-capable (MPS sharing configured).
    return w.kind == "DaemonSet" and "nvidia.com/mps.capable" not in (w.pod.get("nodeSelector") or {})


def invalid_objects(rendering: Rendering) -> Iterator[str]:
    """Each object the releases and the stack would send to the API server that its schema refuses, with why."""
    schemas = {kind: helm.crd_schema(crd) for kind, crd in helm.crds().items()}
    schemas.update({kind: kueue_schemas.schema(kind) for kind in kueue_schemas.KINDS})  # strict: Kueue's objects
    for obj in [obj for _, obj in chart_objects(rendering)] + stack_objects(rendering):
        what = f"{obj['kind']} {obj['metadata'].get('name')}"
        try:
            if obj["kind"] in schemas:
                jsonschema.validate(obj, schemas[obj["kind"]])
            else:
                kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            yield f"{what}: no schema for {obj['apiVersion']}"
        except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as e:
            yield f"{what}: {e.message}"


def unreached(rendering: Rendering) -> Iterator[str]:
    """Each DaemonSet that must run on every GPU node and cannot on some, and why."""
    for node in gpu_nodes(rendering):
        labels = _settled_labels(rendering, node)
        for w in filter(_must_reach_gpu_nodes, workloads(rendering)):
            untolerated = _untolerated(w.pod, node)
            if untolerated or not selects(labels, w.pod.get("nodeSelector"), w.pod.get("affinity")):
                taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in untolerated)
                yield f"{w.name} on {node.pool} (untolerated: {taints or 'none'}; labels {labels})"


def refused_critical_pods(rendering: Rendering) -> set[tuple[str, str]]:
    """(namespace, PriorityClass) of the critical pods GKE would refuse: outside kube-system, with no ResourceQuota of
    their namespace selecting their class. The operator's operands take the ClusterPolicy's class."""
    wanted = {(w.namespace, w.pod["priorityClassName"]) for w in workloads(rendering)
              if w.pod.get("priorityClassName") in CRITICAL}
    for _, obj in chart_objects(rendering):
        if obj["kind"] == "ClusterPolicy" and obj["spec"]["daemonsets"].get("priorityClassName") in CRITICAL:
            wanted.add((obj["metadata"]["namespace"], obj["spec"]["daemonsets"]["priorityClassName"]))
    admitted = set()
    for obj in stack_objects(rendering):
        if obj["kind"] == "ResourceQuota":
            for expr in obj["spec"].get("scopeSelector", {}).get("matchExpressions", []):
                if expr["scopeName"] == "PriorityClass" and expr["operator"] == "In":
                    admitted |= {(obj["metadata"]["namespace"], c) for c in expr["values"]}
    return {(ns, c) for ns, c in wanted if ns != "kube-system"} - admitted


OPERATOR_VARIANTS = [v for v in VARIANTS if VARIANTS[v][1].get("gpuready:install") == "gpu-operator"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_release_is_a_vendored_pinned_chart(variant):
    for release in rendered(variant).of_type(RELEASE):
        i = release.inputs
        assert helm.chart_dir(i["chart"], i["version"]).is_dir()


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_object_validates_against_kubernetes_or_its_crd(variant):
    assert not list(invalid_objects(rendered(variant)))


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_gpu_daemonset_reaches_every_gpu_node(variant):
    """Tolerates every taint the node registers with and matches its labels, once NFD has labelled it."""
    assert not list(unreached(rendered(variant)))


@pytest.mark.parametrize("variant", OPERATOR_VARIANTS)
def test_the_operators_operands_reach_every_gpu_node(variant):
    """The operator creates its operand DaemonSets at run time with the ClusterPolicy's tolerations, on the nodes it
    labels as GPU nodes."""
    rendering = rendered(variant)
    (policy,) = [obj for _, obj in chart_objects(rendering) if obj["kind"] == "ClusterPolicy"]
    for node in gpu_nodes(rendering):
        labels = _settled_labels(rendering, node)
        assert any(all(labels.get(k) == v for k, v in marks.items()) for marks in OPERATOR_GPU_LABELS), (
            f"the operator never sees {node.pool} as a GPU node: {labels}")
        untolerated = _untolerated(policy["spec"]["daemonsets"], node)
        assert not untolerated, f"operands do not tolerate {untolerated} of {node.pool}"


@pytest.mark.parametrize("variant", [v for v in VARIANTS if VARIANTS[v][0] == "gke"])
def test_gke_admits_every_system_critical_pod(variant):
    assert not refused_critical_pods(rendered(variant))


# The checks above catch what they are for: each defect put back by a stack transformation.

def _values(chart: str, change):
    def edit(props):
        if props["chart"] == chart:
            change(props["values"])
    return break_resource(RELEASE, edit)


def test_a_cluster_policy_the_crd_refuses_is_caught():
    """Defect 1: migManager.config.default other than all-disabled or ""."""
    broken = render_stack("eks", _values("gpu-operator", lambda v: v.setdefault("migManager", {}).setdefault(
        "config", {}).update(default="all-1g.10gb")), **VARIANTS["eks-gpu-operator"][1])
    assert any(e.startswith("ClusterPolicy") and "all-1g.10gb" in e for e in invalid_objects(broken))


def test_critical_pods_without_the_quota_are_caught():
    """Defect 2: the quota's scope no longer names the PriorityClass."""
    def unscoped(props):
        props["spec"]["scopeSelector"]["matchExpressions"][0]["values"] = ["low"]
    broken = render_stack("gke", break_resource("kubernetes:core/v1:ResourceQuota", unscoped),
                          **VARIANTS["gke-gpu-operator-gke-driver"][1])
    assert ("nvidia-gpu", "system-node-critical") in refused_critical_pods(broken)


def test_a_daemonset_without_the_gpu_toleration_is_caught():
    broken = render_stack("aks", _values("nvidia-device-plugin", lambda v: v.update(tolerations=[])))
    assert any(e.startswith("nvidia-device-plugin on aks-gpu (untolerated: sku=gpu:NoSchedule;")
               for e in unreached(broken))


def test_a_daemonset_whose_labels_gpu_nodes_lack_is_caught():
    def unlabelled(props):
        props["labels"].pop("nvidia.com/gpu.present")
    broken = render_stack("eks", break_resource("aws:eks/nodeGroup:NodeGroup", unlabelled, "eks-gpu"))
    assert any(e.startswith("nvidia-device-plugin on eks-gpu") for e in unreached(broken))


def test_the_efa_device_plugin_reaches_every_efa_node():
    """The real chart's DaemonSet (its own instance-type affinity included) lands on every type of the EFA pool
    despite the GPU taint, so pods can ask for vpc.amazonaws.com/efa."""
    rendering = rendered("eks-efa")
    (plugin,) = [w for w in workloads(rendering) if w.name == "aws-efa-k8s-device-plugin"]
    nodes = gpu_nodes(rendering)
    assert {n.labels[INSTANCE_TYPE_LABEL] for n in nodes} == {"p4d.24xlarge", "p4de.24xlarge"}
    for node in nodes:
        assert schedulable(plugin.pod, node.labels, node.taints), node


def test_an_efa_device_plugin_without_the_gpu_toleration_is_caught():
    broken = render_stack("eks", _values("aws-efa-k8s-device-plugin", lambda v: v.update(tolerations=[])),
                          **VARIANTS["eks-efa"][1])
    assert any(e.startswith("aws-efa-k8s-device-plugin on eks-gpu (untolerated: nvidia.com/gpu=true:NoSchedule")
               for e in unreached(broken))


def test_an_efa_type_the_chart_does_not_know_is_caught():
    """The chart selects EFA nodes by its own list of instance types: a type missing there gets no EFA plugin."""
    def forget(props):
        if props["chart"] == "aws-efa-k8s-device-plugin":
            props["values"]["supportedInstanceLabels"] = {"keys": [INSTANCE_TYPE_LABEL], "values": ["p5.48xlarge"]}
    broken = render_stack("eks", break_resource(RELEASE, forget), **VARIANTS["eks-efa"][1])
    assert any(e.startswith("aws-efa-k8s-device-plugin on eks-gpu") for e in unreached(broken))


@pytest.mark.parametrize("variant", ["eks-burn-in", "eks-burn-in-gpu-operator", "eks-efa", "gke-burn-in",
                                     "gke-burn-in-gpu-operator", "aks-burn-in", "aks-burn-in-gpu-operator"])
def test_the_burn_in_daemonset_reaches_every_gpu_node_and_only_patches_nodes(variant):
    """Every GPU node boots with the burn-in taint (test_every_gpu_daemonset_reaches_every_gpu_node proves the NVIDIA
    and EFA daemonsets tolerate it); the burn-in's own daemonset lands there too, with get/patch on nodes only."""
    rendering = rendered(variant)
    objects = {obj["kind"]: obj for obj in stack_objects(rendering)
               if obj["metadata"].get("name") == "gpuready-burn-in"}
    pod = objects["DaemonSet"]["spec"]["template"]["spec"]
    nodes = gpu_nodes(rendering)
    assert nodes
    for node in nodes:
        assert platforms.node_facts(VARIANTS[variant][0]).burn_in_taint in node.taints
        assert schedulable(pod, node.labels, node.taints), node
    assert objects["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    assert pod["serviceAccountName"] == objects["ClusterRoleBinding"]["subjects"][0]["name"]


def test_a_device_plugin_that_does_not_tolerate_burn_in_is_caught():
    def narrow(values):
        values["tolerations"] = [t for t in values["tolerations"] if t["key"] != "gpuready.io/burn-in"]
    broken = render_stack("eks", _values("nvidia-device-plugin", narrow), **VARIANTS["eks-burn-in"][1])
    assert any(e.startswith("nvidia-device-plugin on eks-gpu (untolerated: gpuready.io/burn-in=pending:NoSchedule")
               for e in unreached(broken))


DRA_VARIANTS = [v for v in VARIANTS if VARIANTS[v][1].get("gpuready:install") == "dra"]
DRIVER_ROOTS = {"eks": "/", "gke": "/home/kubernetes/bin/nvidia", "aks": "/"}
"""Where each platform's image puts the driver the DRA driver reads (its ``nvidiaDriverRoot``): EKS's AL2023 NVIDIA AMI
and AKS's GPU image install it on the host; GKE under /home/kubernetes/bin/nvidia (NVIDIA's GKE guide)."""


@pytest.mark.parametrize("variant", DRA_VARIANTS)
def test_the_dra_driver_gives_out_the_gpus_and_no_device_plugin_runs(variant):
    """What Helm renders from the chart with our values: the DeviceClass jobs claim (resource.k8s.io/v1), the kubelet
    plugin reading the driver where the platform puts it, the ComputeDomain plugin and controller only when asked, and
    no device plugin DaemonSet from any release (the chart's own guard, ``gpuResourcesEnabledOverride``, assumes it)."""
    rendering = rendered(variant)
    objects = [obj for _, obj in chart_objects(rendering)]
    classes = {o["metadata"]["name"]: o["apiVersion"] for o in objects if o["kind"] == "DeviceClass"}
    assert classes["gpu.nvidia.com"] == "resource.k8s.io/v1"
    (plugin,) = [w for w in workloads(rendering) if w.name.endswith("-kubelet-plugin")]
    containers = {c["name"]: c for c in plugin.pod["containers"]}
    compute_domains = bool(VARIANTS[variant][1].get("gpuready:computeDomains"))
    assert set(containers) == {"gpus", *(("compute-domains",) if compute_domains else ())}
    root = {e["name"]: e.get("value") for e in containers["gpus"]["env"]}["NVIDIA_DRIVER_ROOT"]
    assert root == DRIVER_ROOTS[VARIANTS[variant][0]]
    assert ("compute-domain-default-channel.nvidia.com" in classes) == compute_domains
    assert any(w.name.endswith("-controller") for w in workloads(rendering)) == compute_domains
    plugins = [w.name for w in workloads(rendering) for c in w.pod["containers"]
               if (c.get("command") or [""])[0] == "nvidia-device-plugin"]
    assert not plugins
    assert [w.name for w in workloads(rendered(VARIANTS[variant][0])) for c in w.pod["containers"]
            if (c.get("command") or [""])[0] == "nvidia-device-plugin"] or VARIANTS[variant][0] == "gke"  # can fail


def test_a_dra_kubelet_plugin_that_does_not_tolerate_the_gpu_taint_is_caught():
    def narrow(values):
        values["kubeletPlugin"]["tolerations"] = []
    broken = render_stack("eks", _values("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
                                         narrow), **VARIANTS["eks-dra"][1])
    assert any(e.startswith("dra-driver-nvidia-gpu-kubelet-plugin on eks-gpu (untolerated: nvidia.com/gpu")
               for e in unreached(broken))
