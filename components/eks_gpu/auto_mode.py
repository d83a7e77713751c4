"""EKS Auto Mode on a capacity reservation: the custom ``eks.amazonaws.com/v1`` NodeClass the GPU NodePool points at.

Without a reservation the GPU NodePool uses Auto Mode's built-in ``default`` NodeClass. With one, a custom NodeClass
``gpuready-gpu`` selects it (``capacityReservationSelectorTerms``, by id or tags: EKS user guide, "Control deployment
of workloads into Capacity Reservations with EKS Auto Mode"), and the NodePool admits ``reserved`` first, which Auto
Mode launches before on-demand and Spot. A custom NodeClass must name what the built-in one takes from the cluster
(EKS user guide, "Create a Node Class for Amazon EKS", Node Class Specification: ``role``, ``subnetSelectorTerms``,
``securityGroupSelectorTerms`` are required): the Auto Mode node role (the cluster's ``computeConfig.nodeRoleArn``),
the GPU subnets by id, and the cluster security group by id (EKS's managed policies modify only ``eks-cluster-sg-*``
groups: EKS user guide, auto-networking, load balancing considerations).

The same role needs no new access entry: EKS creates the node role's access entry when it creates the cluster with
the built-in node pools, and a new one is needed only for another role (create-node-class, Considerations).

Configuring ``capacityReservationSelectorTerms`` on any NodeClass stops Auto Mode launching into open ODCRs for every
NodeClass of the cluster (auto-odcr's warning; :data:`~gpuready_components.k8s_gpu.scalers.AUTO_MODE_OPEN_ODCRS`): the plan and the
docs say so.
"""

from __future__ import annotations

from typing import Any, Sequence

import pulumi

from ..sdk import require
from ..k8s_gpu import scalers as sf
from .karpenter import reservation_terms
from .reservation import CapacityReservationArgs

k8s = require("pulumi_kubernetes")

def node_class(role_name: Any, subnet_ids: Any, security_group_id: Any,
               reserved: CapacityReservationArgs) -> dict[str, Any]:
    """The GPU NodeClass on a reservation: the node role (by name), the GPU subnets and the cluster security group
    (each by id), and the reservation's ``capacityReservationSelectorTerms``
    (:func:`~.karpenter.reservation_terms`: an id or tags; Auto Mode takes no other term, checked earlier)."""
    return {
        "apiVersion": sf.AUTO_MODE_NODE_CLASS_API, "kind": sf.AUTO_MODE_RESERVED_NODE_CLASS["kind"],
        "metadata": {"name": sf.AUTO_MODE_RESERVED_NODE_CLASS["name"],
                     "labels": {"app.kubernetes.io/managed-by": "gpuready"}},
        "spec": {
            "role": role_name,
            "subnetSelectorTerms": pulumi.Output.from_input(subnet_ids).apply(lambda ids: [{"id": i} for i in ids]),
            "securityGroupSelectorTerms": [{"id": security_group_id}],
            "capacityReservationSelectorTerms": reservation_terms(reserved),
        },
    }


def install(parent: pulumi.Resource, name: str, cluster: Any, node_role: Any, subnet_ids: Any, provider: Any,
            depends_on: Sequence[pulumi.Resource], reserved: CapacityReservationArgs) -> Any:
    """The NodeClass of :func:`node_class` (child ``<name>-gpu-nodeclass``), after the cluster and the node role's
    policies; returns it, for the NodePool to wait on."""
    spec = node_class(node_role.name, subnet_ids, cluster.vpc_config.cluster_security_group_id, reserved)
    return k8s.apiextensions.CustomResource(
        f"{name}-gpu-nodeclass", api_version=spec["apiVersion"], kind=spec["kind"], metadata=spec["metadata"],
        spec=spec["spec"], opts=pulumi.ResourceOptions(parent=parent, provider=provider,
                                                       depends_on=[cluster, *depends_on]))
