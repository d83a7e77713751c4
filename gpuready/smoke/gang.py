"""What a gang run (one job on N nodes: Batch multi-node, Kubernetes Indexed Job or JobSet) is judged on, whichever
platform ran it: N distinct machines, and each node's own probe."""

from __future__ import annotations

from typing import Mapping, Optional

from ..probe import Check, ProbeReport, core


def distinct_hosts(machines: Mapping[int, Optional[str]], reports: Mapping[int, Optional[ProbeReport]], nodes: int,
                   *, machine: str, fix: str) -> Check:
    """N nodes on N distinct machines (``machines``: each node index's machine as the platform names it, None where
    unknown) and no GPU (by UUID) reported by two nodes: the all-reduce crossed machines. ``machine`` says what
    the platform calls one (``node``, ``container instance``); ``fix``: what to look at when two shared one."""
    names = [m for m in machines.values() if m]
    shared = sorted({m for m in names if names.count(m) > 1})
    owners: dict[str, set[int]] = {}
    for index, report in reports.items():
        for gpu in (report.gpus if report else ()):
            if gpu.get("uuid"):
                owners.setdefault(gpu["uuid"], set()).add(index)
    twice = sorted(uuid for uuid, seen in owners.items() if len(seen) > 1)
    problems = [" and ".join(f"node{i}" for i, x in sorted(machines.items()) if x == m) + f" ran on one {machine}, {m}"
                for m in shared] + ([f"GPU {', '.join(twice[:2])} reported by more than one node"] if twice else [])
    detail = "; ".join(problems) + (f"; {fix}" if problems else "")
    if not problems and len(set(names)) < nodes:
        unknown = [f"node{i}" for i, m in sorted(machines.items()) if not m]
        problems.append(detail := f"only {len(set(names))} of {nodes} nodes are known to have run on a {machine}"
                        + (f" (not {', '.join(unknown)})" if unknown else ""))
    return Check("distinct_hosts", core.FAIL if problems else core.PASS, len(set(names)), nodes, detail)


def node_checks(index: int, report: Optional[ProbeReport], missing: str) -> list[Check]:
    """Node ``index``'s ``probe_report`` check and its probe's checks, each named ``node{index}.<check>``;
    ``missing``: why a node without a report has none."""
    prefix = f"node{index}."
    if report is None:
        return [Check(prefix + "probe_report", core.FAIL, detail=missing)]
    return [Check(prefix + "probe_report", core.PASS, report.host or None),
            *(Check(prefix + c.name, c.verdict, c.measured, c.expected, c.detail, c.required) for c in report.checks)]
