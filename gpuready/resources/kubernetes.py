"""Readers of Kubernetes objects the stacks create: Helm releases, namespaces, quotas, Karpenter NodePools and the
NodeClasses they name (Karpenter's EC2NodeClass, EKS Auto Mode's NodeClass), and Kueue's queues (flavors, cluster
queues, cohorts, local queues, priority classes)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping, Optional, Sequence

from gpuready_components import catalog, queue_facts
from gpuready_components.capacity import RESERVATIONS_ONLY, read_reservation_stamps
from gpuready_components.k8s_gpu import scalers as sf
from gpuready_components.aws_reservations import tags_target
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready_components.k8s_gpu.facts import Taint

from . import quantity
from .base import ON_DEMAND, RESERVED, SPOT, PoolCapacity, Reservation, Resource, Source, get, plain, stamped, true

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
_KARPENTER_KINDS = {sf.KARPENTER_RESERVED: RESERVED, "spot": SPOT, "on-demand": ON_DEMAND}
"""Karpenter's capacity types as gpuready's capacity kinds."""


class HelmRelease(Resource):
    TOKEN = "kubernetes:helm.sh/v3:Release"

    @property
    def chart(self) -> Any:
        return self.props.get("chart")

    @property
    def version(self) -> Any:
        return self.props.get("version")

    @property
    def values(self) -> Mapping[str, Any]:
        return self.props.get("values") or {}

    def value(self, path: str, default: Any = None) -> Any:
        """The release value at dotted ``path``; ``default`` when the values do not set it."""
        return get(self.values, path, default)

    @property
    def nvidia_daemonsets(self) -> tuple[k8s_facts.Daemonset, ...]:
        """The daemonsets of an NVIDIA chart that these values run on GPU nodes."""
        return tuple(d for d in k8s_facts.CHART_DAEMONSETS.get(self.chart, ())
                     if not d.enabled_key or bool(self.value(d.enabled_key, d.enabled_default)))

    @property
    def dra_driver(self) -> bool:
        """Whether it is NVIDIA's DRA driver giving out GPUs (its chart, an OCI reference, with ``resources.gpus``
        on)."""
        return str(self.chart or "").rsplit("/", 1)[-1] == k8s_facts.DRA_CHART and \
            bool(self.value("resources.gpus.enabled", True))

    @property
    def device_plugin(self) -> bool:
        """Whether it runs NVIDIA's device plugin (its chart, or the GPU Operator's; on by default in both)."""
        return self.chart in ("nvidia-device-plugin", "gpu-operator") and bool(self.value("devicePlugin.enabled", True))

    @property
    def dcgm_exporter(self) -> bool:
        """Whether it runs a DCGM exporter (its chart, or the GPU Operator's)."""
        return self.chart == "dcgm-exporter" or (self.chart == "gpu-operator" and
                                                 bool(self.value("dcgmExporter.enabled", True)))


Namespace = plain("Namespace", "kubernetes:core/v1:Namespace")
ResourceQuota = plain("ResourceQuota", "kubernetes:core/v1:ResourceQuota")


class AlertRules(Resource):
    """A custom resource of Prometheus rule groups (``spec.groups``), as the CustomResource sends it."""

    @property
    def rules(self) -> list[Mapping[str, Any]]:
        """Every rule of every group, in order."""
        return [rule for group in (self.props.get("spec") or {}).get("groups") or () for rule in group.get("rules") or ()]

    @property
    def alerts(self) -> list[Mapping[str, Any]]:
        return [rule for rule in self.rules if "alert" in rule]

    @property
    def records(self) -> list[Mapping[str, Any]]:
        """The recording rules."""
        return [rule for rule in self.rules if "record" in rule]

    @property
    def labels(self) -> Mapping[str, Any]:
        return (self.props.get("metadata") or {}).get("labels") or {}


class PrometheusRule(AlertRules):
    """A ``PrometheusRule`` (the GPU health alerts, ``gpuready_components.k8s_gpu.health``; the teams' GPU-hours,
    ``gpuready_components.k8s_gpu.gpu_hours``), for the Prometheus Operator."""

    TOKEN = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


class KarpenterNodeClass(Resource):
    """A Karpenter ``EC2NodeClass``: its name, and the capacity reservations it selects."""

    TOKEN = f"kubernetes:{sf.KARPENTER_NODE_CLASS_API}:EC2NodeClass"
    REF_KIND = sf.KARPENTER_NODE_CLASS["kind"]
    """The ``kind`` a NodePool's ``nodeClassRef`` names it by (with its name)."""
    KIND = "capacity-reservation"
    """The :class:`~gpuready.resources.base.Reservation` kind of what it selects: EC2 models a Capacity Block as an
    ODCR and Karpenter selects both alike; which one it is shows at run time only (its status' ``reservationType``)."""

    @property
    def name(self) -> Optional[str]:
        return (self.props.get("metadata") or {}).get("name")

    @property
    def reservation_terms(self) -> list[Mapping[str, Any]]:
        """``spec.capacityReservationSelectorTerms``: by ``id``, by ``tags`` (and ``ownerID``), by
        ``instanceMatchCriteria``."""
        return list((self.props.get("spec") or {}).get("capacityReservationSelectorTerms") or ())

    @property
    def reservation(self) -> Optional[Reservation]:
        """What it selects: a reservation's id, ``tags k=v,...``, ``open`` / ``targeted`` reservations, the terms
        joined by `` or ``; ``None`` when it selects none (Karpenter then launches into no reservation).
        ``falls_back`` is the NodePool's to say (:meth:`KarpenterNodePool.source`)."""
        said = [term["id"] if term.get("id") else
                " ".join(filter(None, (term.get("instanceMatchCriteria"),
                                       tags_target(term["tags"]) if term.get("tags") else "")))
                for term in self.reservation_terms]
        return Reservation(self.KIND, " or ".join(said), False) if said else None

    @property
    def caveat(self) -> Optional[str]:
        """What its reservation terms do beyond its own nodes (``None``: nothing)."""
        return None


class AutoModeNodeClass(KarpenterNodeClass):
    """An EKS Auto Mode ``NodeClass`` (``eks.amazonaws.com/v1``): read as Karpenter's, whose
    ``capacityReservationSelectorTerms`` it shares (by ``id``, or ``tags`` with an optional ``owner``: EKS user guide,
    auto-odcr)."""

    TOKEN = f"kubernetes:{sf.AUTO_MODE_NODE_CLASS_API}:NodeClass"
    REF_KIND = sf.AUTO_MODE_NODE_CLASS["kind"]

    @property
    def caveat(self) -> Optional[str]:
        """Selecting a reservation stops Auto Mode using open ODCRs for every NodeClass of the cluster."""
        return sf.AUTO_MODE_OPEN_ODCRS if self.reservation_terms else None


class KarpenterNodePool(Resource):
    """A Karpenter / EKS Auto Mode NodePool: capped by its ``nvidia.com/gpu`` limit."""

    TOKEN = f"kubernetes:{sf.NODE_POOL_API}:NodePool"
    NAME_LABEL = "karpenter.sh/nodepool"
    """The label Karpenter sets on every node it launches with the NodePool's name."""
    RESERVED_ONLY_FIX = "require karpenter.sh/capacity-type In [reserved] alone (gpuready: reservation only: true)"
    """How to keep its nodes on reserved capacity alone (the ``gpu-reservation-fallback`` policy's fix)."""

    @property
    def node_labels(self) -> dict[str, str]:
        """The labels its nodes register with: the template's, and Karpenter's NodePool label."""
        return {**self.labels, **({self.NAME_LABEL: self.name} if self.name else {})}

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.props.get("spec") or {}

    @property
    def template(self) -> Mapping[str, Any]:
        return self.spec.get("template") or {}

    @property
    def instance_types(self) -> list[str]:
        """The instance types it admits (its ``In`` requirement on the instance-type label)."""
        return [v for req in (self.template.get("spec") or {}).get("requirements") or ()
                if req.get("key") == INSTANCE_TYPE_LABEL and req.get("operator") == "In"
                for v in req.get("values") or ()]

    @property
    def name(self) -> Optional[str]:
        return (self.props.get("metadata") or {}).get("name")

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.template.get("metadata") or {}).get("labels") or {})

    @property
    def taints(self) -> list[Taint]:
        return [Taint(t.get("key", ""), t.get("value", ""), t.get("effect", ""))
                for t in (self.template.get("spec") or {}).get("taints") or ()]

    @property
    def gpu_limit(self) -> Any:
        return (self.spec.get("limits") or {}).get("nvidia.com/gpu")

    @property
    def annotations(self) -> Mapping[str, Any]:
        """``metadata.annotations``: the GPU facts of declared types and a reservation's stamps (where a component
        stamps a Karpenter pool)."""
        return (self.props.get("metadata") or {}).get("annotations") or {}

    @property
    def node_class_ref(self) -> tuple[Optional[str], Optional[str]]:
        """``spec.template.spec.nodeClassRef`` as (kind, name)."""
        ref = (self.template.get("spec") or {}).get("nodeClassRef") or {}
        return ref.get("kind"), ref.get("name")

    def node_class(self, linked: Sequence[Resource]) -> Optional[KarpenterNodeClass]:
        """The NodeClass among ``linked`` that its ``nodeClassRef`` names (Karpenter's EC2NodeClass or Auto Mode's
        NodeClass, by kind and name); ``None``: not among them (e.g. Auto Mode's built-in ``default``)."""
        return next((c for c in linked if isinstance(c, KarpenterNodeClass)
                     and (c.REF_KIND, c.name) == self.node_class_ref), None)

    @property
    def capacity_types(self) -> list[str]:
        """The ``karpenter.sh/capacity-type`` values its ``In`` requirement admits (Karpenter's default without one:
        on-demand)."""
        for req in (self.template.get("spec") or {}).get("requirements") or ():
            if req.get("key") == CAPACITY_TYPE_LABEL and req.get("operator") == "In":
                return list(req.get("values") or ())
        return [ON_DEMAND]

    @property
    def said_only(self) -> bool:
        """The stack said its nodes come from reserved capacity only (gpuready's annotation)."""
        return true(self.annotations.get(RESERVATIONS_ONLY))

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """Its capacity types in Karpenter's preference order (reserved, Spot, on-demand), and the reservations the
        NodeClass it names (:meth:`node_class`, found among ``linked``, every reader of the stack) selects: without
        one, ``reserved`` admits nothing and is left out; on-demand or Spot beside it are where Karpenter (or Auto
        Mode) falls back."""
        kinds = tuple(_KARPENTER_KINDS[k] for k in sf.KARPENTER_PREFERENCE if k in self.capacity_types)
        node_class = self.node_class(linked)
        found = node_class.reservation if node_class is not None else None
        if found is None:
            return Source(tuple(k for k in kinds if k != RESERVED) or kinds, only=self.said_only)
        fallback = any(k != RESERVED for k in kinds)
        reservation = Reservation(found.kind, found.target, fallback,
                                  **read_reservation_stamps(self.annotations))
        return Source(kinds, reservation, self.said_only)

    def row(self, name: str) -> Optional[catalog.GpuInstanceType]:
        """The GPU facts of type ``name``: its catalog row, else those annotated on the NodePool for a type the stack
        declared; ``None``: no GPUs."""
        return catalog.find("aws", name) or stamped("aws", name, (self.props.get("metadata") or {}).get("annotations"))

    @property
    def gpu_rows(self) -> list[catalog.GpuInstanceType]:
        return [row for row in map(self.row, self.instance_types) if row]

    def capacity(self) -> Optional[PoolCapacity]:
        types = tuple(self.instance_types)
        rows = self.gpu_rows
        if not rows:
            return None
        gpus = int(self.gpu_limit or 0)
        return PoolCapacity("aws", types, gpus, max(gpus / x.gpus * (x.price_usd_hour or 0.0) for x in rows),
                            tuple(t for t in types if self.row(t) is None), tuple(rows))


# Kueue (kueue.x-k8s.io/v1beta2): the objects of the job queues, as pulumi_kubernetes' CustomResource sends them
# (``apiVersion``, ``kind``, ``metadata``, ``spec``; a WorkloadPriorityClass's ``value`` beside them).


@dataclass(frozen=True)
class Quota:
    """One (flavor, resource) quota of a ClusterQueue or Cohort: exact amounts (:mod:`.quantity`); ``None`` for a
    limit left unset (no limit)."""

    flavor: str
    resource: str
    nominal: Decimal
    borrowing: Optional[Decimal]
    lending: Optional[Decimal]


class _KueueObject(Resource):
    """A Kueue object: its metadata and spec."""

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.props.get("metadata") or {}

    @property
    def name(self) -> Optional[str]:
        """``metadata.name``; ``None`` when the provider names it (the Pulumi name and a random suffix)."""
        return self.metadata.get("name")

    @property
    def annotations(self) -> Mapping[str, Any]:
        return self.metadata.get("annotations") or {}

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.props.get("spec") or {}

    @property
    def overcommit(self) -> bool:
        """Whether it carries the marker saying its quotas may exceed the GPUs on purpose."""
        return true(self.annotations.get(queue_facts.OVERCOMMIT_ANNOTATION))

    @property
    def role(self) -> Optional[str]:
        """Its ``gpuready.io/role`` label: ``operators`` on the operators' queue (a queue that is no team's);
        ``None`` on a team's queue."""
        return ((self.metadata.get("labels") or {}).get(queue_facts.ROLE_LABEL)) or None

    @property
    def fair_sharing_weight(self) -> Decimal:
        """``spec.fairSharing.weight`` (Kueue's default 1)."""
        return quantity.parse(get(self.spec, "fairSharing.weight", 1))


def _quotas(spec: Mapping[str, Any]) -> list[tuple[tuple[str, ...], Quota]]:
    """Every quota of ``spec.resourceGroups``, with the resources its group covers."""
    found = []
    for group in spec.get("resourceGroups") or ():
        covered = tuple(group.get("coveredResources") or ())
        for flavor in group.get("flavors") or ():
            for r in flavor.get("resources") or ():
                limits = [None if r.get(k) is None else quantity.parse(r[k])
                          for k in ("borrowingLimit", "lendingLimit")]
                found.append((covered, Quota(flavor.get("name", ""), r.get("name", ""),
                                             quantity.parse(r.get("nominalQuota", 0)), *limits)))
    return found


def _kueue(kind: str) -> str:
    return f"kubernetes:{queue_facts.KUEUE_API}:{kind}"


class ResourceFlavor(_KueueObject):
    """A kind of node a ClusterQueue's quota is given in: the labels Kueue adds to an admitted pod's node selector
    (which nodes it lands on) and the tolerations it adds."""

    TOKEN = _kueue("ResourceFlavor")

    @property
    def node_labels(self) -> dict[str, str]:
        return dict(self.spec.get("nodeLabels") or {})

    @property
    def tolerations(self) -> list[Mapping[str, Any]]:
        return list(self.spec.get("tolerations") or ())

    @property
    def node_taints(self) -> list[Taint]:
        """Taints its nodes carry that Kueue itself checks workloads against (rarely set)."""
        return [Taint(t.get("key", ""), t.get("value", ""), t.get("effect", ""))
                for t in self.spec.get("nodeTaints") or ()]


class ClusterQueue(_KueueObject):
    """A team's queue: quotas per flavor and resource, its cohort (whose idle quota it borrows and lends), the
    namespaces whose LocalQueues may point at it, and how it preempts."""

    TOKEN = _kueue("ClusterQueue")

    @property
    def cohort(self) -> Optional[str]:
        """``spec.cohortName`` (v1beta2; v1beta1 said ``cohort``); ``None`` outside any cohort."""
        return self.spec.get("cohortName") or None

    @property
    def namespace_selector(self) -> Optional[Mapping[str, Any]]:
        """``spec.namespaceSelector``: ``None`` (unset) matches no namespace, ``{}`` every one."""
        return self.spec.get("namespaceSelector")

    @property
    def preemption(self) -> Mapping[str, Any]:
        """``spec.preemption`` with Kueue's defaults (``Never`` everywhere) for what it leaves unset."""
        given = self.spec.get("preemption") or {}
        return {"reclaimWithinCohort": given.get("reclaimWithinCohort", "Never"),
                "withinClusterQueue": given.get("withinClusterQueue", "Never"),
                "borrowWithinCohort": {"policy": "Never", **(given.get("borrowWithinCohort") or {})}}

    @property
    def quotas(self) -> list[Quota]:
        """Every (flavor, resource) quota of its resource groups."""
        return [q for _, q in _quotas(self.spec)]

    def covered(self, flavor: str) -> tuple[str, ...]:
        """The resources the groups listing ``flavor`` cover (empty: it lists no such flavor)."""
        return tuple(r for group in self.spec.get("resourceGroups") or ()
                     if any(f.get("name") == flavor for f in group.get("flavors") or ())
                     for r in group.get("coveredResources") or ())

    @property
    def flavors(self) -> list[str]:
        """The flavors its resource groups list, in order."""
        return list(dict.fromkeys(f.get("name", "") for group in self.spec.get("resourceGroups") or ()
                                  for f in group.get("flavors") or ()))

    def gpu_quotas(self) -> list[Quota]:
        """Its quotas of ``nvidia.com/gpu``, one per flavor that gives it."""
        return [q for q in self.quotas if q.resource == queue_facts.GPU_RESOURCE]


class Cohort(_KueueObject):
    """A group of ClusterQueues lending each other their idle quota; it may hold quota of its own and a parent."""

    TOKEN = _kueue("Cohort")

    @property
    def parent(self) -> Optional[str]:
        return self.spec.get("parentName") or None

    @property
    def quotas(self) -> list[Quota]:
        return [q for _, q in _quotas(self.spec)]


class LocalQueue(_KueueObject):
    """A namespace's entry to a ClusterQueue: jobs name it by the ``kueue.x-k8s.io/queue-name`` label."""

    TOKEN = _kueue("LocalQueue")

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (the provider's ``default`` when unset)."""
        return self.metadata.get("namespace") or "default"

    @property
    def cluster_queue(self) -> Optional[str]:
        return self.spec.get("clusterQueue") or None


class WorkloadPriorityClass(_KueueObject):
    """A priority a job names (``kueue.x-k8s.io/priority-class``): ``value`` and ``description`` beside the
    metadata, as the CRD has them (no spec)."""

    TOKEN = _kueue("WorkloadPriorityClass")

    @property
    def value(self) -> int:
        return int(self.props.get("value", 0))

    @property
    def description(self) -> str:
        return str(self.props.get("description") or "")
