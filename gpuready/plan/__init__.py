"""``gpuready plan``: render a stack offline and say what ``pulumi up`` would create, and what it can cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from ..errors import UserError
from ..project import Project, find_project, load_project, load_stack_config
from ..resources import PoolCapacity
from ..resources.base import CAPACITY_KINDS, RESERVED, Source
from .describe import Pool, capacities, describe, pool, pool_names
from .secrets import SECRET, redact


@dataclass(frozen=True)
class PlannedResource:
    type: str
    name: str
    urn: str
    parent: str
    component: bool
    facts: dict[str, Any]
    inputs: dict[str, Any]
    """The inputs, each secret shown as ``[secret]``."""


@dataclass(frozen=True)
class KindCapacity:
    """The stack's GPUs of one kind of capacity at full scale: a pool counts under its preferred kind, and its GPUs
    past a reservation's known count under the kind it falls back to."""

    kind: str
    gpus: int
    usd_per_hour: float
    pools: list[str]


@dataclass(frozen=True)
class Capacity:
    """The most GPU capacity the stack can run at once, from the catalog (and the facts of declared types)."""

    pools: list[Pool]
    max_gpus: int
    max_usd_per_hour: float
    gpu_models: list[str]
    price_note: str
    by_kind: list[KindCapacity] = field(default_factory=list)
    """The GPUs by where they come from (reserved, on-demand, Spot, flex-start), those the stack has."""
    committed_usd_per_hour: float = 0.0
    """What the stack's reservations cost by the hour whether used or not."""


@dataclass(frozen=True)
class QueueTeam:
    """One team's queue, as ``gpuready plan`` shows it (:class:`gpuready.resources.queues.Team`)."""

    name: str
    system: str
    """``kueue`` (a ClusterQueue) or ``batch`` (a share of a fair-share scheduling policy)."""
    gpus: float
    """Kueue: its nominal GPU quota. Batch: its fair share of the queues' GPUs while every share is active."""
    borrow: Optional[float]
    """Most GPUs it may borrow beyond ``gpus``; ``None``: no limit (Batch: idle shares, no limit)."""
    lend: Optional[float]
    """Most of its GPUs others may borrow; ``None``: all."""
    weight: float
    """Kueue: fair-sharing weight. Batch: the share's weight factor (lower gets more)."""
    share: Optional[float]
    """Batch: the fraction of the queues' GPUs it gets while every share is active."""
    flavors: list[str]
    """Kueue: the ResourceFlavors that give it GPUs."""
    pools: list[str]
    """The GPU pools it may use, as ``teams[].pools`` names them (the label gpuready's Kueue flavors select; else
    the resources' names)."""
    queues: list[str]
    """Where its jobs go: ``namespace/localqueue`` (Kueue), the job queues (Batch)."""
    usd_per_gpu_hour: float
    usd_per_hour: float
    """Its ``gpus`` at full use, at ``usd_per_gpu_hour`` (:attr:`Queues.price_basis`): its $/h at its guarantee."""
    most: Optional[float] = None
    """The most GPUs it holds at once while the others are idle (Kueue's arithmetic; Batch: its queues' GPUs)."""
    usd_per_hour_most: float = 0.0
    """Its $/h at ``most`` (:attr:`Queues.price_basis`)."""


@dataclass(frozen=True)
class QueuePool:
    """One GPU flavor of the queues (Kueue) and what they admit of the pools it selects."""

    flavor: str
    pools: list[str]
    gpus: int
    """What its pools reach at full scale."""
    guaranteed: float
    """The queues' nominal quotas on it added up."""
    cohort: float
    """The Cohorts' own quota on it (what any member may borrow)."""
    admissible: float
    """The most GPUs all queues hold of it at once."""
    unadmittable: float
    """Its GPUs at full scale no queue can admit."""
    topology: Optional[dict[str, Any]] = None
    """How Kueue places its gangs (:func:`_topology`): the Topology's ``name`` and ``levels`` (coarsest first), the
    ``gangLevel`` a gang asks for, the ``largestGangNodes`` one queue can run there, ``blockNodes`` and
    ``blockSource`` where the cloud states the size of one domain of that level, and the ``verdict``; ``None`` (left
    out of the JSON): not placed by a topology."""
    placement: Optional[str] = None
    """Without a topology, what the platform of a pool of it built for gangs across nodes says of placing them
    (e.g. AKS: no topology labels); ``None`` (left out of the JSON): nothing said."""


@dataclass(frozen=True)
class Queues:
    """The teams' job queues of the stack and their quotas against its GPU capacity."""

    teams: list[QueueTeam]
    quota_gpus: float
    """The teams' GPUs added up."""
    capacity_gpus: int
    """The stack's GPUs at full scale (:class:`Capacity`)."""
    overcommitted: bool
    """The quotas add up to more GPUs than the stack reaches."""
    overcommit_declared: bool
    """Every Kueue queue (or its cohort) carries the overcommit marker."""
    price_basis: str
    pools: list[QueuePool] = field(default_factory=list)
    """Kueue: each GPU flavor and what the queues admit of it."""
    unadmittable_gpus: float = 0
    """Kueue: the GPUs at full scale that no queue can admit, over every flavor (and of the GPU pools no flavor
    selects)."""


@dataclass(frozen=True)
class PlanResult:
    project: str
    stack: str
    stack_file: str
    resources: list[PlannedResource]
    capacity: Capacity
    outputs: dict[str, Any] = field(default_factory=dict)
    scale_from_zero: Optional[dict[str, Any]] = None
    """EKS: what the stack's autoscaler adds for the smoke pod when the GPU groups are at zero (:func:`_scaling`)."""
    queues: Optional[Queues] = None
    """The teams' queues (:func:`_queues`); ``None`` when the stack declares none."""
    policy: Optional[Any] = None
    """The policy pack's report (:class:`gpuready.policy.PolicyReport`); ``None`` when policies were not run."""
    caps: Optional[dict[str, Any]] = None
    """The GPU and cost caps the policy pack applied (``gpu-capacity-caps``' settings that are set: ``maxGpus``,
    ``maxUsdPerHour``); ``{}`` when none apply (no ``--policy-config`` sets one); ``None`` when policies were not
    run."""
    secrets: frozenset = field(default=frozenset(), repr=False)
    """The text of the stack's secrets, redacted from everything shown (never itself shown)."""

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-like data, secrets shown as ``[secret]``."""
        data = asdict(self)
        del data["secrets"]
        for pool in (data["queues"] or {}).get("pools", ()):
            for key in ("topology", "placement"):
                if pool[key] is None:
                    del pool[key]
        if data["policy"] is not None:
            del data["policy"]["settings"]  # the caps are what a reader needs of them
        return redact(data, self.secrets)


def _facts(r: Any, rendering: Any) -> dict[str, Any]:
    """What :func:`describe` says of ``r`` from its masked inputs (a secret the describer cannot read as the value
    it expects: from its real ones, redacted)."""
    try:
        facts = describe(replace(r, inputs=r.masked_inputs), rendering)
    except (TypeError, ValueError, AttributeError):
        facts = describe(r, rendering)
    return redact(facts, rendering.secrets)


def _redacted_policy(report: Any, secrets: frozenset) -> Any:
    """``report`` with its messages redacted (rules decide on the real values, and may quote them)."""
    if report is None or not secrets:
        return report
    return type(report)(policies=dict(report.policies),
                        violations=[replace(v, message=redact(v.message, secrets)) for v in report.violations],
                        undecided=redact(dict(report.undecided), secrets))


def _by_kind(pools: list[Pool]) -> list[KindCapacity]:
    """:attr:`Capacity.by_kind`, in :data:`CAPACITY_KINDS` order."""
    gpus: dict[str, float] = {}
    usd: dict[str, float] = {}
    names: dict[str, list[str]] = {}
    for p in pools:
        per_gpu = p.max_usd_per_hour / p.max_gpus if p.max_gpus else 0.0
        shares = [(p.kinds[0], p.reserved_gpus or p.max_gpus)] if p.kinds[0] != RESERVED or len(p.kinds) == 1 else \
            [(RESERVED, p.reserved_gpus), (p.kinds[1], p.max_gpus - p.reserved_gpus)]
        for kind, n in shares:
            if n or not p.max_gpus:
                gpus[kind] = gpus.get(kind, 0) + n
                usd[kind] = usd.get(kind, 0.0) + n * per_gpu
                names.setdefault(kind, []).append(p.resource)
    return [KindCapacity(kind, int(gpus[kind]), round(usd[kind], 2), names[kind]) for kind in CAPACITY_KINDS
            if kind in gpus]


def _capacity(capacities: list[tuple[str, PoolCapacity, Source]], names: Optional[dict[str, str]] = None) -> Capacity:
    found = [pool(name, c, source, (names or {}).get(name)) for name, c, source in capacities]
    rows = list({(r.cloud, r.name): r for _, c, _ in capacities for r in c.rows}.values())
    dates = sorted({f"{r.price_region} {r.price_date}" for r in rows if r.price_usd_hour is not None})
    unpriced = sorted({r.name for r in rows if r.price_usd_hour is None} | {t for p in found for t in p.unknown_types})
    note = f"on-demand list prices ({'; '.join(dates)})" if dates else "no catalog prices"
    if unpriced:
        note += f"; not priced: {', '.join(unpriced)}"
    return Capacity(pools=found, max_gpus=sum(p.max_gpus for p in found),
                    max_usd_per_hour=round(sum(p.max_usd_per_hour for p in found), 2),
                    gpu_models=sorted({r.gpu_model for r in rows}), price_note=note, by_kind=_by_kind(found),
                    committed_usd_per_hour=round(sum(p.committed_usd_per_hour for p in found), 2))


def _scaling(rendering: Any) -> Optional[dict[str, Any]]:
    from ..resources.scaling import from_rendering, scale_from_zero

    result = scale_from_zero(from_rendering(rendering.resources), rendering.outputs)
    if result is None:
        return None
    return {"scaler": result.scaler, "summary": result.summary(), "ok": result.ok,
            "templates": [{"group": t.group, "instanceType": t.instance_type, "gpus": t.gpus} for t in result.templates],
            "fits": {str(gpus): list(groups) for gpus, groups in result.fits.items()},
            "problems": list(result.problems)}


def _number(value: Any) -> Any:
    """A quantity as JSON shows it: a whole number as an int."""
    if value is None:
        return None
    return int(value) if value == int(value) else float(value)


def _topology(items: Any, flavor: Any, admitted: Any) -> Optional[dict[str, Any]]:
    """How Kueue places the gangs of GPU ``flavor`` (:class:`gpuready.resources.queues.FlavorFacts`): the Topology
    its ResourceFlavor names, the level a gang asks for (the Topology's gang-level annotation, else its finest level
    above the hostname) and whether the largest gang one queue runs there fits one domain of it where the cloud
    states its size (the Topology's annotations, :mod:`gpuready_components.k8s_gpu.topology`); ``None`` without a
    Topology."""
    from gpuready_components.k8s_gpu import topology as tas
    from gpuready_components.queue_facts import GANG_LEVEL_ANNOTATION

    from ..resources.kubernetes import ResourceFlavor, Topology

    named = next((i.facts.topology_name for i in items if isinstance(i.facts, ResourceFlavor)
                  and i.facts.name == flavor.name), None)
    found = next((i.facts for i in items if isinstance(i.facts, Topology) and i.facts.name == named), None)
    if found is None:
        return None
    levels = found.levels
    above_host = [level for level in levels if level != tas.HOSTNAME]
    gang = str(found.annotations.get(GANG_LEVEL_ANNOTATION) or (above_host[-1] if above_host else tas.HOSTNAME))
    node_gpus = max((r.gpus for p in flavor.pools for r in p.capacity.rows), default=0)
    largest = tas.largest_gang(int(admitted.largest.get(flavor.name, 0)), node_gpus,
                               flavor.gpus // node_gpus if node_gpus else 0)
    block = tas.block_of(found.annotations)
    return {"name": named, "levels": levels, "gangLevel": gang, "largestGangNodes": largest,
            "blockNodes": block.nodes if block else None, "blockSource": block.source if block else None,
            "verdict": tas.verdict(largest, gang, block)}


def _placement(items: Any, flavor: Any, admitted: Any) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """How Kueue places the gangs of GPU ``flavor``: its :func:`_topology`, and without one what the platform of one
    of its pools says of it (the pools' ``placement_note``)."""
    placed = _topology(items, flavor, admitted)
    if placed is not None:
        return placed, None
    notes = [p.item.facts.placement_note for p in flavor.pools if getattr(p.item.facts, "placement_note", "")]
    return None, ("; ".join(dict.fromkeys(notes)) or None)


def _queues(rendering: Any, capacity: Capacity) -> Optional[Queues]:
    from ..resources.queues import KUEUE, PRICE_BASIS, gpu_pools, kubernetes_gpu_pools, kueue_admission, teams
    from ..resources.scaling import from_rendering

    items = from_rendering(rendering.resources)
    found = teams(items)
    if not found:
        return None
    shown = [QueueTeam(t.name, t.system, _number(t.gpus), _number(t.borrow), _number(t.lend), _number(t.weight),
                       None if t.share is None else round(t.share, 4), list(t.flavors), [p.pool_name for p in t.pools],
                       list(t.queues), round(t.usd_per_gpu_hour, 4), round(t.usd_per_hour, 2), _number(t.most),
                       round(t.usd_per_hour_most, 2)) for t in found]
    total = _number(sum(t.gpus for t in found))
    kueue = [t for t in found if t.system == KUEUE]
    admitted, flavors = kueue_admission(items) if kueue else (None, [])
    selected = {p.item.urn for f in flavors for p in f.pools}
    unselected = [p for p in kubernetes_gpu_pools(gpu_pools(items)) if p.item.urn not in selected] if kueue else []
    pools = [QueuePool(f.name, [p.pool_name for p in f.pools], f.gpus, _number(f.guaranteed), _number(f.cohort),
                       _number(f.admissible), _number(f.unadmittable), *_placement(items, f, admitted))
             for f in flavors]
    return Queues(shown, total, capacity.max_gpus, total > capacity.max_gpus,
                  bool(kueue) and all(t.overcommit for t in kueue), PRICE_BASIS, pools,
                  _number(sum((f.unadmittable for f in flavors), 0) + sum(p.capacity.max_gpus for p in unselected)))


def plan(stack: Optional[str] = None, *, stack_file: Optional[Path] = None, program: Optional[Path] = None,
         policies: bool = True, policy_config: Optional[Path] = None) -> PlanResult:
    """Render ``stack`` of the project (the current one, or ``program``) offline, describe what it creates, and run
    the policy pack on it (with ``policy_config``, Pulumi's policy config file) unless ``policies`` is false.

    Raises :class:`UserError` for a missing project, stack or policy config file; a component's ``ConfigError``
    propagates.
    """
    from .render import render  # imports the Pulumi runtime: only when a plan is really made

    project: Project = load_project(program) if program else find_project()
    if stack_file is None:
        if not stack:
            raise UserError("name a stack (--stack NAME) or a stack file (--stack-file PATH)")
        stack_file = project.stack_file(stack)
        if not stack_file.is_file():
            known = ", ".join(project.stacks()) or "none"
            here = Path(f"Pulumi.{stack}.yaml")  # a stack file beside the user, outside the project's stackConfigDir
            beside = f"; ./{here} is read with --stack-file ./{here}" if here.is_file() else ""
            raise UserError(f"no stack {stack!r}: {stack_file} does not exist (the project's stacks: {known}){beside}")
    elif not stack_file.is_file():
        raise UserError(f"stack file {stack_file} does not exist")
    stack = stack or stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    config = load_stack_config(stack_file, project.name)
    rendering = render(project.main, project.name, stack, config)
    return planned(rendering, str(stack_file), policies=policies, policy_config=policy_config)


def planned(rendering: Any, stack_file: str, *, policies: bool = True,
            policy_config: Optional[Path] = None) -> PlanResult:
    """The plan of a rendered stack (:class:`~gpuready.rendering.Rendering`, whichever runtime recorded it):
    what each resource means, the capacity, the outputs (secrets shown as ``[secret]``) and, unless ``policies``
    is false, the policy pack's report (with ``policy_config``)."""
    resources = [PlannedResource(type=r.type, name=r.name, urn=r.urn, parent=r.parent, component=not r.custom,
                                 facts=_facts(r, rendering), inputs=r.masked_inputs) for r in rendering.resources]
    report = None
    if policies:
        from ..policy import run as run_policies

        report = run_policies(rendering, policy_config)
    outputs = {k: SECRET if k in rendering.secret_outputs else v for k, v in rendering.outputs.items()}
    capacity = _capacity(capacities(rendering), pool_names(rendering))
    return PlanResult(project=rendering.project, stack=rendering.stack, stack_file=stack_file, resources=resources,
                      capacity=capacity, outputs=outputs, scale_from_zero=_scaling(rendering),
                      queues=_queues(rendering, capacity),
                      policy=_redacted_policy(report, rendering.secrets), caps=_caps(report),
                      secrets=rendering.secrets)


def _caps(report: Any) -> Optional[dict[str, Any]]:
    """The caps ``report``'s run applied (:attr:`PlanResult.caps`)."""
    from ..policy.rules.capacity import gpu_capacity_caps

    if report is None:
        return None
    settings = report.settings.get(gpu_capacity_caps.name) or {}
    return {key: value for key, value in settings.items() if value is not None}
