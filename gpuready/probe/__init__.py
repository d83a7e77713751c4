"""The GPU probe (``gpuready.probe.core``, standard library only, runs inside jobs) and its typed results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from . import core


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str
    """``pass``, ``warn``, ``fail`` or ``skip``."""
    measured: Any = None
    expected: Any = None
    detail: str = ""
    required: bool = True


@dataclass(frozen=True)
class ProbeReport:
    verdict: str
    checks: tuple[Check, ...]
    gpus: tuple[dict, ...] = ()
    versions: Optional[dict] = None
    framework: Optional[dict] = None
    environment: Optional[dict] = None
    host: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ProbeReport":
        return cls(verdict=data.get("verdict", core.FAIL),
                   checks=tuple(Check(**c) for c in data.get("checks") or []),
                   gpus=tuple(data.get("gpus") or []), versions=data.get("versions"),
                   framework=data.get("framework"), environment=data.get("environment"), host=data.get("host", ""))

    @property
    def passed(self) -> bool:
        return self.verdict != core.FAIL


def analyse_capture(text: str, gpus_expected: int = 0) -> ProbeReport:
    """A report from a saved ``nvidia-smi --query-gpu`` capture (CSV with or without header and units)."""
    rows = core.parse_query_csv(text)
    error = None if rows else "no --query-gpu rows in the capture (give the CSV nvidia-smi printed)"
    checks = core.analyse(rows, core.parse_versions(text), error, None, gpus_expected)
    return ProbeReport.from_json({"verdict": core.verdict(checks), "checks": checks, "gpus": rows,
                                  "versions": core.parse_versions(text)})


__all__ = ["Check", "ProbeReport", "analyse_capture", "core"]
