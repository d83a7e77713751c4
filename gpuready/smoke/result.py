"""What a smoke test found: the probe's report, the target's own checks, and a diagnosis when a job did not start."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..probe import Check, ProbeReport, core


@dataclass
class SmokeResult:
    target: str
    """``local``, ``batch`` or ``kubernetes`` (or what a probe looked at)."""
    title: str = "Smoke test"
    checks: list[Check] = field(default_factory=list)
    """The target's checks (job started, report found...) followed by the probe's."""
    probe: Optional[ProbeReport] = None
    diagnosis: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    """The diagnosis as data (Kubernetes: kind, source, summary, the controller's words, fixes, waiting)."""
    job: dict[str, Any] = field(default_factory=dict)
    """Where the probe ran: job id, queue, final status, log stream..."""

    @property
    def verdict(self) -> str:
        return core.verdict([asdict(c) for c in self.checks])

    @property
    def passed(self) -> bool:
        return self.verdict != core.FAIL

    def add_probe(self, report: Optional[ProbeReport]) -> None:
        if report is None:
            self.checks.append(Check("probe_report", core.FAIL, detail=(
                "the job ended without a probe report in its logs: it did not run the probe, or its logs were "
                "lost; a job that merely succeeds proves nothing about its GPUs")))
            return
        self.probe = report
        self.checks.append(Check("probe_report", core.PASS, report.host or None))
        self.checks.extend(report.checks)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "verdict": self.verdict, "checks": [asdict(c) for c in self.checks],
                "diagnosis": self.diagnosis, "findings": self.findings, "job": self.job,
                "probe": asdict(self.probe) if self.probe else None}


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def render_text(result: SmokeResult) -> str:
    rows = [(c.verdict.upper(), c.name, _cell(c.measured), _cell(c.expected), c.detail) for c in result.checks]
    widths = [max(len(r[i]) for r in rows + [("VERDICT", "CHECK", "MEASURED", "EXPECTED", "")]) for i in range(4)]
    lines = [f"{result.title} on {result.target}" + (f" ({result.job.get('id')})" if result.job.get("id") else ""), ""]
    if result.job.get("node"):
        about = ", ".join(filter(None, (result.job.get("instance_type"), result.job.get("capacity"))))
        lines += [f"Ran on node {result.job['node']}" + (f" ({about})" if about else ""), ""]
    if result.probe and result.probe.gpus:
        lines += result.probe.gpu_lines() + [""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(("VERDICT", "CHECK", "MEASURED", "EXPECTED"), widths))
                 + "  DETAIL")
    for row in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row[:4], widths)) + ("  " + row[4] if row[4] else ""))
    if result.diagnosis:
        lines += ["", "Why the job did not start:"] + [f"  - {d}" for d in result.diagnosis]
    lines += ["", f"Verdict: {result.verdict.upper()}"]
    return "\n".join(lines) + "\n"


def write_junit(result: SmokeResult, path: Path) -> None:
    suite = ET.Element("testsuite", name=f"gpuready smoke ({result.target})", tests=str(len(result.checks)),
                       failures=str(sum(c.verdict == core.FAIL and c.required for c in result.checks)))
    for c in result.checks:
        case = ET.SubElement(suite, "testcase", classname=f"gpuready.smoke.{result.target}", name=c.name)
        text = f"measured {_cell(c.measured)}, expected {_cell(c.expected)}. {c.detail}".strip()
        if c.verdict == core.FAIL and c.required:
            ET.SubElement(case, "failure", message=c.detail or "failed", type="fail").text = text
        elif c.verdict == core.SKIP:
            ET.SubElement(case, "skipped", message=c.detail)
        elif c.verdict in (core.WARN, core.FAIL):
            ET.SubElement(case, "system-out").text = f"[{c.verdict}] {text}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
