"""Topology-aware gangs: Kueue's Topology Aware Scheduling (TAS) for a stack's multi-node GPU pools. Pure data, no
Pulumi, no platform: each platform says, from its own facts, how its cloud labels a pool's nodes (a
:class:`Placement`); this module turns that into Kueue objects and arithmetic.

Kueue 0.19.2 (``kueue.x-k8s.io/v1beta2``, TAS beta and on by default since 0.14): a ``Topology`` lists node labels
(``spec.levels[].nodeLabel``) from the coarsest domain to the finest, ``kubernetes.io/hostname`` last; a
ResourceFlavor names it by ``spec.topologyName``; a job asks for one domain with a PodTemplate annotation
(:data:`~gpuready_components.queue_facts.TOPOLOGY_PREFERRED_ANNOTATION`, :func:`pod_template_annotations`). The
CRD's own rules, which :func:`check_levels` enforces before anything is rendered: 1 to 16 levels, each a label key,
no label twice, the hostname only as the last level. No stack setting reaches the levels (they are the platforms'
facts), so a break is a ``ValueError``, not a user's ``ConfigError``.

What TAS does (Kueue's "Topology Aware Scheduling" concept page, v0.19.2), and so when a pool gets a Topology
(:func:`visible`):

- it counts the allocatable capacity of the *Ready* nodes it sees, and admits a workload only where its pods fit on
  them. A pool that scales from zero through an autoscaler shows Kueue no nodes before admission, and a suspended
  job shows the autoscaler no pods: its jobs would wait for ever. Kueue joins TAS to the cluster autoscaler only
  through a ProvisioningRequest admission check (topology assigned after the nodes came). So a pool gets a Topology
  only when its nodes are there at admission (a fixed size: its minimum is its maximum) or it has that check;
- every workload in a ClusterQueue whose flavors all have a Topology is placed by TAS (implicitly, unconstrained);
  in a queue that mixes them, a workload that asks for a topology goes only to the flavors with one, and one that
  does not goes only to those without (``checkPodSetAndFlavorMatchForTAS``);
- it ignores pod affinities and anti-affinities: it packs pods onto nodes by capacity alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ..queue_facts import (BLOCK_NODES_ANNOTATION, BLOCK_SOURCE_ANNOTATION, GANG_LEVEL_ANNOTATION, KUEUE_API,
                           TOPOLOGY_PREFERRED_ANNOTATION)

HOSTNAME = "kubernetes.io/hostname"
"""The finest level of every Topology gpuready makes: Kueue then assigns pods to nodes itself, and replaces a failed
node of a running workload (``TASFailedNodeReplacement``, beta and on in 0.19), which needs it."""
MAX_LEVELS = 16
"""``spec.levels`` ``maxItems`` in Kueue 0.19.2's Topology CRD."""
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
"""``spec.levels[].nodeLabel``'s pattern in the CRD (and its ``maxLength`` 316 below)."""


@dataclass(frozen=True)
class Block:
    """How many nodes one domain of a pool's gang level (:attr:`Placement.ask`) holds, where the cloud says so."""

    nodes: int
    """Nodes (VMs) one domain of it holds."""
    source: str
    """Where the cloud says it (a document's address)."""


@dataclass(frozen=True)
class Placement:
    """How a cloud labels the nodes of one pool with their place in its network, as the pool's platform says."""

    levels: tuple[str, ...]
    """The cloud's node labels, coarsest domain first (``kubernetes.io/hostname`` is added after them)."""
    ask: str
    """The level a gang asks for (:data:`~gpuready_components.queue_facts.TOPOLOGY_PREFERRED_ANNOTATION`): its
    finest network domain, which Kueue widens level by level when the gang does not fit one."""
    source: str
    """Where the cloud documents the labels (a document's address)."""
    block: Optional[Block] = None
    """The size of one domain of :attr:`ask`, where the cloud states one; ``None``: not published."""

    @property
    def gang_levels(self) -> tuple[str, ...]:
        """The levels a gang may ask for, finest first: :attr:`ask`, then each coarser one (what Kueue widens to)."""
        return tuple(reversed(self.levels[:self.levels.index(self.ask) + 1]))

    @property
    def all_levels(self) -> tuple[str, ...]:
        """The Topology's levels: :attr:`levels`, then the hostname."""
        return (*self.levels, HOSTNAME)


def check_levels(levels: Sequence[str]) -> None:
    """Raise ``ValueError`` where ``levels`` break a rule of Kueue 0.19.2's Topology CRD (1 to :data:`MAX_LEVELS`
    levels, each a label key of at most 316 characters, none twice, ``kubernetes.io/hostname`` only last). The levels
    come from a platform's facts, never from a stack's settings: a break is the platform's mistake."""
    if not 1 <= len(levels) <= MAX_LEVELS:
        raise ValueError(f"a Topology has 1 to {MAX_LEVELS} levels, not {len(levels)}: {list(levels)}")
    for label in levels:
        if len(label) > 316 or not LABEL_KEY.match(label):
            raise ValueError(f"Topology level {label!r} is not a node label key")
    if len(set(levels)) != len(levels):
        raise ValueError(f"a Topology level appears twice: {list(levels)}")
    if HOSTNAME in levels[:-1]:
        raise ValueError(f"{HOSTNAME} can only be a Topology's last level: {list(levels)}")


def visible(min_nodes: int, max_nodes: int, provisioning: bool) -> bool:
    """Whether Kueue sees a pool's nodes when it admits a job (the module's docstring): a ProvisioningRequest admission
    check on the pool (``provisioning``), or a pool whose nodes are all there (its minimum is its maximum, above 0)."""
    return provisioning or 0 < max_nodes == min_nodes


def topology(name: str, placement: Placement) -> dict[str, Any]:
    """The Topology ``name`` of a pool placed by ``placement``: its levels, and where the cloud states the size of
    the level a gang asks for, that size and its source in annotations (``gpuready plan`` reads them)."""
    levels = placement.all_levels
    check_levels(levels)
    block = placement.block
    annotations = {GANG_LEVEL_ANNOTATION: placement.ask}
    if block is not None:
        annotations.update({BLOCK_NODES_ANNOTATION: str(block.nodes), BLOCK_SOURCE_ANNOTATION: block.source})
    return {"apiVersion": KUEUE_API, "kind": "Topology",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpuready"},
                         "annotations": annotations},
            "spec": {"levels": [{"nodeLabel": label} for label in levels]}}


def largest_gang(most_gpus_one_queue: int, node_gpus: int, pool_nodes: int) -> int:
    """Nodes of the largest gang a pool runs: whole nodes of ``node_gpus`` GPUs that one queue can hold there at once
    (``most_gpus_one_queue``, Kueue's arithmetic), at most the pool's ``pool_nodes``; 0 when unknown."""
    if node_gpus <= 0:
        return 0
    return min(most_gpus_one_queue // node_gpus, pool_nodes)


def fits(gang_nodes: int, block_nodes: Optional[int]) -> Optional[bool]:
    """Whether a gang of ``gang_nodes`` nodes fits one domain of ``block_nodes`` nodes; ``None`` where the cloud
    states no size."""
    return None if block_nodes is None else gang_nodes <= block_nodes


def verdict(gang_nodes: int, level: str, block: Optional[Block]) -> str:
    """What ``gpuready plan`` says of a pool's largest gang against one domain of ``level``, the level it asks
    for."""
    if block is None:
        return f"largest gang {gang_nodes} node{'' if gang_nodes == 1 else 's'}: block size not published"
    where = f"one {level} domain ({block.nodes} nodes, {block.source})"
    if fits(gang_nodes, block.nodes):
        return f"largest gang {gang_nodes} node{'' if gang_nodes == 1 else 's'} fits {where}"
    return (f"largest gang {gang_nodes} nodes does not fit {where}: Kueue places it across the next level up")


def block_of(annotations: Mapping[str, Any]) -> Optional[Block]:
    """The :class:`Block` a rendered Topology's annotations state (:func:`topology`); ``None`` when they state none or
    a size that is no whole number."""
    size = str(annotations.get(BLOCK_NODES_ANNOTATION, ""))
    if not size.isdigit():
        return None
    return Block(int(size), str(annotations.get(BLOCK_SOURCE_ANNOTATION, "")))


def gang_level(gang_levels: Mapping[str, Sequence[str]]) -> Optional[str]:
    """The level a gang of a queue asks for, from each of the queue's flavors with a topology -> its
    :attr:`Placement.gang_levels` (a queue's ``gangLevels`` output): the finest that every one of them has, so that
    Kueue may place the gang on any of them; ``None`` without such flavors or a level they share."""
    lists = [list(levels) for levels in gang_levels.values() if levels]
    if not lists:
        return None
    return next((level for level in lists[0] if all(level in other for other in lists[1:])), None)


def pod_template_annotations(level: Optional[str]) -> dict[str, str]:
    """The PodTemplate annotations with which a gang asks for one domain of ``level`` (:func:`gang_level`; ``None``:
    no annotation, the pools have no Topology). *Preferred*, not required: Kueue tries that level, then
    each one above it, and admits the gang spread over several domains when none holds it, where *required* would
    leave it pending for ever on a cluster whose free nodes are split, or while the autoscaler cannot provide nodes
    in one domain (Kueue 0.19.2's TAS page, Limitations)."""
    return {TOPOLOGY_PREFERRED_ANNOTATION: level} if level else {}
