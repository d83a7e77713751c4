"""What a rendered resource means for GPUs: one describer per reader of :mod:`gpuready.resources`, and the
capacity pools the stack adds.

A describer turns a resource (its reader, and the rendering around it) into short facts a person reads in
``gpuready plan``; every reader with a ``capacity()`` (:func:`gpuready.resources.capacity_readers`) adds a
:class:`Pool`. A platform's descriptor carries its readers and their describers (the tables below are the built-in
platforms' pieces); nothing else changes.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Sequence

from gpuready_components import catalog, platforms
from gpuready_components import azure_roles
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.k8s_gpu.facts import DRA_DEVICE_CLASS, POOL_LABEL

from ..resources import PoolCapacity, Resource, aws, azure, capacity_readers, gcp, kubernetes, read
from ..resources.base import ON_DEMAND, RESERVED, Source
from .render import RenderedResource, Rendering


@dataclass(frozen=True)
class Pool:
    """GPU capacity one resource can scale to."""

    resource: str
    cloud: str
    instance_types: tuple[str, ...]
    max_gpus: int
    max_usd_per_hour: float
    unknown_types: tuple[str, ...]
    """Types with no GPU facts (neither in the catalog nor declared by the stack): no GPUs, no price."""
    kinds: tuple[str, ...] = (ON_DEMAND,)
    """Where its nodes come from, preferred first (:data:`gpuready.resources.base.CAPACITY_KINDS`)."""
    reservation: Optional[str] = None
    """The reservation it launches into (``capacity-block cr-...``), when it names one."""
    window: Optional[str] = None
    """The reservation's window as far as known (``2026-12-01T00:00:00Z to 2026-12-15T11:30:00Z``, ``until ...``)."""
    reserved_gpus: int = 0
    """Its GPUs that come from the reservation: the reserved instances' (when the count is known, at most
    ``max_gpus``), else all of them when its first kind is reserved."""
    committed_usd_per_hour: float = 0.0
    """What the reservation costs by the hour whether used or not (its reserved instances at list price; when the
    count is unknown, the pool's reserved GPUs)."""
    pool: Optional[str] = None
    """Its name as ``teams[].pools`` names it, where its nodes carry gpuready's pool label (a stack with teams)."""


def _instances(pool: Any) -> list[str]:
    """Each type a pool launches with its GPUs, as its reader knows them (the catalog, or the stack's declaration)."""
    rows = ((name, pool.row(name)) for name in pool.instance_types)
    return [f"{name} ({row.gpus}x {row.gpu_model} {catalog.gib_text(row.gpu_memory_gib)})" if row
            else f"{name} (no GPU)" for name, row in rows]


def _batch_compute_environment(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    env = aws.BatchComputeEnvironment(r.inputs)
    res = env.resources
    image = [c.get("imageType") or c.get("imageIdOverride") for c in res.get("ec2Configurations") or []]
    return {
        "capacity": {"EC2": "on-demand", "SPOT": "spot"}.get(res.get("type"), res.get("type")),
        "allocation": res.get("allocationStrategy"),
        "vcpus": f"{int(res.get('minVcpus', 0))}-{int(res.get('maxVcpus', 0))}",
        "image": ", ".join(filter(None, image)) or res.get("imageId") or "Batch default",
        "instances": _instances(env),
        **({"placement group": res["placementGroup"], "subnets": _subnets(env.subnets),
            "EFA interfaces": _efa_of(res, rendering)} if res.get("placementGroup") else {}),
    }


def _subnets(subnets: list[Any]) -> str:
    return f"{len(subnets)} (one Availability Zone)" if len(subnets) == 1 else f"{len(subnets)}"


def _template(wanted: Any, rendering: Rendering) -> aws.LaunchTemplate | None:
    """The rendered launch template of id ``wanted``, read; None when the stack renders none of that id."""
    from .render import mock_id

    for r in rendering.resources:
        if r.type == aws.LaunchTemplate.TOKEN and wanted in (r.outputs.get("id"), mock_id(r.type, r.name)):
            return aws.LaunchTemplate(r.inputs)
    return None


def _efa_of(resources: dict[str, Any], rendering: Rendering) -> int:
    """EFA interfaces per instance: those of the launch template the compute environment launches with."""
    template = _template((resources.get("launchTemplate") or {}).get("launchTemplateId"), rendering)
    return template.efa_interfaces if template else 0


def _batch_job_queue(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    queue = aws.BatchJobQueue(r.inputs)
    by_arn = {x.outputs.get("arn"): x for x in rendering.resources if x.custom}
    members = []
    for order in queue.orders:
        env = by_arn.get(order.get("computeEnvironment"))
        members.append(env.name if env else str(order.get("computeEnvironment")))
    limits = [f"{a.get('reason')} after {int(a.get('maxTimeSeconds', 0)) // 60} min"
              for a in queue.time_limit_actions]
    return {"compute environments": members, "cancel RUNNABLE": limits or "never"}


def _batch_job_definition(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    # Strict JSON: a masked secret fails here, and is then described from its real value (plan._facts).
    if aws.BatchJobDefinition(r.inputs).multinode:
        nodes = json.loads(r.inputs.get("nodeProperties") or "{}")
        ranges = nodes.get("nodeRangeProperties") or [{}]
        container, extra = ranges[0].get("container") or {}, {"nodes": nodes.get("numNodes")}
        extra["EFA devices"] = len(aws.BatchJobDefinition.efa_devices(container))
        extra["shared memory MiB"] = (container.get("linuxParameters") or {}).get("sharedMemorySize")
    else:
        container, extra = json.loads(r.inputs.get("containerProperties") or "{}"), {}
    needs = {q.get("type"): q.get("value") for q in container.get("resourceRequirements") or []}
    return {**extra, "gpus": needs.get("GPU", "0"), "vcpus": needs.get("VCPU"), "memory MiB": needs.get("MEMORY"),
            "image": container.get("image")}


def _launch_template(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    template = aws.LaunchTemplate(r.inputs)
    facts: dict[str, Any] = {"IMDS tokens": template.http_tokens}
    if template.efa_interfaces:
        facts["EFA interfaces"] = template.efa_interfaces
    if template.reservation:
        facts["reservation"] = str(template.reservation)
    for mapping in template.volumes:
        ebs = mapping.get("ebs") or {}
        facts[f"volume {mapping.get('deviceName')}"] = (
            f"{int(ebs.get('volumeSize', 0))} GiB {ebs.get('volumeType', '')}"
            f"{' encrypted' if str(ebs.get('encrypted')).lower() == 'true' else ' NOT encrypted'}")
    return facts


API_ACCESS = "Kubernetes API reachable from"
"""The fact every cluster describer sets: who can reach the cluster's API endpoint."""


def _api_access(public: bool, cidrs: list[str]) -> str:
    """``API_ACCESS`` of an endpoint: private, or public to ``cidrs`` (empty: anywhere)."""
    if not public:
        return "inside the cluster's network only (private endpoint)"
    try:
        networks = [ipaddress.ip_network(c, strict=False) for c in cidrs]
    except (TypeError, ValueError):  # not CIDRs (any program can be planned): shown as they are
        return ", ".join(map(str, cidrs))
    if not networks or any(n.prefixlen == 0 for n in networks):
        return "anywhere (0.0.0.0/0)"
    if not any(n.is_global for n in networks):
        return (f"{', '.join(cidrs)} (private or reserved ranges only: nothing on the internet matches them; to run "
                f"pulumi up from outside the network, set gpuready:apiAllowedCidrs to your egress IP)")
    return ", ".join(cidrs)


def _eks_cluster(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    cluster = aws.EksCluster(r.inputs)
    encrypted = [res for c in [r.inputs.get("encryptionConfig") or {}] for res in c.get("resources") or []]
    return {
        "version": r.inputs.get("version") or "EKS default",
        API_ACCESS: _api_access(cluster.public_endpoint, cluster.authorized_networks),
        "encrypted with KMS": ", ".join(encrypted) or "nothing",
        "auth": (r.inputs.get("accessConfig") or {}).get("authenticationMode", "CONFIG_MAP"),
    }


def _eks_node_pool(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    pool = kubernetes.KarpenterNodePool(r.inputs)
    template = pool.template.get("spec") or {}
    node_class = pool.node_class(_node_classes(rendering))
    caveat = node_class.caveat if node_class is not None else None
    return {
        "node class": (template.get("nodeClassRef") or {}).get("name"),
        "capacity": _node_pool_capacity(pool, rendering),
        **({"reservation caveat": caveat} if caveat else {}),
        "GPU limit": "none" if pool.gpu_limit is None else pool.gpu_limit,
        "taints": [f"{t.key}={t.value}:{t.effect}" for t in pool.taints] or "none",
        "instances": _instances(pool),
        "repair": _AUTO_MODE_REPAIR if (template.get("nodeClassRef") or {}).get("group") == sf.AUTO_MODE_NODE_CLASS["group"]
        else _karpenter_repair(rendering),
    }


_AUTO_MODE_REPAIR = "EKS Auto Mode repairs its nodes itself, GPU conditions included"


def _karpenter_repair(rendering: Rendering) -> str:
    """What Karpenter does of a node whose conditions stay unhealthy: its ``nodeRepair`` gate, in the Karpenter
    release the stack installs."""
    releases = [kubernetes.HelmRelease(r.inputs) for r in rendering.of_type(kubernetes.HelmRelease.TOKEN)]
    karpenter = [r for r in releases if str(r.chart).rstrip("/").endswith("karpenter")]
    if not karpenter:
        return "as the cluster's own Karpenter is set (its nodeRepair gate)"
    if karpenter[0].value("settings.featureGates.nodeRepair", False):
        return "Karpenter replaces a node whose GPU condition stays false (nodeRepair gate on)"
    return "off (Karpenter's nodeRepair gate)"


def _node_classes(rendering: Rendering) -> list[kubernetes.KarpenterNodeClass]:
    """The NodeClasses the stack creates (Karpenter's EC2NodeClass, Auto Mode's NodeClass), read."""
    return [c for c in (read(r.type, r.inputs) for r in rendering.resources)
            if isinstance(c, kubernetes.KarpenterNodeClass)]


def _node_pool_capacity(pool: kubernetes.KarpenterNodePool, rendering: Rendering) -> str:
    """Its capacity types, Karpenter's first choice first (``reserved (capacity-reservation cr-...), on-demand``)."""
    source = pool.source(_node_classes(rendering))
    return ", ".join(f"{kind} ({source.reservation})" if kind == RESERVED and source.reservation else kind
                     for kind in source.kinds)


def _eks_node_group(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    group = aws.EksNodeGroup(r.inputs)
    scaling = r.inputs.get("scalingConfig") or {}
    return {
        "AMI": r.inputs.get("amiType", "AL2_x86_64"),
        "capacity": _node_group_capacity(r, rendering),
        "nodes": f"{int(scaling.get('minSize', 0))}-{int(scaling.get('maxSize', 0))}",
        "taints": [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in r.inputs.get("taints") or []]
        or "none",
        "labels": [f"{k}={v}" for k, v in sorted(group.labels.items())],
        "instances": _instances(group),
        **({"repair": _node_repair(r.inputs["nodeRepairConfig"])} if "nodeRepairConfig" in r.inputs else {}),
    }


def _node_group_capacity(r: RenderedResource, rendering: Rendering) -> str:
    """``ON_DEMAND``, ``SPOT``, or ``reserved (capacity-block cr-...)`` / ``reserved (odcr ...)`` when its launch
    template names reserved capacity."""
    template = _template((r.inputs.get("launchTemplate") or {}).get("id"), rendering)
    reserved = template.reservation if template else None
    return f"reserved ({reserved})" if reserved else r.inputs.get("capacityType", "ON_DEMAND")


def _node_repair(config: dict[str, Any]) -> str:
    """A managed node group's ``nodeRepairConfig`` in a line: what is rebooted or replaced, and the limits."""
    if not config.get("enabled"):
        return "off"
    actions: dict[str, int] = {}
    for override in config.get("nodeRepairConfigOverrides") or ():
        actions[override.get("repairAction")] = actions.get(override.get("repairAction"), 0) + 1
    said = ", ".join(f"{action.lower()} on {n} GPU reasons" for action, n in sorted(actions.items())) or \
        "EKS's default actions"
    limits = [words.format(int(config[key])) for key, words in _REPAIR_LIMITS if config.get(key) is not None]
    return "; ".join([said, *limits])


_REPAIR_LIMITS = (("maxParallelNodesRepairedCount", "{} at a time"),
                  ("maxParallelNodesRepairedPercentage", "{}% at a time"),
                  ("maxUnhealthyNodeThresholdPercentage", "stops above {}% unhealthy"),
                  ("maxUnhealthyNodeThresholdCount", "stops above {} unhealthy"))
"""``nodeRepairConfig``'s limits (EKS: a count or a percentage of each) and how the plan says them."""


def _gke_cluster(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    cluster = gcp.GkeCluster(r.inputs)
    return {
        "release channel": (r.inputs.get("releaseChannel") or {}).get("channel", "default"),
        **({"version": f"{cluster.kubernetes_version} or later"} if cluster.kubernetes_version else {}),
        "nodes": "private" if cluster.private_nodes else "public IPs",
        API_ACCESS: _api_access(cluster.public_endpoint, cluster.authorized_networks),
        "workload identity": (r.inputs.get("workloadIdentityConfig") or {}).get("workloadPool", "off"),
        "managed DCGM": cluster.managed_dcgm,
    }


def _gke_pool_capacity(pool: gcp.GkeNodePool) -> str:
    """``on-demand``, ``spot``, ``flex-start`` (``, queued provisioning``), or ``reserved (reservation NAME)`` (``,
    then on-demand`` where nodes past the reservation launch on-demand)."""
    source = pool.source()
    if source.reservation is not None:
        return f"reserved ({source.reservation})" + (", then on-demand" if source.falls_back else "")
    if pool.flex_start:
        return "flex-start" + (", queued provisioning" if pool.queued else "")
    return source.kinds[0]


def _gke_subnetwork(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    return {"region": r.inputs.get("region"), "nodes": r.inputs.get("ipCidrRange"),
            **{s.get("rangeName"): s.get("ipCidrRange") for s in r.inputs.get("secondaryIpRanges") or []},
            "private Google access": bool(r.inputs.get("privateIpGoogleAccess"))}


def _gke_router_nat(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    scope = r.inputs.get("sourceSubnetworkIpRangesToNat")
    by_urn = rendering.by_urn()
    subnets = [by_urn[u].name for u in r.property_dependencies.get(gcp.RouterNat.SUBNETWORKS_INPUT, ())
               if u in by_urn] or \
        [s.get("name") for s in r.inputs.get("subnetworks") or []]
    return {"internet egress for": subnets if scope == "LIST_OF_SUBNETWORKS" else f"every subnetwork ({scope})",
            "addresses": {"AUTO_ONLY": "allocated by Google"}.get(r.inputs.get("natIpAllocateOption"),
                                                                  r.inputs.get("natIpAllocateOption"))}


def _gke_node_pool(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    pool = gcp.GkeNodePool(r.inputs)
    config = pool.node_config
    accelerators = config.get("guestAccelerators") or []
    facts: dict[str, Any] = {"machine": config.get("machineType"), "image": config.get("imageType", "default"),
                             "nodes": f"{int((r.inputs.get('autoscaling') or {}).get('totalMinNodeCount', 0))}-"
                                      f"{pool.max_nodes}" if r.inputs.get("autoscaling")
                             else int(r.inputs.get("nodeCount", 0))}
    if accelerators:
        accelerator = accelerators[0]
        row = pool.machine
        facts["GPUs"] = f"{int(accelerator.get('count', 0))}x {accelerator.get('type')}" + (
            f" ({row.gpu_model} {catalog.gib_text(row.gpu_memory_gib)})" if row else "")
        facts["driver"] = (accelerator.get("gpuDriverInstallationConfig") or {}).get("gpuDriverVersion", "none")
        sharing = accelerator.get("gpuSharingConfig")
        if sharing:
            facts["sharing"] = f"{sharing.get('gpuSharingStrategy')} x{int(sharing.get('maxSharedClientsPerGpu', 0))}"
        if accelerator.get("gpuPartitionSize"):
            facts["MIG partition"] = accelerator["gpuPartitionSize"]
        facts["capacity"] = _gke_pool_capacity(pool)
        repair = pool.repair
        facts["repair"] = "none: a queued-provisioning node lives for one request" if repair is None else \
            "GKE auto-repair: recreates a node that stays not ready; a GPU fault on a ready node is for the alerts" \
            if repair.on else "off (management.autoRepair false)"
    facts["taints"] = [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in config.get("taints") or []] \
        or "none"
    if pool.labels:
        facts["labels"] = [f"{k}={v}" for k, v in sorted(pool.labels.items())]
    return facts


def _aks_cluster(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    cluster = azure.AksCluster(r.inputs)
    return {
        "version": r.inputs.get("kubernetesVersion") or "AKS default",
        API_ACCESS: _api_access(cluster.public_endpoint, cluster.authorized_networks),
        "local accounts": "disabled" if r.inputs.get("disableLocalAccounts") else "enabled",
        **({"admin groups": aad["adminGroupObjectIDs"]}
           if (aad := r.inputs.get("aadProfile") or {}).get("adminGroupObjectIDs") else {}),
        "system pool": [f"{p.get('name')}: {int(p.get('count', 0))}x {p.get('vmSize')}"
                        for p in r.inputs.get("agentPoolProfiles") or []],
        **({"identity": [f"user-assigned {str(i).rsplit('/', 1)[-1]}" for i in cluster.user_assigned_identities]}
           if cluster.user_assigned_identities else {}),
    }




def _azure_role_assignment(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    role = str(r.inputs.get("roleDefinitionId", "")).rsplit("/", 1)[-1]
    scope = str(r.inputs.get("scope", ""))
    return {"role": azure_roles.NAMES.get(role, role), "to": f"{r.inputs.get('principalType', 'User')} "
            f"{r.inputs.get('principalId')}", "on": scope.rsplit("/", 1)[-1] or scope}


def _aks_agent_pool(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    source = azure.AksAgentPool(r.inputs).source()
    return {
        "mode": r.inputs.get("mode"),
        "capacity": " then ".join(source.kinds) + (f" ({source.reservation})" if source.reservation else ""),
        "nodes": f"{int(r.inputs.get('minCount', 0))}-{int(r.inputs.get('maxCount', r.inputs.get('count', 0)))}",
        "priority": r.inputs.get("scaleSetPriority", "Regular"),
        "GPU driver": (r.inputs.get("gpuProfile") or {}).get("driver", "Install"),
        **({"MIG profile": r.inputs["gpuInstanceProfile"]} if r.inputs.get("gpuInstanceProfile") else {}),
        "taints": r.inputs.get("nodeTaints") or "none",
        "instances": _instances(azure.AksAgentPool(r.inputs)),
        "repair": "AKS auto-repair (always on): restarts, reimages, then redeploys a node that stays not ready; a GPU "
                  "fault on a ready node is for the alerts",
    }


def _flatten(values: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(values, dict) and values:
        out: dict[str, Any] = {}
        for key, item in values.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: values}


_HELM_KEY_VALUES = ("enabled", "strategy", "migStrategy", "default", "nvidiaDriverRoot")
"""Values shown by ``gpuready plan``: switches, strategies and where the DRA driver reads the NVIDIA driver;
tolerations and affinity are summarised."""


def _helm_release(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    release = kubernetes.HelmRelease(r.inputs)
    repo = (r.inputs.get("repositoryOpts") or {}).get("repo", "")
    facts: dict[str, Any] = {"chart": f"{release.chart} {release.version or 'UNPINNED'}",
                             **({"repo": repo} if repo else {}),  # an oci:// chart names its registry itself
                             "namespace": r.inputs.get("namespace")}
    if r.inputs.get("description"):
        facts["description"] = r.inputs["description"]
    if release.dra_driver:
        facts["GPUs"] = (f"claimed through DRA: ResourceClaims of DeviceClass {DRA_DEVICE_CLASS}, no device "
                         "plugin" + ("; ComputeDomains on (IMEX channels for multi-node NVLink)"
                                     if release.value("resources.computeDomains.enabled", True) else ""))
    for key, value in _flatten(release.values).items():
        last = key.rsplit(".", 1)[-1]
        if last in _HELM_KEY_VALUES and not isinstance(value, (dict, list)):
            facts[key] = value
        elif last == "tolerations":
            facts[key] = [f"{t.get('key', '*')} {t.get('operator', 'Equal')} {t.get('effect', 'any')}"
                          for t in value or []]
    return facts


def _namespace(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    labels = (r.inputs.get("metadata") or {}).get("labels") or {}
    return {"pod security": labels.get("pod-security.kubernetes.io/enforce", "cluster default")}


def _resource_quota(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    spec = r.inputs.get("spec") or {}
    scopes = [", ".join(e.get("values") or ()) for e in (spec.get("scopeSelector") or {}).get("matchExpressions") or ()
              if e.get("scopeName") == "PriorityClass"]
    return {"pods": (spec.get("hard") or {}).get("pods"), **({"priority classes": "; ".join(scopes)} if scopes else {})}


def _alert_counts(rule: kubernetes.AlertRules) -> str:
    """``13 (6 critical, 4 warning, 3 info)``."""
    severities: dict[str, int] = {}
    for alert in rule.alerts:
        severity = (alert.get("labels") or {}).get("severity", "none")
        severities[severity] = severities.get(severity, 0) + 1
    order = sorted(severities, key=lambda s: (("critical", "warning", "info").index(s)
                                             if s in ("critical", "warning", "info") else 3, s))
    return f"{len(rule.alerts)} ({', '.join(f'{severities[s]} {s}' for s in order)})"


def _rule_facts(rule: kubernetes.AlertRules) -> dict[str, Any]:
    """Its alerts (by severity) and the series it records (with the teams its rules label, ``team``)."""
    records = list(dict.fromkeys(r["record"] for r in rule.records))
    teams = list(dict.fromkeys(t for r in rule.records if (t := (r.get("labels") or {}).get("team"))))
    return {**({"alerts": _alert_counts(rule)} if rule.alerts or not records else {}),
            **({"records": ", ".join(records)} if records else {}),
            **({"per team": ", ".join(teams)} if teams else {})}


def _prometheus_rule(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    rule = kubernetes.PrometheusRule(r.inputs)
    picked = {k: v for k, v in rule.labels.items() if k != "app.kubernetes.io/managed-by"}
    return {**_rule_facts(rule),
            "selected by": ", ".join(f"{k}={v}" for k, v in picked.items()) or
            "no label: a Prometheus that selects rules by label does not load it (gpuready:prometheusLabels)"}


def _cluster_rules(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    return {**_rule_facts(gcp.ClusterRules(r.inputs)),
            "evaluated by": "Managed Service for Prometheus (its rule evaluator, over this cluster's metrics)"}


Describer = Callable[[RenderedResource, Rendering], dict[str, Any]]
AWS: Mapping[type[Resource], Describer] = MappingProxyType({
    aws.BatchComputeEnvironment: _batch_compute_environment,
    aws.BatchJobQueue: _batch_job_queue,
    aws.BatchJobDefinition: _batch_job_definition,
    aws.LaunchTemplate: _launch_template,
    aws.EksCluster: _eks_cluster,
    aws.EksNodeGroup: _eks_node_group,
})
"""Reader -> the facts ``gpuready plan`` prints for its resources, for the AWS platforms' descriptors to carry."""
KUBERNETES: Mapping[type[Resource], Describer] = MappingProxyType({
    kubernetes.KarpenterNodePool: _eks_node_pool,
    kubernetes.HelmRelease: _helm_release,
    kubernetes.Namespace: _namespace,
    kubernetes.ResourceQuota: _resource_quota,
    kubernetes.PrometheusRule: _prometheus_rule,
})
"""The same for the Kubernetes resources every Kubernetes platform's stack makes."""
GCP: Mapping[type[Resource], Describer] = MappingProxyType({
    gcp.GkeCluster: _gke_cluster,
    gcp.GkeNodePool: _gke_node_pool,
    gcp.Subnetwork: _gke_subnetwork,
    gcp.RouterNat: _gke_router_nat,
    gcp.ClusterRules: _cluster_rules,
})
AZURE: Mapping[type[Resource], Describer] = MappingProxyType({
    azure.AksCluster: _aks_cluster,
    azure.AksAgentPool: _aks_agent_pool,
    azure.RoleAssignment: _azure_role_assignment,
})


def describe(r: RenderedResource, rendering: Rendering) -> dict[str, Any]:
    describer = platforms.collect("describers", lambda p: p.describers).get(type(read(r.type, r.inputs)))
    return describer(r, rendering) if describer else {}


def _linked(pool: Resource, rendering: Rendering, readers: Sequence[tuple[Any, Resource]]) -> list[Resource]:
    """What ``pool``'s :meth:`~gpuready.resources.base.GpuPool.source` reads beside it: the launch templates its
    :attr:`LAUNCH_TEMPLATE_INPUT` names, or (a pool with none: a Karpenter NodePool picks its EC2NodeClass by name)
    every resource of the stack."""
    field_ = getattr(pool, "LAUNCH_TEMPLATE_INPUT", "")
    if not field_:
        return [reader for _, reader in readers]
    named = pool.props.get(field_) or {}
    named = named.get("launchTemplate") or {} if "launchTemplate" in named else named
    ids = [named.get(key) for key in ("id", "launchTemplateId") if named.get(key)]
    return [t for t in (_template(i, rendering) for i in ids) if t is not None]


def capacities(rendering: Rendering) -> list[tuple[str, PoolCapacity, Source]]:
    """(name, capacity, where its nodes come from) of every resource that can launch GPUs."""
    readers = [(r, read(r.type, r.inputs)) for r in rendering.resources]
    found = []
    for r, reader in readers:
        capacity = reader.capacity() if isinstance(reader, capacity_readers()) else None
        if capacity:
            source = reader.source(_linked(reader, rendering, readers)) if callable(getattr(reader, "source", None)) \
                else Source()
            found.append((r.name, capacity, source))
    return found


def pool_names(rendering: Rendering) -> dict[str, str]:
    """Resource name -> the pool's name as ``teams[].pools`` names it, for each resource whose nodes carry gpuready's
    pool label (``gpuready.io/gpu-pool``, set on a stack with teams)."""
    found = {}
    for r in rendering.resources:
        labels = getattr(read(r.type, r.inputs), "node_labels", None)
        if isinstance(labels, dict) and labels.get(POOL_LABEL):
            found[r.name] = str(labels[POOL_LABEL])
    return found


def pool(name: str, capacity: PoolCapacity, source: Source, named: Optional[str] = None) -> Pool:
    """``capacity`` as the plan shows it, with its reserved GPUs and what they commit; ``named``: its name as
    ``teams[].pools`` has it, where known (:func:`pool_names`)."""
    res = source.reservation
    per_node = max((row.gpus for row in capacity.rows), default=0)
    reserved = 0
    if source.kinds[:1] == (RESERVED,):
        reserved = capacity.max_gpus if res is None or res.count is None else min(capacity.max_gpus, res.count * per_node)
    usd_per_gpu = capacity.max_usd_per_hour / capacity.max_gpus if capacity.max_gpus else 0.0
    committed = reserved * usd_per_gpu
    if res is not None and res.count is not None and source.kinds[:1] == (RESERVED,):
        committed = res.count * per_node * usd_per_gpu  # paid for every reserved instance, used or not
    window = None
    if res is not None and (res.start or res.end):
        window = f"{res.start} to {res.end}" if res.start and res.end else \
            f"until {res.end}" if res.end else f"from {res.start}"
    return Pool(name, capacity.cloud, capacity.instance_types, capacity.max_gpus, capacity.max_usd_per_hour,
                capacity.unknown_types, source.kinds, str(res) if res else None, window, reserved,
                round(committed, 2), named)
