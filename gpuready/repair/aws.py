"""Node repair on EKS: a managed node group's instance through its Auto Scaling group, a Karpenter node through its
NodeClaim.

- Managed node groups: the instance id from the node's ``spec.providerID`` (``aws:///ZONE/i-...``); its group and
  lifecycle state from Auto Scaling ``DescribeAutoScalingInstances``; the pool's size is the group's
  ``DesiredCapacity`` (``DescribeAutoScalingGroups``); something is under way when the lifecycle state is other
  than ``InService`` or the EC2 state other than ``running`` (``DescribeInstances``). Reboot: EC2
  ``RebootInstances``; replace: ``TerminateInstanceInAutoScalingGroup`` with ``ShouldDecrementDesiredCapacity``
  false, so the group launches a new instance (the request shapes are botocore's ``autoscaling`` 2011-01-01 and
  ``ec2`` 2016-11-15 models, which the tests check them against).
- Karpenter (a node labelled ``karpenter.sh/nodepool``, Karpenter v1 ``labels.go`` ``NodePoolLabelKey``): the
  machine is its NodeClaim (``karpenter.sh/v1``, ``status.nodeName`` the node), the pool its NodePool, whose size is
  the number of its NodeClaims; something is under way when the NodeClaim has a ``deletionTimestamp``. Replace:
  delete the NodeClaim (Karpenter drains the node, terminates the instance and launches another: the core does not
  drain). Karpenter has no reboot: a failure a reboot cures is replaced too, and the audit says so.

The region is the one the stack's kubeconfig names (``aws eks get-token ... --region R``, as the eks stack writes
it), else the SDK's default."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Optional

from ..errors import UserError
from . import Machine

KARPENTER_POOL = "karpenter.sh/nodepool"
"""The label Karpenter puts on its nodes: the NodePool's name (Karpenter v1 ``labels.go``, ``NodePoolLabelKey``)."""
NODECLAIMS = ("karpenter.sh", "v1", "nodeclaims")
"""Karpenter's NodeClaim API: group, version, plural (cluster-scoped)."""
INSTANCE = re.compile(r"^aws:///[^/]*/(i-[0-9a-f]{8,17})$")
"""An EKS node's ``spec.providerID``: ``aws:///us-west-2a/i-0123456789abcdef0`` (the kubelet's AWS cloud provider)."""
TIMEOUTS = (3.0, 10.0)
"""Seconds to connect and to read, for every call."""


def region(outputs: Mapping[str, Any]) -> Optional[str]:
    """The region the stack's kubeconfig names (``--region`` of its ``aws eks get-token`` command), or None."""
    text = outputs.get("kubeconfig")
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    for user in (data or {}).get("users") or () if isinstance(data, dict) else ():
        args = [str(a) for a in (((user or {}).get("user") or {}).get("exec") or {}).get("args") or ()]
        for i, arg in enumerate(args):
            if arg == "--region" and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith("--region="):
                return arg.split("=", 1)[1]
    return None


def repairer(outputs: Mapping[str, Any], api_client: Any = None, **endpoints: Any) -> "AwsRepairer":
    """The repairer of an eks stack (``outputs``); ``api_client``: the cluster's Kubernetes ApiClient (Karpenter's
    NodeClaims); ``endpoints``: ``endpoint_url`` for the AWS clients (tests; otherwise AWS_ENDPOINT_URL or AWS's)."""
    return AwsRepairer(region(outputs), api_client, endpoints.get("endpoint_url"))


class AwsRepairer:
    """:class:`gpuready.repair.Repairer` for managed node groups and Karpenter (see the module)."""

    def __init__(self, region_name: Optional[str], api_client: Any = None, endpoint_url: Optional[str] = None) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            from gpuready_components.sdk import install_command

            raise UserError(f"boto3 is not installed: {install_command('aws')}") from None
        session = boto3.session.Session(region_name=region_name)

        def client(service: str, attempts: int) -> Any:
            config = Config(retries={"mode": "standard", "total_max_attempts": attempts},
                            connect_timeout=TIMEOUTS[0], read_timeout=TIMEOUTS[1])
            return session.client(service, config=config, endpoint_url=endpoint_url)
        self.autoscaling, self.ec2 = client("autoscaling", 3), client("ec2", 3)
        """Reads: botocore retries passing faults (3 tries)."""
        self.autoscaling_act, self.ec2_act = client("autoscaling", 1), client("ec2", 1)
        """Reboot and replace: one try each; the core retries, reading the machine's state between tries."""
        self.api_client = api_client
        self.claims: dict[str, dict] = {}
        """NodeClaim name -> the NodeClaim, for each Karpenter machine :meth:`machine` found."""

    def _custom(self) -> Any:
        if self.api_client is None:
            raise UserError("a Karpenter node's NodeClaim is read through the cluster's API, and no client was given")
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    def drains(self, machine: Machine) -> bool:
        """Karpenter drains a node whose NodeClaim is deleted; a managed node group's instance is drained by us."""
        return machine.id in self.claims

    def machine(self, node: dict) -> Optional[Machine]:
        meta = node.get("metadata") or {}
        name, labels = meta.get("name", ""), meta.get("labels") or {}
        if KARPENTER_POOL in labels:
            return self._karpenter(name, labels[KARPENTER_POOL])
        found = INSTANCE.match(str((node.get("spec") or {}).get("providerID") or ""))
        if not found:
            return None
        instance = found.group(1)
        groups = self.autoscaling.describe_auto_scaling_instances(InstanceIds=[instance])["AutoScalingInstances"]
        if not groups:  # not in an Auto Scaling group: EKS Auto Mode, or self-managed
            return None
        group = groups[0]["AutoScalingGroupName"]
        return Machine(name, group, instance, f"instance {instance} of Auto Scaling group {group}")

    def _karpenter(self, node: str, pool: str) -> Optional[Machine]:
        every = self._custom().list_cluster_custom_object(*NODECLAIMS, label_selector=f"{KARPENTER_POOL}={pool}",
                                                          _request_timeout=TIMEOUTS)
        claim = next((c for c in every.get("items") or () if (c.get("status") or {}).get("nodeName") == node), None)
        if claim is None:
            return None
        name = claim["metadata"]["name"]
        self.claims[name] = claim
        instance = INSTANCE.match(str((claim.get("status") or {}).get("providerID") or ""))
        return Machine(node, pool, name, f"NodeClaim {name} of Karpenter NodePool {pool}"
                       + (f", instance {instance.group(1)}" if instance else ""))

    def pool_size(self, machine: Machine) -> int:
        if machine.id in self.claims:
            every = self._custom().list_cluster_custom_object(
                *NODECLAIMS, label_selector=f"{KARPENTER_POOL}={machine.pool}", _request_timeout=TIMEOUTS)
            return len(every.get("items") or ())
        groups = self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[machine.pool])
        return int(groups["AutoScalingGroups"][0]["DesiredCapacity"]) if groups["AutoScalingGroups"] else 0

    def under_way(self, machine: Machine) -> Optional[str]:
        if machine.id in self.claims:
            from kubernetes.client.exceptions import ApiException

            try:
                claim = self._custom().get_cluster_custom_object(*NODECLAIMS, machine.id, _request_timeout=TIMEOUTS)
            except ApiException as error:
                if error.status == 404:
                    return f"NodeClaim {machine.id} is gone"
                raise
            deleting = claim["metadata"].get("deletionTimestamp")
            return f"NodeClaim {machine.id} is being deleted (since {deleting})" if deleting else None
        found = self.autoscaling.describe_auto_scaling_instances(InstanceIds=[machine.id])["AutoScalingInstances"]
        state = found[0]["LifecycleState"] if found else None
        if state != "InService":
            return f"Auto Scaling lifecycle state {state}" if state else \
                f"instance {machine.id} has left Auto Scaling group {machine.pool}"
        reservations = self.ec2.describe_instances(InstanceIds=[machine.id])["Reservations"]
        ec2_state = next((i["State"]["Name"] for r in reservations for i in r["Instances"]), None)
        return None if ec2_state == "running" else f"EC2 state {ec2_state or 'unknown'}"

    def reboot(self, machine: Machine) -> str:
        if machine.id in self.claims:
            return self._delete_claim(machine) + " (Karpenter has no reboot: the node is replaced)"
        answer = self.ec2_act.reboot_instances(InstanceIds=[machine.id])
        return f"EC2 RebootInstances accepted (request {answer['ResponseMetadata'].get('RequestId')})"

    def replace(self, machine: Machine) -> str:
        if machine.id in self.claims:
            return self._delete_claim(machine)
        answer = self.autoscaling_act.terminate_instance_in_auto_scaling_group(
            InstanceId=machine.id, ShouldDecrementDesiredCapacity=False)
        activity = answer.get("Activity") or {}
        return f"Auto Scaling terminates it and launches a new instance (activity {activity.get('ActivityId')}, " \
               f"{activity.get('StatusCode')}; request {answer['ResponseMetadata'].get('RequestId')})"

    def _delete_claim(self, machine: Machine) -> str:
        self._custom().delete_cluster_custom_object(*NODECLAIMS, machine.id, _request_timeout=TIMEOUTS)
        return f"NodeClaim {machine.id} deleted: Karpenter drains the node, terminates its instance and launches " \
            "another"
