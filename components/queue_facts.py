"""Facts of the job queues that every platform's queueing and every reader of it share: Kueue's API, the resource a
GPU quota is counted in, and the marker that says a stack's quotas exceed its GPUs on purpose."""

from __future__ import annotations

KUEUE_API = "kueue.x-k8s.io/v1beta2"
"""Kueue's API version (v0.19.2 stores v1beta2; v1beta1 is served but deprecated): the kueue.x-k8s.io CRDs."""

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource NVIDIA's device plugin advertises: what a Kueue GPU quota is counted in."""

OVERCOMMIT_ANNOTATION = "gpuready.io/overcommit"
"""Annotation saying that quotas above the GPUs the pools reach are meant (``gpuready:overcommitQuotas``): set to
``"true"`` on the Cohort, it covers every ClusterQueue in that cohort; on a ClusterQueue, that queue alone. The policy
rule ``queue-quota-within-capacity`` and ``gpuready plan`` read it; nothing in Kueue does."""

ROLE_LABEL = "gpuready.io/role"
"""Label of a ClusterQueue that is not a team's: ``operators`` (:data:`OPERATORS_ROLE`) on the operators' queue, the
queue of the platform's own checks (``gpuready smoke``, ``gpuready sweep`` without ``--team``). The readers of a
stack's teams (``gpuready plan``, the policy pack) leave such a queue out of the teams."""
OPERATORS_ROLE = "operators"

TOPOLOGY_PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
"""The PodTemplate annotation with which a job asks Kueue's Topology Aware Scheduling for one domain of a level
(value: its node label), preferably: Kueue widens to the levels above when none holds it."""
TOPOLOGY_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
"""The same, required: Kueue admits the job only inside one domain of that level."""
TOPOLOGY_UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
"""The PodTemplate annotation (``"true"``) with which a job asks for Topology Aware Scheduling with no domain: what
lets it onto a flavor with a Topology in a ClusterQueue whose other flavors have none (Kueue 0.19.2 gives a job
that asks for no topology only the flavors without one there)."""
GANG_LEVEL_ANNOTATION = "gpuready.io/gang-level"
"""Annotation of a Topology gpuready makes: the level a gang on its pools asks for (the smoke and ``gpuready plan``
read it)."""
BLOCK_NODES_ANNOTATION = "gpuready.io/block-nodes"
"""Annotation of a Topology gpuready makes: the nodes one domain of its gang level holds, where the cloud states it."""
BLOCK_SOURCE_ANNOTATION = "gpuready.io/block-source"
"""Annotation of a Topology gpuready makes: where the cloud states that size."""
