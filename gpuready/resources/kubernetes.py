"""Readers of Kubernetes objects the stacks create: Helm releases, namespaces, quotas, Karpenter NodePools."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from gpuready_components import catalog
from gpuready_components.eks_gpu import scaler_facts as sf
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready_components.k8s_gpu.facts import Taint

from .base import PoolCapacity, Resource, get, plain, stamped

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


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
    def dcgm_exporter(self) -> bool:
        """Whether it runs a DCGM exporter (its chart, or the GPU Operator's)."""
        return self.chart == "dcgm-exporter" or (self.chart == "gpu-operator" and
                                                 bool(self.value("dcgmExporter.enabled", True)))


Namespace = plain("Namespace", "kubernetes:core/v1:Namespace")
ResourceQuota = plain("ResourceQuota", "kubernetes:core/v1:ResourceQuota")


class KarpenterNodePool(Resource):
    """A Karpenter / EKS Auto Mode NodePool: capped by its ``nvidia.com/gpu`` limit."""

    TOKEN = f"kubernetes:{sf.NODE_POOL_API}:NodePool"

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
