"""``K8sGpuSoftware``: the NVIDIA GPU software of any Kubernetes cluster, as pinned Helm releases."""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from .. import platforms
from ..sdk import require
from . import facts, health
from .args import K8sGpuSoftwareArgs
from .burn_in import manifests as burn_in_manifests
from .install import InstallPlan, node_taints, plan
from .validation import known_types

k8s = require("pulumi_kubernetes")


class K8sGpuSoftware(pulumi.ComponentResource):
    """A privileged namespace and the Helm releases :func:`~gpuready_components.k8s_gpu.install.plan` decides.

    Give the cluster's Kubernetes provider in ``opts.providers`` (or ``opts.provider``); the children inherit it.
    """

    namespace: Optional[pulumi.Output[str]]
    """``None`` when the platform provides everything and no release is needed."""
    release_names: pulumi.Output[list[str]]
    install_plan: InstallPlan
    """What each release installs, and what the node image already ships."""
    job_namespace: str
    job_service_account: str
    """The service account GPU jobs run as, in ``job_namespace``."""
    outputs: dict[str, Any]
    """What the component registered (``outputs.SOFTWARE_OUTPUTS``)."""

    def __init__(self, name: str, args: K8sGpuSoftwareArgs,
                 opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(facts.TYPE_TOKEN, name, None, opts)
        self.install_plan = install = plan(args)
        self.job_namespace, self.job_service_account = args.options.job_namespace, args.options.job_service_account
        self.sharing = "time-slicing" if args.options.time_slicing_replicas else "mig" if args.options.mig else None
        """How the NVIDIA software shares each GPU between pods on purpose; None: each GPU scheduled whole."""
        self.device_class = facts.DRA_DEVICE_CLASS if args.options.install == facts.DRA else None
        """The DeviceClass pods claim GPUs of (``install: dra``); None: pods ask for ``nvidia.com/gpu``."""
        self.compute_domains = args.options.compute_domains
        """Whether each multi-node job gets a ComputeDomain (``computeDomains``, with ``install: dra``)."""
        self.device_class_mappings = {**facts.DRA_KUEUE_MAPPINGS, **(
            facts.DRA_CHANNEL_KUEUE_MAPPINGS if self.compute_domains else {})} if self.device_class else {}
        """Kueue's quota resource -> the DeviceClasses charged to it (``install: dra``; with ``compute_domains`` the
        ComputeDomains' channels too), for Kueue's Configuration."""
        k8s.core.v1.ServiceAccount(
            f"{name}-jobs",
            metadata={"name": self.job_service_account, "namespace": self.job_namespace,
                      "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self))
        if not install.releases and args.options.burn_in is None:
            # e.g. GKE with its own driver, device plugin and managed DCGM: nothing to add
            self.namespace = None
            self.release_names = pulumi.Output.from_input([])
            self.outputs = {"namespace": None, "releases": [],
                            "nodeSoftware": {s: install.provider(s) for s in facts.NODE_SOFTWARE}}
            self.register_outputs(self.outputs)
            return
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # A plain dict, not ObjectMetaArgs: loading pulumi_kubernetes.meta.v1 costs a tenth of a second per plan.
            metadata={"name": args.options.namespace,
                      "labels": {**facts.PRIVILEGED_NAMESPACE_LABELS, "app.kubernetes.io/managed-by": "gpuready"}},
            opts=pulumi.ResourceOptions(parent=self))
        # GKE refuses the charts' system-node-critical pods outside kube-system until this quota admits them.
        quota = [k8s.core.v1.ResourceQuota(
            f"{name}-critical-pods",
            metadata={**install.resource_quota["metadata"], "namespace": namespace.metadata.name},
            spec=install.resource_quota["spec"],
            opts=pulumi.ResourceOptions(parent=self))] if install.resource_quota else []
        releases = []
        for release in install.releases:
            releases.append(k8s.helm.v3.Release(
                f"{name}-{release.key}",
                name=release.chart.name.rsplit("/", 1)[-1],  # an OCI chart's release: the reference's last part
                chart=release.chart.name,
                version=release.chart.version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.chart.repo) if release.chart.repo
                else None,
                namespace=namespace.metadata.name,
                values=release.values,
                description=f"gpuready: installs {', '.join(release.installs)}; the node image ships "
                            f"{', '.join(sorted(install.node_image.ships)) or 'no NVIDIA software'}",
                atomic=True,
                cleanup_on_fail=True,
                timeout=900,
                opts=pulumi.ResourceOptions(parent=self, depends_on=quota)))
        if install.prometheus_rule is not None:  # the Prometheus Operator's CRD is in the cluster already
            rule = install.prometheus_rule
            k8s.apiextensions.CustomResource(
                f"{name}-gpu-alerts", api_version=rule["apiVersion"], kind=rule["kind"],
                metadata={**rule["metadata"], "namespace": namespace.metadata.name}, spec=rule["spec"],
                opts=pulumi.ResourceOptions(parent=self))
            dashboard = health.dashboard_config_map(args.options.namespace)
            k8s.core.v1.ConfigMap(
                f"{name}-gpu-dashboard", metadata={**dashboard["metadata"], "namespace": namespace.metadata.name},
                data=dashboard["data"], opts=pulumi.ResourceOptions(parent=self))
        if args.options.burn_in is not None:
            self._burn_in(name, args, namespace, [*releases, *quota])
        self.namespace = namespace.metadata.name
        self.release_names = pulumi.Output.all(*[r.name for r in releases])
        self.outputs = {
            "namespace": self.namespace,
            "releases": self.release_names,
            "nodeSoftware": {s: install.provider(s) for s in (*facts.NODE_SOFTWARE, *(
                (facts.DRA_DRIVER,) if self.device_class else ()))},
        }
        self.register_outputs(self.outputs)

    def _burn_in(self, name: str, args: K8sGpuSoftwareArgs, namespace, releases: list) -> None:
        """The burn-in's ConfigMap, RBAC and daemonset (after the releases: it needs the device software up)."""
        objects = burn_in_manifests(args.options.namespace, platforms.node_facts(args.platform), node_taints(args),
                                    args.options.burn_in, driver_root=platforms.node_images()[args.node_image].driver_root,
                                    types=known_types(args))
        kinds = {"ConfigMap": k8s.core.v1.ConfigMap, "ServiceAccount": k8s.core.v1.ServiceAccount,
                 "ClusterRole": k8s.rbac.v1.ClusterRole, "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
                 "DaemonSet": k8s.apps.v1.DaemonSet}
        for obj in objects:
            # Top-level fields are keyword arguments (snake_case); nested dicts keep the API's camelCase.
            body = {"role_ref" if k == "roleRef" else k: v for k, v in obj.items()
                    if k not in ("apiVersion", "kind", "metadata")}
            metadata = dict(obj["metadata"])
            if "namespace" in metadata:
                metadata["namespace"] = namespace.metadata.name
            kinds[obj["kind"]](f"{name}-burn-in-{obj['kind'].lower()}", metadata=metadata, **body,
                               opts=pulumi.ResourceOptions(parent=self, depends_on=releases))
