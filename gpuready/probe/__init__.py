"""The GPU probe (``gpuready.probe.core``, standard library only, runs inside jobs) and its typed results."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any, Optional, Union

from ..errors import UserError
from . import core

NVIDIA_SMI_MARKERS = ("NVIDIA-SMI", "No devices were found", "Failed to initialize NVML",
                      "couldn't communicate with the NVIDIA driver", "--query-gpu=")
"""Text only nvidia-smi (or a terminal session running it) prints, found in a capture that holds no GPU rows."""
QUERY_FAMILIES = frozenset((
    "accounting", "addressing_mode", "c2c", "clocks", "clocks_event_reasons", "clocks_event_reasons_counters",
    "clocks_throttle_reasons", "compute_cap", "compute_mode", "count", "display_active", "display_attached",
    "display_mode", "dramEncryption", "driver_model", "driver_version", "ecc", "edpp_multiplier", "encoder",
    "enforced", "fabric", "fan", "gom", "gpu", "gpu_bus_id", "gpu_name", "gpu_operation_mode", "gpu_recovery_action",
    "gpu_serial", "gpu_uuid", "gsp", "hostname", "index", "inforom", "kmd_version", "memory", "mig", "module", "name",
    "pci", "pcie", "persistence_mode", "platform", "power", "power_smoothing", "protected_memory", "pstate",
    "remapped_rows", "retired_pages", "serial", "temperature", "timestamp", "utilization", "uuid", "vbios_version",
    "vgpu_device_capability", "vgpu_driver_capability"))
"""The first part of every ``--query-gpu`` field nvidia-smi knows (``nvidia-smi --help-query-gpu`` of driver
590.48.01, and ``kmd_version`` that 595.80 adds; tests/data/nvidia-smi). A CSV whose columns are mostly others is
another tool's; a few unknown ones are a newer driver's fields."""


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
        """The report in ``data``; infinite and NaN figures become None, so whatever prints it writes strict JSON."""
        data = core.finite(data)
        return cls(verdict=data.get("verdict", core.FAIL),
                   checks=tuple(Check(**c) for c in data.get("checks") or []),
                   gpus=tuple(data.get("gpus") or []), versions=data.get("versions"),
                   framework=data.get("framework"), environment=data.get("environment"), host=data.get("host", ""))

    @property
    def passed(self) -> bool:
        return self.verdict != core.FAIL

    def gpu_lines(self) -> list[str]:
        """What each GPU is, for people: one line per GPU (its first snapshot in a capture) naming model, memory,
        driver, CUDA version and MIG mode, then one line per MIG instance when MIG is on."""
        versions = self.versions or {}
        lines, seen = [], set()
        for i, gpu in enumerate(self.gpus):
            identity = gpu.get("uuid") or gpu.get("pci.bus_id") or gpu.get("index", i)
            if identity in seen:
                continue
            seen.add(identity)
            memory = gpu.get("memory.total")
            facts = [_text(gpu.get("name") or gpu.get("gpu_name") or "unknown model"),
                     f"{memory} MiB" if isinstance(memory, int) else "memory unknown",
                     f"driver {_text(gpu.get('driver_version') or versions.get('driver') or 'unknown')}",
                     f"CUDA {_text(versions.get('cuda') or 'unknown')}", _mig_mode(gpu)]
            lines.append(f"gpu{_text(gpu.get('index', i))}  " + ", ".join(facts))
            lines += [f"        MIG {_text(d.get('profile'))}  {_text(d.get('uuid'))}"
                      for d in gpu.get("mig.devices") or []]
        return lines


def _text(value: Any) -> str:
    """``value`` as one line of text a terminal shows as it is (control characters escaped: captures are user files)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))


def _mig_mode(gpu: dict) -> str:
    if "mig.mode.current" not in gpu:
        return "MIG mode unknown"
    mode = gpu["mig.mode.current"]
    if mode is None:
        return "no MIG"
    if mode != "Enabled":
        return f"MIG {_text(mode).lower()}"
    if "mig.devices" not in gpu:
        return "MIG enabled (instances unknown: nvidia-smi -L lists them)"
    count = len(gpu["mig.devices"])
    return f"MIG enabled, {count} instance{'' if count == 1 else 's'}"


def decode_capture(data: Union[str, bytes]) -> str:
    """A capture's text: UTF-8 (with or without BOM) or UTF-16 with a BOM, as PowerShell's ``>`` writes it.

    Raises :class:`UserError` for bytes that are none of these."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            break
    else:
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise UserError(f"the capture is not UTF-8 or UTF-16 text (byte {e.start}): this does not look like "
                        "nvidia-smi output. Fix: save the output of nvidia-smi --query-gpu=... --format=csv as "
                        "text") from None


def analyse_capture(text: Union[str, bytes], gpus_expected: int = 0, sharing: Optional[str] = None) -> ProbeReport:
    """A report from a saved ``nvidia-smi --query-gpu`` capture (CSV with or without header and units), with what
    else the file holds: ``--query-compute-apps`` or the table's processes, ``nvidia-smi nvlink --status`` and
    ``--errorcounters``, ``nvidia-smi -q``, and kernel log lines (Xid). ``sharing``: as :func:`core.analyse`.

    Raises :class:`UserError` when the capture holds neither GPU rows nor anything else nvidia-smi prints: a wrong
    file must not read as a verdict on GPUs."""
    text = decode_capture(text)
    rows = core.parse_query_csv(text)
    versions = core.parse_versions(text)
    if not rows and not versions["driver"] and not any(m in text for m in NVIDIA_SMI_MARKERS):
        raise UserError("the capture holds no --query-gpu rows and nothing else nvidia-smi prints: this does not "
                        "look like nvidia-smi output. Fix: give the file nvidia-smi --query-gpu=index,name,uuid,... "
                        "--format=csv wrote")
    columns = {f for row in rows for f in row if f != "mig.devices"}
    foreign = sorted(f for f in columns if f.split(".")[0] not in QUERY_FAMILIES)
    if 2 * len(foreign) >= len(columns) > 0 or any(not isinstance(row.get("index", 0), int) for row in rows):
        raise UserError(f"the capture's CSV has columns nvidia-smi --query-gpu does not print "
                        f"({', '.join(map(_text, foreign[:5])) or 'an index that is not a number'}): it looks like "
                        "another tool's. Fix: give the file nvidia-smi --query-gpu=index,name,uuid,... --format=csv "
                        "wrote")
    error = None if rows else "no --query-gpu rows in the capture (give the CSV nvidia-smi printed)"
    rows = core.with_q(core.with_mig_devices(rows, core.parse_mig_devices(text)), core.parse_q(text))
    checks = core.analyse(rows, versions, error, None, gpus_expected, core.capture_state(text), sharing)
    return ProbeReport.from_json({"verdict": core.verdict(checks), "checks": checks,
                                  "gpus": core.latest_snapshots(rows)[0],
                                  "versions": versions})


__all__ = ["Check", "ProbeReport", "analyse_capture", "core", "decode_capture"]
