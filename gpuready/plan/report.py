"""``gpuready plan`` for people: the resource tree with GPU facts, then the capacity summary."""

from __future__ import annotations

from typing import Any

from . import PlannedResource, PlanResult, compute_domains
from .describe import API_ACCESS
from .secrets import SECRET, redact


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def render_text(result: PlanResult) -> str:
    """The plan as text: one line per resource (type, name), its GPU facts indented below it; secrets shown as
    ``[secret]``."""
    children: dict[str, list[PlannedResource]] = {}
    urns = {r.urn for r in result.resources}
    for r in result.resources:
        children.setdefault(r.parent if r.parent in urns else "", []).append(r)
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.type, r.name))
    width = max((len(r.type) for r in result.resources), default=0) + 4

    lines = [f"Plan for stack {result.stack} (project {result.project}, {result.stack_file})",
             f"`pulumi up` would create {len(result.resources)} resources:", ""]

    def walk(parent: str, depth: int) -> None:
        for r in children.get(parent, []):
            indent = "  " * depth
            lines.append(f"{indent}{r.type:<{width - len(indent)}}{r.name}")
            for key, value in r.facts.items():
                lines.append(f"{indent}    {key}: {_value(value)}")
            walk(r.urn, depth + 1)

    walk("", 0)
    cap = result.capacity
    lines += ["", "Capacity at full scale:"]
    for pool in cap.pools:
        named = f" (pool {pool.pool})" if pool.pool and pool.pool != pool.resource else ""
        lines.append(f"  {pool.resource}{named}: up to {pool.max_gpus} GPUs, ${pool.max_usd_per_hour:,.2f}/h")
    if cap.pools:
        lines.append(f"  total: {cap.max_gpus} GPUs ({', '.join(cap.gpu_models)}), "
                     f"${cap.max_usd_per_hour:,.2f}/h at {cap.price_note}")
    else:
        lines.append("  no GPU capacity found in this stack")
    lines += _kind_lines(cap)
    lines += _zone_lines(result.outputs)
    if result.caps is not None:
        lines.append(f"  caps: {', '.join(f'{k} {v:g}' for k, v in result.caps.items())}" if result.caps else
                     "  no caps: nothing limits GPUs or $/h; pass --policy-config FILE setting gpu-capacity-caps' "
                     "maxGpus or maxUsdPerHour")
    lines += _queue_lines(result.queues)
    lines += compute_domains.lines(result.outputs, cap.pools)
    scaling = result.scale_from_zero
    if scaling is not None:
        lines += ["", scaling["summary"]]
        if scaling["scaler"] == "none":
            lines.append("  warning: GPU node groups at minSize 0 rely on the cluster's own autoscaler; without one, "
                         "GPU pods stay Pending (set gpuready:autoscaler cluster-autoscaler)")
        lines += [f"  problem: {p}" for p in scaling["problems"]]
    lines += _metaflow_lines(result.outputs)
    access = [(r.name, r.facts[API_ACCESS]) for r in result.resources if API_ACCESS in r.facts]
    if access:
        lines += ["", f"{API_ACCESS}:", *(f"  {name}: {value}" for name, value in access)]
    where: dict[str, list[str]] = {}
    for r in result.resources:
        for path in dict.fromkeys(_secret_paths(r.inputs)):
            where.setdefault(path, []).append(r.name)
    hidden = [f"output {k}" for k, v in result.outputs.items() if v == SECRET] + \
        [f"{path} of {names[0] if len(names) == 1 else f'{len(names)} resources'}" for path, names in where.items()]
    if hidden:
        lines += ["", f"Secrets (shown as {SECRET}): {', '.join(hidden)}"]
    if result.policy is not None:
        lines += ["", *_policy_lines(result)]
    return redact("\n".join(lines) + "\n", result.secrets)


METAFLOW_OUTPUTS = {"metaflowProfile": "gpu", "metaflowMultiNodeProfile": "gpu-multinode"}
"""Output -> the Metaflow profile name the README saves it under."""


def _kind_lines(cap: Any) -> list[str]:
    """The GPUs by kind of capacity, each reservation's pools, and what reservations commit (nothing when every GPU
    is on-demand: the total says it all)."""
    if [k.kind for k in cap.by_kind] in ([], ["on-demand"]):
        return []
    lines = ["  by kind (at the list prices above; Spot and reservations bill at their own rates):"]
    lines += [f"    {k.kind}: {k.gpus} GPUs, ${k.usd_per_hour:,.2f}/h ({', '.join(k.pools)})" for k in cap.by_kind]
    for pool in cap.pools:
        if pool.reservation:
            known = [pool.window or "window not given", f"{pool.reserved_gpus} GPUs reserved",
                     f"${pool.committed_usd_per_hour:,.2f}/h committed"]
            fallback = f"; past it: {', '.join(pool.kinds[1:])}" if len(pool.kinds) > 1 else "; nothing past it"
            lines.append(f"    {pool.resource} on {pool.reservation}: {', '.join(known)}{fallback}")
    if cap.committed_usd_per_hour:
        lines.append(f"  committed: ${cap.committed_usd_per_hour:,.2f}/h, paid whether the GPUs are used or not")
    return lines


def _zone_lines(outputs: dict[str, Any]) -> list[str]:
    """Each reservation whose facts ``pulumi preview`` reads and checks but ``gpuready plan`` offline does not
    (``factsRead`` false: a Capacity Block's type, zone, count and end), and each other whose zone was given but whose
    pool's subnets' zones are not known (offline, ``gpuready plan`` reads no subnet): they are checked by ``pulumi
    preview``, not here; and each whose zone the component checked against the pool's zones by name (``nodeZones``:
    no cloud read, before or at preview), saying so."""
    entries = outputs.get("gpuReservations")
    if not isinstance(entries, list):
        return []
    lines = []
    for e in (e for e in entries if isinstance(e, dict)):
        if e.get("factsRead") is False:
            lines.append(f"  {e.get('pool')}: {e.get('kind')} {e.get('target')} facts unchecked offline (pulumi "
                         "preview reads them from EC2 and refuses a type, zone, count or end the pool cannot use)")
        elif e.get("zone") and isinstance(e.get("nodeZones"), list):
            lines.append(f"  {e.get('pool')}: reservation zone {e['zone']} checked offline by name against the "
                         f"pool's zones ({', '.join(map(str, e['nodeZones']))}); that the reservation is in it is not "
                         "read before pulumi up")
        elif e.get("zone") and "subnetZones" not in e:
            lines.append(f"  {e.get('pool')}: reservation zone {e['zone']} unchecked offline (pulumi preview reads "
                         "the subnets' zones and refuses subnets outside it)")
    return lines


def _metaflow_lines(outputs: dict[str, Any]) -> list[str]:
    """Each Metaflow profile output, with the command that saves it."""
    lines = []
    for output, profile in METAFLOW_OUTPUTS.items():
        if isinstance(outputs.get(output), dict):
            lines += ["", f"Metaflow profile (`pulumi stack output {output} --json > "
                          f"~/.metaflowconfig/config_{profile}.json`, then METAFLOW_PROFILE={profile}):"]
            lines += [f"  {key}: {value}" for key, value in outputs[output].items()]
            teams = outputs.get("teams") if output == "metaflowProfile" else None
            if isinstance(teams, list) and teams and isinstance(teams[0], dict):
                lines.append(f"  (team {teams[0].get('name')}'s queue: each team has its own, `pulumi stack output "
                             "teams --json` then teams[].metaflowProfile)")
    return lines


def _gpus(value: Any) -> str:
    return f"{value:g} GPU{'' if value == 1 else 's'}"


def _team_line(team: Any) -> str:
    """One team's queue: its GPUs, what it borrows and lends, what it runs on, where its jobs go, its cost."""
    if team.system == "batch":
        parts = [f"{team.share:.1%} fair share (weight factor {team.weight:g}) = {_gpus(team.gpus)}",
                 "may use idle shares", f"most it can hold while the others idle: {_gpus(team.most)}",
                 f"job queues {', '.join(team.queues)}"]
    else:
        borrow = "may borrow any idle GPUs of its cohort" if team.borrow is None else \
            "may borrow none" if not team.borrow else f"may borrow {_gpus(team.borrow)} more"
        lend = "lends all it leaves idle" if team.lend is None else \
            "lends none" if not team.lend else f"lends up to {_gpus(team.lend)}"
        parts = [f"{_gpus(team.gpus)} guaranteed", borrow, lend,
                 f"most it can hold while the others idle: {_gpus(team.most)}", f"weight {team.weight:g}",
                 f"flavors {', '.join(team.flavors) or 'none'}", f"queues {', '.join(team.queues) or 'none'}"]
    parts.append(f"on {', '.join(team.pools) or 'no GPU pool'}")
    return (f"  {team.name}: {'; '.join(parts)}; ${team.usd_per_hour:,.2f}/h at its guarantee, "
            f"${team.usd_per_hour_most:,.2f}/h at its most")


def _pool_line(pool: Any) -> str:
    """One GPU flavor of the queues: its GPUs, how they are guaranteed, lent and admitted; with a topology, a second
    line: the levels its gangs are placed by and whether the largest fits one domain; without one, what its platform
    says of placing them, if anything."""
    line = (f"  flavor {pool.flavor} ({', '.join(pool.pools)}): {_gpus(pool.gpus)} at full scale; "
            f"{_gpus(pool.guaranteed)} guaranteed to queues, {_gpus(pool.cohort)} of the cohort's own that any may "
            f"borrow; the queues admit at most {_gpus(pool.admissible)} at once; GPUs no queue can admit: "
            f"{pool.unadmittable:g}")
    placed = pool.topology
    if not placed:
        return f"{line}\n    placement: {pool.placement}" if pool.placement else line
    return (f"{line}\n    gangs placed by Topology {placed['name']}: {' > '.join(placed['levels'])}; a gang asks for "
            f"one {placed['gangLevel']} (preferred); {placed['verdict']}")


def _queue_lines(queues: Any) -> list[str]:
    """The Queues section: each team's queue, then the quotas added up against the stack's GPUs."""
    if queues is None:
        return []
    lines = ["", f"Queues ({len(queues.teams)} teams; $/h at full use priced at {queues.price_basis}):"]
    lines += [_team_line(team) for team in queues.teams]
    lines += [_pool_line(pool) for pool in queues.pools]
    verdict = "within capacity" if not queues.overcommitted else \
        "overcommitted (declared: jobs wait for GPUs their quota allows)" if queues.overcommit_declared else \
        "overcommitted: quotas promise GPUs the pools cannot reach"
    lines.append(f"  total: {_gpus(queues.quota_gpus)} of quota against {_gpus(queues.capacity_gpus)} at full scale: "
                 f"{verdict}" + (f"; GPUs no queue can admit: {queues.unadmittable_gpus:g}" if queues.pools else ""))
    return lines


def _secret_paths(value: Any, prefix: str = "") -> list[str]:
    if value == SECRET:
        return [prefix]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _secret_paths(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{prefix}[{i}]")]
    return []


def _policy_lines(result: PlanResult) -> list[str]:
    report = result.policy
    mandatory, advisory = len(report.mandatory), len(report.violations) - len(report.mandatory)
    if not report.violations:
        return [f"Policies: {len(report.policies)} rules, no violations"]
    lines = [f"Policies: {len(report.policies)} rules, {mandatory} mandatory and {advisory} advisory violations:"]
    groups: dict[tuple[str, str], list] = {}
    for v in report.violations:
        groups.setdefault((v.type, v.resource) if v.urn else ("", "stack"), []).append(v)
    for (type_, name), found in sorted(groups.items(), key=lambda g: (g[0][0] == "", g[0])):
        lines.append(f"  {type_} {name}".rstrip() if type_ else f"  {name}")
        for v in sorted(found, key=lambda v: (v.level != "mandatory", v.policy)):
            lines.append(f"    [{v.level}] {v.policy}: {v.message}")
    return lines
