"""JUnit XML for CI: one test case per rule, failed by its mandatory violations."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .offline import PolicyReport


def write(report: PolicyReport, stack: str, path: Path) -> None:
    """Write ``report`` to ``path``: a suite per stack; advisory violations go to the case's system-out."""
    suite = ET.Element("testsuite", name=f"gpuready policies ({stack})", tests=str(len(report.policies)),
                       failures=str(len({v.policy for v in report.mandatory})))
    for name, level in report.policies.items():
        case = ET.SubElement(suite, "testcase", classname=f"gpuready.policies.{stack}", name=name)
        found = [v for v in report.violations if v.policy == name]
        if found and level == "mandatory":
            failure = ET.SubElement(case, "failure", message=f"{len(found)} violation(s)", type="mandatory")
            failure.text = "\n".join(v.message for v in found)
        elif found:
            ET.SubElement(case, "system-out").text = "\n".join(f"[advisory] {v.message}" for v in found)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")
