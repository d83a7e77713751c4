"""Azure's built-in roles that gpuready's components assign, by id (the same in every tenant: Azure docs, "Azure
built-in roles"), with their names, for the components that assign them and ``gpuready plan``, which names them."""

from __future__ import annotations

from types import MappingProxyType

CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
"""Built-in role "Azure Kubernetes Service RBAC Cluster Admin": with Azure RBAC on, what lets a principal manage
every Kubernetes object (the namespace and Helm releases of the GPU software)."""
CONTRIBUTOR_ROLE = "b24988ac-6180-42a0-ab88-20f7382dd24c"
"""Built-in role "Contributor": what the cluster's user-assigned identity needs on the capacity reservation group's
resource group (AKS docs, "Assign capacity reservation groups to AKS node pools")."""
NAMES = MappingProxyType({CLUSTER_ADMIN_ROLE: "Azure Kubernetes Service RBAC Cluster Admin",
                          CONTRIBUTOR_ROLE: "Contributor"})
"""Role id -> its name."""
