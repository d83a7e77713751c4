"""What every Kubernetes GPU platform component (EKS, GKE, AKS) exposes, set and registered in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import pulumi

from .. import metaflow, platforms, teams as team_rules
from ..errors import ConfigError
from ..outputs import Contract
from ..teams import TeamArgs
from . import facts, gpu_hours, health, kueue

if TYPE_CHECKING:
    from .component import K8sGpuSoftware


class KueueObject(pulumi.CustomResource):
    """A Kueue object, as ``kubernetes.apiextensions.CustomResource`` declares one (type token
    ``kubernetes:kueue.x-k8s.io/v1beta2:<Kind>``), whatever its top-level fields: the SDK's class takes ``spec``
    only, and a WorkloadPriorityClass has ``value`` and ``description`` beside it."""

    def __init__(self, name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", name, dict(obj), opts)


class GpuCluster(pulumi.ComponentResource):
    """Base of the platform components: the cluster's access, how its GPU nodes look, and their capacity."""

    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """Secret."""
    gpu_taint: dict[str, str]
    """The platform's GPU taint, as Kubernetes spells it: ``{key, value, effect}``."""
    gpu_node_taints: list[dict[str, str]]
    """Every taint the GPU nodes carry (the GPU taint, and e.g. AKS's Spot taint): what a pod must tolerate."""
    gpu_node_labels: dict[str, str]
    """Labels the GPU nodes carry from boot: what a pod selects them by."""
    software: "K8sGpuSoftware"
    gpu_sharing: Optional[str] = None
    """How the platform itself shares each GPU between pods (GKE's time-sharing, MPS or GPU partitions); the NVIDIA
    software's time-slicing or MIG otherwise (``software.sharing``)."""
    gpu_fabric: Optional[str] = None
    """The GPU nodes' fabric for NCCL across nodes (``efa``, ``ib``, ``tcpx``, ``tcpxo``); None: TCP sockets."""
    gpu_efa_interfaces: Optional[int] = None
    """EFA interfaces of each GPU node (with ``gpu_fabric`` ``efa``): the ``vpc.amazonaws.com/efa`` devices a pod
    asks for to use them all."""
    gpu_reservations: Optional[Any] = None
    """The reservations its GPU pools launch into (output ``gpuReservations``: a list of ``{pool, kind, target,
    only, start, end, count, zone}``, the facts known); None: none."""
    outputs: dict[str, Any]
    """What the component registered: the platform's output contract (``outputs.py``), for the stack to export."""
    teams: tuple[TeamArgs, ...] = ()
    """The teams sharing the GPUs (each with its Kueue queue), checked against :attr:`flavors`."""
    flavors: tuple[kueue.Flavor, ...] = ()
    """The GPU pools as Kueue's ResourceFlavors (with teams only)."""
    overcommit: bool = False
    """The teams' quotas may add up to more GPUs than the pools reach (``overcommit_quotas``)."""

    def _check_teams(self, teams: Any, pools: Sequence[team_rules.Pool], overcommit: bool,
                     gpu_namespace: str = facts.NAMESPACE) -> None:
        """Check ``teams`` against the stack's GPU ``pools`` (names, max GPUs at full scale) and the namespaces it
        installs into (:data:`facts.KUBERNETES_NAMESPACES`, :data:`facts.STACK_NAMESPACES`, and ``gpu_namespace``,
        the NVIDIA releases'): a
        :class:`~gpuready_components.errors.ConfigError` naming ``teams[i]...`` for the first mistake."""
        self.teams, self.overcommit = tuple(teams), overcommit
        team_rules.check(self.teams, pools, overcommit, reserved=(
            *facts.KUBERNETES_NAMESPACES, *facts.STACK_NAMESPACES, gpu_namespace))
        for i, team in enumerate(self.teams):  # the operators' queue (kueue.operators_queue) holds these names
            if team.name == facts.OPERATORS_QUEUE:
                raise ConfigError(f"teams[{i}].name", team.name, "the name of the operators' queue, which the stack "
                                  "makes for gpuready's own checks", "name the team otherwise")
            if team.home == facts.OPERATORS_NAMESPACE:
                key = "namespace" if team.namespace else "name"
                raise ConfigError(f"teams[{i}].{key}", team.home, "the operators' namespace, where gpuready's own "
                                  "checks run", f"give the team another {key}")

    def pool_labels(self, pool: str, labels: Mapping[str, str]) -> dict[str, str]:
        """The labels of GPU pool ``pool``'s nodes: ``labels``, and with teams the pool's own label, which its
        ResourceFlavor selects."""
        return {**labels, facts.POOL_LABEL: pool} if self.teams else dict(labels)

    def _queues(self, name: str, flavors: Sequence[kueue.Flavor], system_node_selector: Mapping[str, Any],
                provider: Any, depends_on: Sequence[Any]) -> None:
        """With teams: Kueue's chart on the system nodes, then every object :func:`kueue.objects` makes, and a
        service account for the GPU jobs in each team's namespace."""
        self.flavors = tuple(flavors)
        if not self.teams:
            return
        kueue.check(self.teams, self.flavors, self.overcommit)
        from ..sdk import require

        k8s = require("pulumi_kubernetes")
        opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on))
        ns = k8s.core.v1.Namespace(f"{name}-kueue-namespace", metadata={
            "name": facts.KUEUE_NAMESPACE, "labels": {"app.kubernetes.io/managed-by": "gpuready"}}, opts=opts)
        chart = facts.KUEUE_CHART
        release = k8s.helm.v3.Release(
            f"{name}-kueue", name="kueue", chart=chart.name, version=chart.version, namespace=ns.metadata.name,
            values=kueue.chart_values(system_node_selector, self.software.device_class_mappings),
            description=f"gpuready: job queues of the teams {', '.join(t.name for t in self.teams)}",
            atomic=True, cleanup_on_fail=True, timeout=600,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*depends_on, ns]))
        after = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[release])
        namespaces = {}
        # The queues cover every quota resource Kueue's Configuration maps a DeviceClass to (the channels').
        channels = facts.IMEX_CHANNEL_RESOURCE in self.software.device_class_mappings
        for obj in kueue.objects(self.teams, self.flavors, self.overcommit, channels):
            kind, meta = obj["kind"], obj["metadata"]
            if kind == "Namespace":
                namespaces[meta["name"]] = k8s.core.v1.Namespace(f"{name}-team-{meta['name']}", metadata=meta,
                                                                 opts=opts)
                continue
            home = namespaces.get(meta.get("namespace", ""))
            KueueObject(kueue.child_name(name, obj), obj,
                        after if home is None else pulumi.ResourceOptions(parent=self, provider=provider,
                                                                          depends_on=[release, home]))
        for home, namespace in namespaces.items():
            k8s.core.v1.ServiceAccount(
                f"{name}-team-{home}-jobs",
                metadata={"name": self.software.job_service_account, "namespace": namespace.metadata.name,
                          "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
                automount_service_account_token=False, opts=opts)
        self._gpu_hours(name, provider)

    def gpu_hours_wanted(self) -> bool:
        """Whether the teams' GPU-hours recording rules can be made: teams, an exporter of gpuready's (whose series
        carry the pod holding each GPU), and no MIG (DCGM reports no utilisation of a MIG instance)."""
        return bool(self.teams) and self.software.install_plan.provider("dcgm-exporter") in health.EXPORTER_JOBS \
            and (self.gpu_sharing or self.software.sharing) != "mig"

    def _gpu_hours(self, name: str, provider: Any) -> None:
        """The teams' GPU-hours recording rules (:mod:`~gpuready_components.k8s_gpu.gpu_hours`): a PrometheusRule
        beside the GPU alerts (same namespace, same labels), where the alerts' is made."""
        alerts = self.software.install_plan.prometheus_rule
        if alerts is None or not self.gpu_hours_wanted():
            return
        from ..sdk import require

        k8s = require("pulumi_kubernetes")
        job = health.EXPORTER_JOBS[self.software.install_plan.provider("dcgm-exporter")]
        rule = gpu_hours.prometheus_rule(alerts["metadata"]["namespace"], self.teams, exporter_job=job,
                                         labels=alerts["metadata"]["labels"])
        k8s.apiextensions.CustomResource(
            f"{name}-gpu-hours", api_version=rule["apiVersion"], kind=rule["kind"],
            metadata={**rule["metadata"], "namespace": self.software.namespace}, spec=rule["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.software]))

    def _gpu_nodes(self, platform: str, labels: Mapping[str, str],
                   extra_taints: Sequence[facts.Taint] = ()) -> facts.Taint:
        """Record the GPU nodes' taints and labels; returns the platform's GPU taint."""
        taint = platforms.node_facts(platform).taint
        self.gpu_taint = {"key": taint.key, "value": taint.value, "effect": taint.effect}
        self.gpu_node_taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in (taint, *extra_taints)]
        self.gpu_node_labels = dict(labels)
        return taint

    def _register(self, contract: Contract, cluster_name: pulumi.Output[str], kubeconfig: pulumi.Output[str],
                  capacity: Any, **extra: Any) -> None:
        """Set the access outputs and register exactly the outputs of ``contract`` (``extra``: the platform's own,
        its GPU pool's name included), kept as :attr:`outputs` for the stack to export."""
        self.cluster_name, self.kubeconfig = cluster_name, kubeconfig
        teams = kueue.team_outputs(self.teams, self.flavors, kueue.Profile(
            self.software.job_service_account, self.gpu_node_labels, self.gpu_node_taints))
        # With teams, a job outside their namespaces escapes every quota: the stack's profile is the first team's
        # (each team has its own, teams[].metaflowProfile).
        profile = teams[0]["metaflowProfile"] if teams else metaflow.kubernetes_profile(
            namespace=self.software.job_namespace, service_account=self.software.job_service_account,
            node_labels=self.gpu_node_labels, taints=self.gpu_node_taints)
        self.outputs = contract.values({
            "platform": contract.platform,
            "clusterName": cluster_name,
            "kubeconfig": kubeconfig,
            **extra,
            "gpuTaint": self.gpu_taint,
            "gpuNodeTaints": self.gpu_node_taints,
            "gpuNodeLabels": self.gpu_node_labels,
            "gpuNamespace": self.software.namespace,
            "gpuComputeDomains": platforms.node_facts(contract.platform).nvlink_domain_label
            if self.software.compute_domains else None,
            "gpuFabric": self.gpu_fabric,
            "gpuSharing": self.gpu_sharing or self.software.sharing,
            "gpuDeviceClass": self.software.device_class,
            "gpuEfaInterfaces": self.gpu_efa_interfaces,
            "gpuModels": list(capacity.gpu_models),
            "maxGpusPerNode": capacity.max_gpus_per_node,
            "maxGpus": capacity.max_gpus,
            "maxUsdPerHour": capacity.max_usd_per_hour,
            "metaflowProfile": profile,
            "gpuReservations": self.gpu_reservations,
            "teams": teams or None,
            "operatorsQueue": kueue.operators_output(self.flavors) if self.teams else None,
        })
        self.register_outputs(self.outputs)
