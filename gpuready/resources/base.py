"""What every reader shares: the wrapped inputs and lazy reading; :func:`readers_in` lists a module's readers for the
platforms that carry them."""

from __future__ import annotations

import dataclasses
import hashlib

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Optional, Sequence

from gpuready_components import catalog, platforms
from gpuready_components.capacity import RESERVATIONS_ONLY, read_reservation_stamps
from gpuready_components.k8s_gpu.facts import TAINT_EFFECTS_K8S
from gpuready_components.k8s_gpu.facts import Taint


def get(props: Any, path: str, default: Any = None) -> Any:
    """``props['a']['b']`` for ``path`` ``a.b``; ``default`` where any step is missing."""
    for part in path.split("."):
        if not isinstance(props, Mapping) or part not in props:
            return default
        props = props[part]
    return props


def dig(props: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """``props['a'].get('b', default)`` for ``path`` ``a.b``, a missing or empty step read as ``{}``. Unlike
    :func:`get`, a step that is not a mapping (a masked ``[secret]``) raises ``AttributeError``, so that
    ``gpuready plan`` describes such a resource from its real inputs and redacts them."""
    *steps, last = path.split(".")
    for step in steps:
        props = props.get(step) or {}
    return props.get(last, default)


_EFFECTS = {api: k8s for k8s, api in TAINT_EFFECTS_K8S.items()}


def stamped(cloud: str, name: str, stamps: Any) -> Optional[catalog.GpuInstanceType]:
    """The GPU facts a component stamped for type ``name`` in ``stamps`` (a resource's tags or annotations) when the
    stack declared the type (``gpuready:extraInstanceTypes``, :meth:`catalog.Catalog.stamps`); ``None`` without one.
    Only that key is read: an unknown tag beside it (a preview's) stays unread."""
    return catalog.stamped(cloud, name, stamps.get(catalog.STAMP_PREFIX + name)) if isinstance(stamps, Mapping) \
        else None


def api_taint(taint: Mapping[str, Any]) -> Taint:
    """A taint as the EKS and GKE APIs spell it (``effect: NO_SCHEDULE``), as Kubernetes spells it."""
    effect = taint.get("effect", "")
    return Taint(taint.get("key", ""), taint.get("value", ""), _EFFECTS.get(effect, effect))


def true(value: Any) -> bool:
    """A boolean input, which providers also take as the string ``"true"``."""
    return value is True or str(value).lower() == "true"


def ec2_id(prefix: str, name: str) -> str:
    """An id of EC2's shape (``subnet-`` and 17 hex digits) that ``name`` always gets offline."""
    return f"{prefix}-{hashlib.sha256(name.encode()).hexdigest()[:17]}"


@dataclass(frozen=True)
class Site:
    """Where an offline plan pretends to create resources: what stand-in outputs are made of."""

    region: str
    account: str
    gcp_project: str
    azure_subscription: str


@dataclass(frozen=True)
class Resource:
    """A rendered resource's inputs, read as facts. Properties read only the inputs they need, so an unknown value
    (a preview's) raises only where it is read."""

    TOKEN: ClassVar[str] = ""
    ID_PREFIX: ClassVar[str] = ""
    """EC2's id shape (``subnet-`` and 17 hex digits), which other APIs and CRDs check; '' for ``NAME-id``."""
    props: Mapping[str, Any]

    @classmethod
    def stand_in(cls, name: str, state: Mapping[str, Any], site: Site) -> tuple[Optional[str], dict[str, Any]]:
        """The id (``None``: the default) and the outputs the cloud computes on create that programs read back, as
        an offline plan stands them in; ``state`` holds the inputs (and ``name``)."""
        return None, {}


@dataclass(frozen=True)
class PoolCapacity:
    """The most GPU capacity one pool can scale to, from the catalog (and the facts of declared types)."""

    cloud: str
    instance_types: tuple[str, ...]
    max_gpus: int
    max_usd_per_hour: float
    unknown_types: tuple[str, ...]
    """Types with no GPU facts (not in the catalog, not declared by the stack): no GPUs, no price."""
    rows: tuple[catalog.GpuInstanceType, ...]
    """The GPU facts of its types (declared types' unpriced)."""


@dataclass(frozen=True)
class Repair:
    """How a platform repairs a pool's failing nodes, as the pool's inputs say."""

    on: bool
    parallel: Optional[float] = None
    """The share of the pool's nodes repaired at once (1.0: all of them); ``None``: the platform's own pace."""
    stops_above: Optional[float] = None
    """The share of unhealthy nodes above which repair stops; ``None``: it never stops (or, with ``own_limits``, the
    platform's own rule)."""
    own_limits: bool = False
    """The platform bounds repair itself (GKE, AKS): nothing in the pool to set."""


RESERVED = "reserved"
ON_DEMAND = "on-demand"
SPOT = "spot"
FLEX_START = "flex-start"
CAPACITY_KINDS = (RESERVED, ON_DEMAND, SPOT, FLEX_START)
"""Where a pool's nodes come from, in the order ``gpuready plan`` shows them: capacity bought ahead (a Capacity
Block, an ODCR, a GKE reservation, an Azure capacity reservation group), on-demand, Spot, and capacity a queue waits
for (GKE's Dynamic Workload Scheduler flex-start)."""


@dataclass(frozen=True)
class Reservation:
    """Reserved capacity a pool launches into, as its inputs (and the resources they name) say."""

    kind: str
    """The cloud's word for it: ``capacity-block``, ``odcr``, ``reservation`` (GKE), ``capacity-reservation-group``."""
    target: str
    """What is targeted: the reservation's id, name or ARN; ``open`` / ``any`` for any matching one."""
    falls_back: bool
    """Nodes launch as on-demand (or Spot) when the reservation is full, ended or absent."""
    prepaid: bool = True
    """Paid whether used or not (every reservation gpuready knows is: a Capacity Block up front, the others by the
    hour)."""
    start: Optional[str] = None
    """When it starts (ISO 8601, UTC), when the inputs say."""
    end: Optional[str] = None
    """When it ends (ISO 8601, UTC), when the inputs say."""
    count: Optional[int] = None
    """Instances (nodes) reserved, when the inputs say."""
    zone: Optional[str] = None
    """Its zone, when the inputs say."""

    def __str__(self) -> str:
        return f"{self.kind} {self.target}"


@dataclass(frozen=True)
class Source:
    """Where a pool's nodes come from: the capacity kinds it may launch (:data:`CAPACITY_KINDS`, preferred first)
    and the reservation it launches into."""

    kinds: tuple[str, ...] = (ON_DEMAND,)
    reservation: Optional[Reservation] = None
    only: bool = False
    """The stack said reservations only (:data:`~gpuready_components.capacity.RESERVATIONS_ONLY` on the pool): a kind
    other than ``reserved`` (or ``flex-start``) among ``kinds`` is then a fault."""

    @property
    def falls_back(self) -> bool:
        """It may launch on-demand or Spot nodes (past its reservation, or with none)."""
        return ON_DEMAND in self.kinds or SPOT in self.kinds


class GpuPool(Resource):
    """Capacity that launches GPU instances: a Batch compute environment, a node group, a node pool, an agent pool."""

    CLOUD: ClassVar[str] = ""
    TAGS: ClassVar[str] = "tags"
    """What the platform calls cost-allocation keys: ``tags`` (GCP: ``labels``)."""
    LAUNCH_TEMPLATE_INPUT: ClassVar[str] = ""
    """The input built from the pool's launch template ('' none)."""
    SUBNET_INPUT: ClassVar[str] = ""
    """The input built from the pool's subnets ('' none)."""
    CLUSTER_INPUT: ClassVar[str] = ""
    """The input built from the cluster the pool's nodes join, whose reader says ``private_nodes`` ('' none)."""

    STAMPS: ClassVar[str] = "tags"
    """The input holding the GPU facts of the types the stack declared (:func:`stamped`) and a reservation's stamps
    (a dotted path, ``nodeConfig.labels``, where the input is nested)."""
    NAME_LABEL: ClassVar[str] = ""
    """The label the platform puts on each node with the name of the pool it belongs to ('' none)."""
    NAME_INPUT: ClassVar[str] = ""
    """The input holding that name ('' none)."""
    REPAIR_FIXES: ClassVar[tuple[str, str, str]] = (
        "turn the pool's node repair on", "set a share of unhealthy nodes above which repair stops",
        "repair one node (or a small share) at a time")
    """How to turn its node repair on, bound how far it goes, and how many nodes it takes at once, in the
    platform's words (the ``gpu-pool-repair`` policy's fixes)."""
    RESERVED_ONLY_FIX: ClassVar[str] = "launch into the reservation alone"
    """How to keep its nodes on its reservation alone, in the platform's words (a policy fix)."""

    @classmethod
    def platform(cls) -> Any:
        """The platform whose GPU nodes the pool launches: the registered descriptor naming this reader among its
        ``pools`` (:func:`gpuready_components.platforms.of_pool`); ``None`` when none does."""
        return platforms.of_pool(cls)

    @property
    def platform_facts(self) -> Any:
        """The facts of the pool's platform (its descriptor's ``facts``)."""
        return self.platform().facts

    @property
    def labels(self) -> dict[str, str]:
        """The labels the pool sets on its nodes."""
        return {}

    @property
    def repair(self) -> Optional[Repair]:
        """How its failing nodes are repaired; ``None``: nothing in the pool says (a platform that repairs by itself
        with no setting, or capacity no node repair applies to)."""
        return None

    @property
    def multi_node(self) -> str:
        """Why the pool is built for gangs across its nodes, in a few words ('' when it is not, or its platform does
        not say): the ``gpu-multinode-topology`` advisory reads it."""
        return ""

    @property
    def placement_note(self) -> str:
        """What its platform says of placing the pool's gangs by topology where it makes no Topology for a pool built
        for gangs across nodes ('' when it says nothing): ``gpuready plan`` prints it under the pool's flavor."""
        return ""

    def source(self, linked: Sequence[Resource] = ()) -> Source:
        """Where its nodes come from. ``linked``: the readers of the resources its inputs name that say more (its
        launch templates, read from :attr:`LAUNCH_TEMPLATE_INPUT`); the default: on-demand."""
        return Source(only=self.said_only)

    def stamped_reservation(self, reservation: Reservation) -> Reservation:
        """``reservation`` with the facts the stack was given (start, end, count) that a component stamped on the
        pool (:func:`~gpuready_components.capacity.reservation_stamps`)."""
        return dataclasses.replace(reservation, **read_reservation_stamps(get(self.props, self.STAMPS)))

    @property
    def said_only(self) -> bool:
        """The stack said its nodes come from reserved capacity only (gpuready's stamp among :attr:`STAMPS`)."""
        stamps = get(self.props, self.STAMPS)
        return isinstance(stamps, Mapping) and true(stamps.get(RESERVATIONS_ONLY))

    @property
    def node_labels(self) -> dict[str, str]:
        """The labels its nodes register with, as far as its inputs say: its own, and the platform's pool-name label
        when the pool's name is given (not when the provider names it)."""
        name = self.props.get(self.NAME_INPUT) if self.NAME_INPUT else None
        return {**self.labels, **({self.NAME_LABEL: name} if self.NAME_LABEL and isinstance(name, str) else {})}

    @property
    def instance_types(self) -> list[str]:
        raise NotImplementedError

    @property
    def public_node_ips(self) -> bool:
        """Its nodes get public IP addresses by a setting of the pool itself (subnets and launch templates aside)."""
        return False

    def image_without_driver(self) -> Optional[tuple[str, str]]:
        """(what is wrong, the fix) where its GPU instances boot an image with no NVIDIA driver; ``None`` where the
        image has one or is the user's own."""
        return None

    def row(self, name: str) -> Optional[catalog.GpuInstanceType]:
        """The GPU facts of type ``name``: its catalog row, else those stamped on the resource for a type the stack
        declared (the catalog of the process reading it, the policy pack's, does not hold it); ``None``: no GPUs."""
        return catalog.find(self.CLOUD, name) or stamped(self.CLOUD, name, get(self.props, self.STAMPS))

    @property
    def gpu_rows(self) -> list[catalog.GpuInstanceType]:
        """Rows of the GPU types it launches (empty: no GPUs)."""
        return [row for row in map(self.row, self.instance_types) if row]

    @property
    def unknown_types(self) -> tuple[str, ...]:
        """The types it launches with no GPU facts (CPU types, or GPU types neither catalogued nor declared)."""
        return tuple(t for t in self.instance_types if self.row(t) is None)

    @property
    def is_gpu(self) -> bool:
        return bool(self.gpu_rows)

    @property
    def minimum(self) -> tuple[int, str]:
        """What keeps running when idle, and the input that says so."""
        raise NotImplementedError

    MINIMUM_KEY: ClassVar[str] = ""
    """The ``gpuready:`` key that sets :attr:`minimum` in the reference stacks ('' none), for policy fixes."""

    def minimum_for(self, nodes: Optional[int]) -> str:
        """The :attr:`minimum` that keeps ``nodes`` nodes running, in its input's unit (``None``: a count not
        known)."""
        return str(nodes) if nodes is not None else "the reserved node count"

    @property
    def tag_keys(self) -> set[str]:
        """The cost-allocation tag (label) keys: a tag whose value is unknown still counts."""
        return set(self.props.get("tags") or {})

    @property
    def taints(self) -> list[Taint]:
        """The taints its nodes register with, as Kubernetes spells them (none for Batch)."""
        return []

    @property
    def own_volume(self) -> Optional[tuple[int, str]]:
        """The node volume (GiB) the pool sets itself, and the input; ``None`` where a launch template or the AMI
        decides."""
        return None

    def capacity(self) -> Optional[PoolCapacity]:
        """The most GPUs and dollars per hour it can run at once; ``None`` when it launches no GPU type."""
        raise NotImplementedError


def plain(name: str, token: str, **attrs: Any) -> type[Resource]:
    """A reader with no facts of its own beyond ``attrs``: it names a type the others select or depend on."""
    return type(name, (Resource,), {"TOKEN": token, "__doc__": f"A {token} resource.", **attrs})


def readers_in(module: Any) -> tuple[type[Resource], ...]:
    """The readers a module defines (each :class:`Resource` subclass with a ``TOKEN``), for a platform's
    descriptor to carry."""
    return tuple(v for v in vars(module).values()
                 if isinstance(v, type) and issubclass(v, Resource) and v.TOKEN)
