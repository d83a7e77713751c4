"""The pieces the platforms of one cloud (or all the Kubernetes ones) share: readers of its resource types, their
describers, the offline answers to its invokes, the SDKs its extra installs, how its compute service fails a
launch, its catalog refresh and its node repair. A platform's module picks the pieces it uses; nothing here names a
platform."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Callable, Mapping, Optional

from gpuready.plan.answers import AWS as AWS_ANSWERS
from gpuready.plan.answers import AZURE as AZURE_ANSWERS
from gpuready.plan.describe import AWS as AWS_DESCRIBERS
from gpuready.plan.describe import AZURE as AZURE_DESCRIBERS
from gpuready.plan.describe import GCP as GCP_DESCRIBERS
from gpuready.plan.describe import KUBERNETES as KUBERNETES_DESCRIBERS
from gpuready.resources import aws, azure, gcp, kubernetes
from gpuready.resources.base import readers_in
from gpuready_components.platforms import GANG, SINGLE, SWEEP, Launches


@dataclass(frozen=True)
class Pieces:
    """What one cloud (or Kubernetes) brings to each platform that uses it."""

    readers: tuple[type, ...] = ()
    describers: Mapping[type, Callable[..., dict]] = field(default_factory=dict)
    answers: Mapping[str, Callable[..., dict]] = field(default_factory=dict)
    sdks: Mapping[str, str] = field(default_factory=dict)
    launches: Optional[Launches] = None
    refresh: Optional[Callable[[], ModuleType]] = None
    repair: Optional[Callable[[], ModuleType]] = None


def parts(*pieces: Pieces) -> dict[str, Any]:
    """The keyword arguments of a :class:`~gpuready_components.platforms.Platform` that ``pieces`` fill, merged."""
    launches = [p.launches for p in pieces if p.launches]
    refresh = [p.refresh for p in pieces if p.refresh]
    repair = [p.repair for p in pieces if p.repair]
    return {
        "readers": tuple(dict.fromkeys(r for p in pieces for r in p.readers)),
        "describers": MappingProxyType({k: v for p in pieces for k, v in p.describers.items()}),
        "answers": MappingProxyType({k: v for p in pieces for k, v in p.answers.items()}),
        "sdks": MappingProxyType({k: v for p in pieces for k, v in p.sdks.items()}),
        "launches": launches[0] if launches else None,
        "refresh": refresh[0] if refresh else None,
        "repair": repair[0] if repair else None,
    }


def _aws_refresh() -> ModuleType:
    from gpuready.refresh import aws as refresh

    return refresh


def _aws_repair() -> ModuleType:
    from gpuready.repair import aws as repair

    return repair


def _gcp_refresh() -> ModuleType:
    from gpuready.refresh import gcp as refresh

    return refresh


def _azure_refresh() -> ModuleType:
    from gpuready.refresh import azure as refresh

    return refresh


def _gcp_repair() -> ModuleType:
    from gpuready.repair import gcp as repair

    return repair


def _azure_repair() -> ModuleType:
    from gpuready.repair import azure as repair

    return repair


AWS = Pieces(
    readers=readers_in(aws), describers=AWS_DESCRIBERS, answers=AWS_ANSWERS,
    sdks={"pulumi_aws": "aws", "boto3": "aws", "botocore": "aws"},
    launches=Launches(
        "EC2",
        quota_fix="request more in Service Quotas (EC2: 'Running On-Demand G and VT instances' or 'Running "
                  "On-Demand P instances', or their Spot counterparts) for this region, or use a smaller type",
        capacity_fix="other zones (subnets) or GPU types (gpuready:instanceTypes), ON_DEMAND instead of SPOT, a quota "
                     "increase, or retry later",
        cause="aws autoscaling describe-scaling-activities --auto-scaling-group-name {group} --max-items 3",
        join_fix="check the instance's bootstrap: node IAM role and access entry, subnets' route to the API and the "
                 "registries, the AMI",
        quota_in_capacity=True),
    refresh=_aws_refresh, repair=_aws_repair)
"""EC2, Batch, EKS and IAM."""

GCP = Pieces(readers=readers_in(gcp), describers=GCP_DESCRIBERS, sdks={"pulumi_gcp": "gcp"},
             launches=Launches("Compute Engine"), refresh=_gcp_refresh, repair=_gcp_repair)
"""Compute Engine and GKE."""

AZURE = Pieces(readers=readers_in(azure), describers=AZURE_DESCRIBERS, answers=AZURE_ANSWERS,
               sdks={"pulumi_azure_native": "azure"}, launches=Launches("Azure"), refresh=_azure_refresh,
               repair=_azure_repair)
"""Azure compute and AKS."""

KUBERNETES = Pieces(readers=readers_in(kubernetes), describers=KUBERNETES_DESCRIBERS,
                    sdks={"pulumi_kubernetes": "k8s"})
"""The Kubernetes objects every Kubernetes platform's stack makes (Helm releases, namespaces, Karpenter's)."""


def _kubernetes_single() -> type:
    from gpuready.smoke.kubernetes import KubernetesTarget

    return KubernetesTarget


def _kubernetes_gang() -> type:
    from gpuready.smoke.kubernetes_multinode import KubernetesGangTarget

    return KubernetesGangTarget


def _kubernetes_sweep() -> type:
    from gpuready.smoke.sweep_kubernetes import KubernetesSweepTarget

    return KubernetesSweepTarget


KUBERNETES_TARGETS = MappingProxyType({SINGLE: _kubernetes_single, GANG: _kubernetes_gang, SWEEP: _kubernetes_sweep})
"""The smoke targets of a Kubernetes platform: a Job, an Indexed Job or JobSet, one Job per GPU node."""
