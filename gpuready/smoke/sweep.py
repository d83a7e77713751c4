"""``gpuready sweep``: the GPU probe on every GPU node of a deployed stack, a row per node.

Kubernetes: one Job pinned to each GPU node (:mod:`.sweep_kubernetes`); AWS Batch: N whole-instance jobs, one per
instance (:mod:`.sweep_batch`). Each row says what the node is (GPU model, count), whether nvidia-smi's view is healthy,
the slowest GPU's bf16 GEMM TFLOP/s and memory bandwidth against what the model typically reaches, and a verdict.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..probe import Check, ProbeReport, core

FIGURES = {"gemm": re.compile(r"^gpu\d+\.bf16_matmul_tflops$"), "hbm": re.compile(r"^gpu\d+\.memory_bandwidth_gbps$")}
"""The probe's throughput checks each row quotes (the slowest GPU's)."""
THROUGHPUT = re.compile(r"^gpu\d+\.(bf16_matmul_tflops|memory_bandwidth_gbps|host_to_device_gbps|sustained_tflops|"
                        r"sustained_memory_gbps)$|^nccl_all_reduce$|^burn$")
"""Checks that measure speed; every other check of the probe is the node's health."""
DUPLICATE = "duplicate"
"""The verdict of a row whose job ran on an instance an earlier row already swept (it counts for nothing)."""


@dataclass
class Figure:
    """One throughput figure of a node: the slowest GPU's, against what its model typically reaches."""

    measured: Optional[float] = None
    typical: Optional[float] = None
    gpu: Optional[str] = None
    """Which GPU (``gpu3``) the figure is from."""
    verdict: Optional[str] = None

    def text(self) -> str:
        if self.measured is None:
            return "-"
        return f"{self.measured:g}" + (f"/{self.typical:g}" if self.typical else "")


@dataclass
class SweepRow:
    """One node (Kubernetes) or instance (Batch) and what the probe found there."""

    node: str
    """The node's name, or on Batch the instance (its container instance, else the probe's host)."""
    instance_type: Optional[str] = None
    capacity: Optional[str] = None
    """Where the node's capacity comes from, as its labels say (``reserved (capacity-block cr-...)``, ``spot``,
    ``on-demand``); ``None`` where no label says (Batch, or a platform that labels none)."""
    gpu_model: Optional[str] = None
    gpus: Optional[int] = None
    health: str = "unknown"
    """The verdict of the probe's health checks (driver, GPU count, ECC, row remapping, clocks...)."""
    gemm_tflops: Figure = field(default_factory=Figure)
    hbm_gbps: Figure = field(default_factory=Figure)
    verdict: str = core.FAIL
    """``pass``, ``warn``, ``fail``, or :data:`DUPLICATE`."""
    detail: str = ""
    job: dict[str, Any] = field(default_factory=dict)
    """Where the probe ran: job id or pod, final status, log stream."""
    checks: list[Check] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def row(node: str, report: Optional[ProbeReport], *, instance_type: Optional[str] = None,
        job: Optional[dict[str, Any]] = None, problem: str = "") -> SweepRow:
    """The row of ``node`` from its probe ``report`` (None: the job ended without one, or did not run: ``problem``
    says why, or it is said generically)."""
    out = SweepRow(node=node, instance_type=instance_type, job=dict(job or {}))
    if report is None:
        out.detail = problem or "no probe report: the job did not run the probe, or its logs were lost"
        return out
    out.checks = list(report.checks)
    names = {g.get("uuid") or g.get("pci.bus_id") or g.get("index", i) for i, g in enumerate(report.gpus)}
    out.gpus = len(names) if report.gpus else None
    models = sorted({str(g.get("name")) for g in report.gpus if g.get("name")})
    out.gpu_model = ", ".join(models) or None
    health = [asdict(c) for c in report.checks if not THROUGHPUT.match(c.name)]
    out.health = core.verdict(health) if health else "unknown"
    out.gemm_tflops, out.hbm_gbps = (_slowest(report.checks, FIGURES[k]) for k in ("gemm", "hbm"))
    out.verdict = report.verdict
    failing = [c for c in report.checks if c.required and c.verdict == core.FAIL] or \
        [c for c in report.checks if c.verdict == core.WARN]
    out.detail = _summary(failing)
    if problem:
        out.verdict = core.FAIL
        out.detail = "; ".join(filter(None, (problem, out.detail)))
    return out


def _summary(checks: list[Check]) -> str:
    """The checks in one line, one entry per kind of failure: ``ecc_uncorrected on gpu0, gpu3: DETAIL``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for c in checks:
        gpu, _, kind = c.name.partition(".") if re.match(r"^gpu\d+\.", c.name) else ("", "", c.name)
        groups.setdefault((kind, c.detail or f"measured {c.measured}, expected {c.expected}"), []).append(gpu)
    return "; ".join(f"{kind}{' on ' + ', '.join(gpus) if any(gpus) else ''}: {detail}"
                     for (kind, detail), gpus in groups.items())


def _slowest(checks: tuple[Check, ...], pattern: re.Pattern) -> Figure:
    found = [c for c in checks if pattern.match(c.name) and isinstance(c.measured, (int, float))]
    if not found:
        return Figure()
    worst = min(found, key=lambda c: c.measured)
    return Figure(worst.measured, worst.expected if isinstance(worst.expected, (int, float)) else None,
                  worst.name.split(".", 1)[0], worst.verdict)


def deduplicate(rows: list[SweepRow], key: list[Optional[str]]) -> None:
    """Mark each row whose ``key`` (its instance) an earlier row has as :data:`DUPLICATE`, saying which."""
    first: dict[str, SweepRow] = {}
    for r, k in zip(rows, key):
        if not k:
            continue
        if k in first:
            r.verdict = DUPLICATE
            r.detail = f"ran on the instance already swept by {first[k].job.get('name') or first[k].node} " \
                       f"(after that job ended): counted once. {r.detail}".strip()
        else:
            first[k] = r


@dataclass
class SweepResult:
    target: str
    """``batch`` or ``kubernetes``."""
    rows: list[SweepRow] = field(default_factory=list)
    job: dict[str, Any] = field(default_factory=dict)
    """The run: its name, queue or namespace, the probe's job definition, cleanup done."""
    notes: list[str] = field(default_factory=list)
    """What the sweep did beside the rows (nodes tainted, fewer instances than asked...)."""
    repairs: list[dict[str, Any]] = field(default_factory=list)
    """``gpuready sweep --repair``: the audit, an entry per failing node (:class:`gpuready.repair.Audit`): what was
    done or would be, or why not; an entry whose ``outcome`` is in :data:`REPAIR_FAILED` fails the run."""

    @property
    def counted(self) -> list[SweepRow]:
        return [r for r in self.rows if r.verdict != DUPLICATE]

    @property
    def verdict(self) -> str:
        rows = self.counted
        if not rows or any(r.verdict == core.FAIL for r in rows):
            return core.FAIL
        return core.WARN if any(r.verdict == core.WARN for r in rows) else core.PASS

    @property
    def passed(self) -> bool:
        """No node failed, and no repair the cloud was asked for failed."""
        return self.verdict != core.FAIL and not any(r.get("outcome") in REPAIR_FAILED for r in self.repairs)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "verdict": self.verdict, "nodes": len(self.counted),
                "failing": sum(r.verdict == core.FAIL for r in self.counted), "rows": [r.to_json() for r in self.rows],
                "job": self.job, "notes": self.notes, "repairs": self.repairs}


REPAIR_FAILED = ("refused", "failed")
"""Audit outcomes of a repair the cloud refused, or whose answer never came (it may have acted)."""


HEADER = ("VERDICT", "NODE", "TYPE", "GPUS", "MODEL", "HEALTH", "GEMM TFLOP/S", "HBM GB/S")


def render_text(result: SweepResult) -> str:
    """A table, a row per node; GEMM and HBM read ``measured/typical`` (the slowest GPU's); a CAPACITY column when a
    node's labels say where its capacity comes from."""
    capacity = any(r.capacity for r in result.rows)
    header = HEADER[:3] + ("CAPACITY",) + HEADER[3:] if capacity else HEADER
    rows = [(r.verdict.upper(), r.node, r.instance_type or "-", *((r.capacity or "-",) if capacity else ()),
             "-" if r.gpus is None else str(r.gpus), r.gpu_model or "-", r.health, r.gemm_tflops.text(),
             r.hbm_gbps.text(), r.detail) for r in result.rows]
    widths = [max(len(x[i]) for x in rows + [header]) for i in range(len(header))]
    lines = [f"GPU sweep on {result.target}" + (f" ({result.job.get('name')})" if result.job.get("name") else ""),
             "", "  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  DETAIL"]
    lines += ["  ".join(v.ljust(w) for v, w in zip(x, widths)) + ("  " + x[-1] if x[-1] else "") for x in rows]
    if not rows:
        lines.append("(no GPU node swept)")
    lines += [""] + [f"Note: {n}" for n in result.notes] + ([""] if result.notes else [])
    if result.repairs:
        lines += ["Repairs:"] + [f"  {r['text']}" for r in result.repairs] + [""]
    failing = sum(r.verdict == core.FAIL for r in result.counted)
    lines.append(f"Verdict: {result.verdict.upper()} ({len(result.counted)} nodes, {failing} failing)")
    return "\n".join(lines) + "\n"


def write_junit(result: SweepResult, path: Path) -> None:
    """JUnit XML with one testcase per node (a duplicate instance is a skipped testcase)."""
    suite = ET.Element("testsuite", name=f"gpuready sweep ({result.target})", tests=str(len(result.rows)),
                       failures=str(sum(r.verdict == core.FAIL for r in result.rows)),
                       skipped=str(sum(r.verdict == DUPLICATE for r in result.rows)))
    for r in result.rows:
        case = ET.SubElement(suite, "testcase", classname=f"gpuready.sweep.{result.target}", name=r.node)
        facts = f"{r.gpus or '?'} x {r.gpu_model or 'unknown GPU'}, health {r.health}, GEMM TFLOP/s " \
                f"{r.gemm_tflops.text()}, HBM GB/s {r.hbm_gbps.text()}. {r.detail}".strip()
        if r.verdict == core.FAIL:
            ET.SubElement(case, "failure", message=r.detail or "failed", type="fail").text = facts
        elif r.verdict == DUPLICATE:
            ET.SubElement(case, "skipped", message=r.detail)
        else:
            ET.SubElement(case, "system-out").text = f"[{r.verdict}] {facts}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
