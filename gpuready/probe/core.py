"""The GPU probe: what the GPUs in this container really are, whether they are healthy, and how fast they run.

Standard library only (it runs inside any CUDA image with Python, shipped as this one file); PyTorch, when present,
adds the framework's view and measured throughput. :func:`main` prints one machine-readable line, ``REPORT_MARKER``
followed by JSON, that the SDK finds in a job's logs.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

REPORT_MARKER = "GPUREADY_PROBE_REPORT "
PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

QUERY_FIELDS = (
    "index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version", "memory.total", "memory.used",
    "utilization.gpu", "temperature.gpu", "temperature.gpu.tlimit", "power.draw", "power.limit", "pstate",
    "clocks.current.sm", "clocks.max.sm", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
    "pcie.link.width.max", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total", "remapped_rows.pending", "remapped_rows.failure",
    "retired_pages.pending", "clocks_event_reasons.active", "compute_cap", "mig.mode.current", "persistence_mode",
    "ecc.mode.pending", "compute_mode", "fabric.state", "fabric.status", "gpu_recovery_action",
    "pcie.link.gen.hostmax",
)
RENAMED = {"clocks_event_reasons.active": "clocks_throttle_reasons.active"}
"""Fields that older drivers know by another name (R535 renamed throttle reasons to event reasons)."""
MISSING = ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", "[Insufficient Permissions]",
           "[Requested functionality has been deprecated]", "")
LOST = "[GPU is lost]"

CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
SLOWING = {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
"""Active reasons that mean the GPU runs slower than it should (heat, power delivery, hardware protection)."""

# Typical figures a healthy GPU reaches (tests/data/gpu-specs.md: dense peak x typical fraction; the memory fractions
# are NVIDIA DCGM's per-SKU minimum over its 0.75 floor). None: no figure (V100, T4 and T4G have no bf16 tensor cores,
# PyTorch emulates bf16 there; A10 and B300 have no measured matmul fraction).
# model: (bf16 matmul TFLOP/s peak, fraction typically reached, memory GB/s peak, fraction typically reached)
EXPECTED = {
    "V100": (None, 0.0, 900.0, 0.90),
    "T4": (None, 0.0, 320.0, 0.76),
    "T4G": (None, 0.0, 320.0, 0.76),
    "A10": (None, 0.0, 600.0, 0.81),
    "A10G": (70.0, 0.70, 600.0, 0.81),
    "L4": (121.0, 0.70, 300.0, 0.88),
    "L40S": (362.0, 0.70, 864.0, 0.81),
    "A100 40GB": (312.0, 0.81, 1555.0, 0.83),
    "A100 80GB": (312.0, 0.87, 2039.0, 0.77),
    "H100 SXM": (989.0, 0.80, 3350.0, 0.76),
    "H100 PCIe": (756.0, 0.80, 2000.0, 0.76),
    "H100 NVL": (835.0, 0.80, 3900.0, 0.76),  # NVIDIA H100 datasheet: NVL 1,671 BF16 TFLOP/s sparse, 3.9 TB/s
    "H200": (989.0, 0.80, 4800.0, 0.76),
    "H200 NVL": (835.0, 0.80, 4800.0, 0.76),  # NVIDIA H200 datasheet: NVL 1,671 BF16 TFLOP/s sparse, 4.8 TB/s
    "B200": (2250.0, 0.78, 8000.0, 0.68),
    "B300": (None, 0.0, 8000.0, 0.77),
}
ALL_REDUCE = {"A100 40GB": 235.0, "A100 80GB": 235.0, "H100 SXM": 367.0, "H200": 367.0}
"""Bus bandwidth (GB/s) an all-reduce typically reaches across the 8 NVSwitch GPUs of one node (nccl-tests' busbw,
ring; tests/data/gpu-specs.md; H200 shares H100's NVLink 4 fabric). Other models: no verdict, the figure shown."""
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
"""Usable GB/s of one PCIe lane per generation (after 8b/10b, 128b/130b or FLIT encoding)."""
PCIE_EFFICIENCY = 0.8
"""Share of the link a pinned host-to-device copy typically reaches (Gen4 x16: about 25 of 31.5 GB/s)."""
VERDICT_FLOOR = 0.75
"""Fail a figure below this share of what the GPU typically reaches (DCGM diagnostics' own threshold)."""


def check(name, verdict, measured=None, expected=None, detail="", required=True):
    return {"name": name, "verdict": verdict, "measured": measured, "expected": expected, "detail": detail,
            "required": required}


# --- nvidia-smi output -------------------------------------------------------------------------------------------

TEXT_FIELDS = re.compile(r"version|serial|uuid|name|^pci\.|compute_cap|timestamp|vbios|inforom|hostname")
"""Fields whose values are identifiers or versions, kept as text (``595.80`` is not the number 595.8)."""


def value(text, field=""):
    """A --query-gpu cell as Python: None for every 'not available' marker, numbers without their units."""
    text = text.strip()
    if text == LOST:
        return LOST
    if text in MISSING or text.startswith("["):
        return None
    if TEXT_FIELDS.search(field):
        return text
    if re.fullmatch(r"0x[0-9A-Fa-f]+", text):
        return int(text, 16)
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:\s*(?:MiB|W|MHz|%|C|us|GiB|KiB))?", text)
    if match and "." not in match.group(1) and len(text) < 30:
        return int(match.group(1))
    if match and math.isfinite(float(match.group(1))):
        return float(match.group(1))
    return text


def _field(header):
    """A header cell without its unit: ``memory.total [MiB]`` -> ``memory.total`` (no regex: cells are user text)."""
    header = header.strip()
    start = header.rfind("[")
    if header.endswith("]") and start >= 0 and "]" not in header[start:-1]:
        header = header[:start].rstrip()
    return header


FAMILIES = {f.split(".")[0] for f in QUERY_FIELDS} | {"gpu_name", "gpu_uuid", "gpu_bus_id", "serial", "timestamp",
                                                       "fan"}
"""Names (or their first part) of --query-gpu fields: a header row holds at least one."""


def parse_query_csv(text, fields=None):
    """Rows of ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` output, as dicts by field name.

    Field names come from a header row, else from the last ``--query-gpu=`` command line seen in a capture, else
    from ``fields``. Comments and prompts are skipped, so a saved terminal session parses as it is.
    """
    names = list(fields or [])
    rows, other_query = [], False
    for line in text.splitlines():
        # (?<![\w-]): each match starts after a separator, so the scans never overlap (linear in the line's length)
        command = re.search(r"(?<![\w-])--(help-)?query-([\w-]+)=?([\w.,]*)", line) if "--" in line else None
        if command:  # a new section of a capture; --query-retired-pages and the like are not GPUs
            other_query = command.group(1) is not None or command.group(2) != "gpu" or not command.group(3)
            names = [] if other_query else command.group(3).split(",")
            continue
        if other_query or not line.strip() or line.lstrip().startswith(("#", "$")):
            continue
        try:
            cells = next(csv.reader(io.StringIO(line), skipinitialspace=True))
        except csv.Error:  # a cell longer than csv's limit, or a NUL: not nvidia-smi's
            continue
        header = [_field(c) for c in cells]
        # a header as long as the command's field list is its header: nvidia-smi heads a field asked by an alias
        # with the field's own name (clocks.sm as clocks.current.sm, gpu_uuid as uuid)
        if all(re.fullmatch(r"[a-z_][\w.]*", c) for c in header) and \
                any(c.split(".")[0] in FAMILIES for c in header) and \
                (len(header) == len(names) or not names or header[0] in ("index", "name", "timestamp")):
            names = header
            continue
        if names and len(cells) == len(names):
            rows.append({n: value(c, n) for n, c in zip(names, cells)})
    return rows


def parse_versions(text):
    """Driver and highest supported CUDA version from ``nvidia-smi`` (table or ``--version``), any driver generation."""
    driver = re.search(r"(?:Driver|KMD|DRIVER) [Vv]ersion\s*:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA (?:UMD )?Version\s*:\s*([\d.]+)", text)
    return {"driver": driver.group(1) if driver else None, "cuda": cuda.group(1) if cuda else None}


def parse_mig_devices(text):
    """MIG devices per GPU from ``nvidia-smi -L``, keyed by the GPU's UUID and by its index.

    ``  MIG 3g.71gb     Device  0: (UUID: MIG-...)`` under ``GPU 0: NVIDIA H200 (UUID: GPU-...)`` becomes
    ``{"GPU-...": [{"profile": "3g.71gb", "uuid": "MIG-..."}], 0: <the same list>}``."""
    devices, listed = {}, None
    for line in text.splitlines():
        gpu = re.match(r"GPU (\d+): ", line)
        if gpu:
            uuid = line.rpartition("(UUID: ")[2].rstrip().rstrip(")")
            listed = devices[int(gpu.group(1))] = devices[uuid] = []
            continue
        mig = re.match(r"\s+MIG (\S+)\s+Device\s+\d+: \(UUID: ([^)]+)\)", line)
        if mig and listed is not None:
            listed.append({"profile": mig.group(1), "uuid": mig.group(2)})
    return devices


def with_mig_devices(rows, devices):
    """``rows`` with ``mig.devices``, the MIG devices ``nvidia-smi -L`` listed, on each GPU whose MIG mode is on and
    that the listing names."""
    out = []
    for row in rows:
        listed = devices.get(row.get("uuid"), devices.get(row.get("index")))
        on = row.get("mig.mode.current") == "Enabled" and listed is not None
        out.append(dict(row, **{"mig.devices": listed}) if on else row)
    return out


def run_nvidia_smi(fields=QUERY_FIELDS, runner=subprocess.run, which=shutil.which):
    """Query the GPUs; returns (rows, versions, error). Fields this driver does not know are dropped or renamed."""
    binary = which("nvidia-smi")
    if binary is None:
        return [], {}, "nvidia-smi not found: no NVIDIA driver here (none installed, or the container runtime mounted none), so no GPU can be used"
    fields = list(fields)
    while fields:  # each refusal drops a field, or renames it once
        out = runner([binary, f"--query-gpu={','.join(fields)}", "--format=csv"], capture_output=True, text=True,
                     timeout=60)
        if out.returncode == 0:
            table = runner([binary], capture_output=True, text=True, timeout=60)
            rows = parse_query_csv(out.stdout)  # --format=csv: the header names the fields
            if any(row.get("mig.mode.current") == "Enabled" for row in rows):
                listing = runner([binary, "-L"], capture_output=True, text=True, timeout=60)
                rows = with_mig_devices(rows, parse_mig_devices(listing.stdout))
            return rows, parse_versions(table.stdout), None
        message = (out.stdout + out.stderr).strip()
        bad = re.search(r'Field "([^"]+)" is not a valid field', message)
        if not bad or bad.group(1) not in fields:
            return [], {}, message or f"nvidia-smi exited {out.returncode}"
        name = bad.group(1)
        old = RENAMED.get(name)
        fields[fields.index(name)] = old if old and old not in fields else None
        fields = [f for f in fields if f]
    return [], {}, "nvidia-smi rejected every field"


# --- checks ------------------------------------------------------------------------------------------------------

def active_reasons(mask):
    if not isinstance(mask, int):
        return []
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


def gpu_checks(gpu):
    """Health of one GPU from its --query-gpu row."""
    label = f"gpu{gpu.get('index', '?')}"
    out = []
    if LOST in gpu.values():
        return [check(f"{label}.lost", FAIL, detail="nvidia-smi reports the GPU is lost (fell off the bus): the "
                                                     "node needs a reset or repair")]
    ecc = gpu.get("ecc.errors.uncorrected.volatile.total")
    if isinstance(ecc, int):
        out.append(check(f"{label}.ecc_uncorrected", FAIL if ecc > 0 else PASS, ecc, 0,
                         "uncorrected ECC errors since the driver loaded: results may be wrong" if ecc else ""))
    if gpu.get("remapped_rows.failure") == "Yes":
        out.append(check(f"{label}.row_remap_failure", FAIL, "Yes", "No", "row remapping failed: replace the GPU"))
    if gpu.get("remapped_rows.pending") == "Yes":
        out.append(check(f"{label}.row_remap_pending", WARN, "Yes", "No", "a GPU reset is needed to remap rows"))
    if gpu.get("retired_pages.pending") == "Yes":
        out.append(check(f"{label}.retired_pages_pending", WARN, "Yes", "No", "pages wait for retirement: reset"))
    reasons = [r for r in active_reasons(gpu.get("clocks_event_reasons.active",
                                                 gpu.get("clocks_throttle_reasons.active"))) if r != "gpu_idle"]
    slowing = [r for r in reasons if r in SLOWING]
    if reasons:
        out.append(check(f"{label}.clock_event_reasons", FAIL if slowing else WARN, ",".join(reasons), "none",
                         "clocks held down by " + ", ".join(reasons)))
    elif "clocks_event_reasons.active" in gpu or "clocks_throttle_reasons.active" in gpu:
        out.append(check(f"{label}.clock_event_reasons", PASS, "none", "none"))
    gen, gen_max = gpu.get("pcie.link.gen.current"), gpu.get("pcie.link.gen.max")
    width, width_max = gpu.get("pcie.link.width.current"), gpu.get("pcie.link.width.max")
    busy = isinstance(gpu.get("utilization.gpu"), (int, float)) and gpu["utilization.gpu"] >= 50
    if all(isinstance(v, int) for v in (gen, gen_max, width, width_max)):
        degraded = gen < gen_max or width < width_max
        out.append(check(f"{label}.pcie_link", WARN if degraded and busy else PASS, f"gen{gen} x{width}",
                         f"gen{gen_max} x{width_max}", "link below its maximum under load" if degraded and busy else
                         ("idle GPUs lower their link speed" if degraded else ""), required=False))
    margin = gpu.get("temperature.gpu.tlimit")
    if isinstance(margin, (int, float)):
        out.append(check(f"{label}.thermal_margin", WARN if margin < 5 else PASS, margin, ">= 5 C",
                         "close to thermal slowdown" if margin < 5 else "", required=False))
    return out + state_checks(gpu, label)


RECOVERY = {"Reset": "reset the GPU or reboot", "Reboot": "reboot the node", "Drain P2P": "drain the node, then reset",
            "Drain and Reset": "drain the node, then reset the GPU"}
"""What the driver's recovery action (``gpu_recovery_action``; ``nvidia-smi -q``'s GPU Reset Status on older
drivers) asks of an operator."""
HBM = ("V100", "A100", "H100", "H200", "B200", "B300")
"""Models whose memory is always run with ECC by the clouds (GDDR boards may ship with ECC off)."""


def state_checks(gpu, label):
    """Modes and states that let a GPU pass every figure yet fail a real job: recovery action pending, NVSwitch
    fabric not ready (CUDA cannot start), ECC off, compute prohibited, persistence off."""
    out = []
    action = gpu.get("gpu_recovery_action")
    if action not in (None, "None"):
        out.append(check(f"{label}.recovery_action", FAIL, action, "None", "the driver asks to " +
                         RECOVERY.get(action, "act: see nvidia-smi -q")))
    state, status = gpu.get("fabric.state"), gpu.get("fabric.status")
    if state is not None or status is not None:
        ready = state in (None, "Completed") and status in (None, "Success")
        out.append(check(f"{label}.fabric", PASS if ready else FAIL, f"{state}/{status}", "Completed/Success",
                         "" if ready else "NVSwitch fabric not ready, CUDA cannot start: run nvidia-fabricmanager "
                         "of the driver's version"))
    ecc, pending = gpu.get("ecc.mode.current"), gpu.get("ecc.mode.pending")
    if ecc == "Disabled":
        hbm = model_of(gpu.get("name")) and model_of(gpu.get("name")).split()[0] in HBM
        out.append(check(f"{label}.ecc_mode", FAIL if hbm else WARN, ecc, "Enabled", "memory errors go unseen: "
                         "nvidia-smi -e 1, then reboot"))
    if ecc and pending and pending != ecc:
        out.append(check(f"{label}.ecc_mode_pending", WARN, pending, ecc, "changes at the next reboot"))
    if gpu.get("compute_mode") == "Prohibited":
        out.append(check(f"{label}.compute_mode", FAIL, "Prohibited", "Default", "no CUDA context allowed"))
    if gpu.get("persistence_mode") == "Disabled":
        out.append(check(f"{label}.persistence_mode", WARN, "Disabled", "Enabled", "run nvidia-persistenced",
                         required=False))
    return out


# --- what --query-gpu does not show: processes, kernel log (Xid), NVLink, nvidia-smi -q ----------------------------

HELD_LIMIT = 0.05
"""Share of a GPU's memory others may hold before a job starts (drivers show a few MiB in use on an idle GPU)."""
SHARING = ("time-slicing", "mps", "mig")


def parse_apps(text):
    """Processes on GPUs, from ``--query-compute-apps=...`` CSV (with its header) or the table's Processes rows:
    dicts with pid, name, used (MiB), gpu (UUID or index)."""
    apps, names = [], None
    for line in text.splitlines():
        row = re.match(r"\|\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+[CGM+]+\s+(.+?)\s+(\d+)MiB\s*\|", line)
        if row:
            apps.append({"gpu": int(row.group(1)), "pid": int(row.group(2)), "name": row.group(3),
                         "used": int(row.group(4))})
            continue
        cells = [_field(c) for c in line.split(",")]
        if "pid" in cells and "process_name" in cells:
            names = cells
        elif names and len(cells) == len(names) and cells[0].strip().isdigit():
            got = dict(zip(names, (c.strip() for c in line.split(","))))
            used = value(got.get("used_gpu_memory", got.get("used_memory", "")))
            apps.append({"gpu": got.get("gpu_uuid", got.get("gpu_bus_id")), "pid": int(got["pid"]),
                         "name": got.get("process_name"), "used": used if isinstance(used, int) else None})
        else:
            names = None if not line.strip() or line.startswith(("$", "#")) else names
    return apps


def memory_checks(rows, apps, sharing=None):
    """Memory held before the job starts: fail on a GPU scheduled whole, warn where GPUs are shared on purpose."""
    out = []
    for gpu in rows:
        used, total = gpu.get("memory.used"), gpu.get("memory.total")
        if not isinstance(used, int) or not isinstance(total, int) or total <= 0:
            continue
        label = f"gpu{gpu.get('index', '?')}"
        held = used / total
        mine = [a for a in apps if a["gpu"] in (gpu.get("uuid"), gpu.get("index"), gpu.get("pci.bus_id"))]
        shared = sharing or ("mig" if gpu.get("mig.mode.current") == "Enabled" else None) or \
            ("mps" if any("mps" in (a["name"] or "") for a in mine) else None)
        shown = f"{used} of {total} MiB ({held:.0%})"
        if held <= HELD_LIMIT:
            out.append(check(f"{label}.memory_in_use", PASS, shown, f"<= {HELD_LIMIT:.0%}"))
            continue
        who = "; ".join(f"pid {a['pid']} {a['name']} ({a['used']} MiB)" for a in mine) or \
            "no process visible from here"
        out.append(check(f"{label}.memory_in_use", WARN if shared else FAIL, shown, f"<= {HELD_LIMIT:.0%}",
                         f"held by others: {who}" + (f"; GPUs are shared ({shared})" if shared else
                                                    "; stop it or drain the node")))
    return out


XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)[^)]*\): (\d+),? ?(.*)")
XID_DRAIN = {48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140}
"""Xids of the hardware or its links: drain the node and reset (or replace) the GPU (NVIDIA's Xid catalog, see
README). Any other Xid since boot (13, 31, 43, 45: an application's illegal access, page fault, stopped or killed
kernels) warns: the GPU itself is fine."""


def parse_xids(text):
    """Xid events from a kernel log: (PCI address as domain:bus:device, Xid, message)."""
    return [(_bus(m.group(1)), int(m.group(2)), m.group(3).strip()[:200]) for m in map(XID.search,
                                                                                        text.splitlines()) if m]


def _bus(address):
    """``0000:3b:00`` and ``00000000:3B:00.0`` alike as ``0:3b:00`` (domain, bus, device)."""
    parts = address.lower().split(".")[0].split(":")
    return ":".join([str(int(parts[-3], 16)) if len(parts) > 2 else "0", *parts[-2:]])


KMSG = "/dev/kmsg"


def read_kernel_log(runner=subprocess.run, which=shutil.which):
    """(text, None) from ``dmesg`` or ``/dev/kmsg``; (None, why) where neither may be read (an unprivileged
    container)."""
    why = "dmesg is not installed"
    if which("dmesg"):
        try:
            out = runner([which("dmesg")], capture_output=True, text=True, timeout=30)
            if out.returncode == 0:
                return out.stdout, None
            why = (out.stderr or out.stdout).strip()[:120] or f"dmesg exited {out.returncode}"
        except (OSError, subprocess.SubprocessError) as e:
            why = str(e)[:120]
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return None, f"{why}; {KMSG}: {e.strerror}"
    chunks = []
    try:
        while len(chunks) < 100_000:  # /dev/kmsg: a record (its own line) per read, EAGAIN past the last
            chunk = os.read(fd, 8192)
            if not chunk:  # the end of a file that is not /dev/kmsg
                break
            chunks.append(chunk.decode(errors="replace"))
    except OSError:  # EAGAIN: the end of the buffer
        pass
    finally:
        os.close(fd)
    return "".join(chunks), None


def xid_checks(rows, log, why=None, before=None):
    """Xid events in the kernel log, per GPU: a hardware Xid fails (drain), an application's warns; ``before``: the
    log of an earlier read, so that only new events count (and any new one fails: it came under our load)."""
    if log is None:
        return [check("xid", SKIP, detail=f"kernel log not readable here ({why})", required=False)]
    old = parse_xids(before) if before is not None else []
    events = parse_xids(log)[len(old):] if before is not None else parse_xids(log)
    out = []
    buses = {_bus(str(g.get("pci.bus_id") or "")): f"gpu{g.get('index', '?')}" for g in rows}
    for bus in dict.fromkeys([e[0] for e in events] + list(buses)):
        mine = [e for e in events if e[0] == bus]
        label = buses.get(bus, f"pci {bus}")
        drain = [e for e in mine if e[1] in XID_DRAIN or before is not None]
        shown = ", ".join(f"{x} ({m})" if m else str(x) for _, x, m in mine[-5:]) or "none"
        verdict = FAIL if drain else WARN if mine else PASS
        out.append(check(f"{label}.xid" + ("" if before is None else "_under_load"), verdict, shown, "none", {
            FAIL: "hardware Xid since boot" if before is None else "Xid under load",
            WARN: "application Xids since boot", PASS: ""}[verdict] + (": drain and reset" if drain else ""),
            required=verdict != WARN))
    return out


def parse_nvlink(text):
    """Per GPU index: ``{"links": {n: GB/s or None (down)}, "errors": {(n, counter): count}}`` from ``nvidia-smi
    nvlink --status`` and ``--errorcounters`` output."""
    gpus, gpu = {}, None
    for line in text.splitlines():
        head = re.match(r"GPU (\d+): ", line)
        if head:
            gpu = gpus.setdefault(int(head.group(1)), {"links": {}, "errors": {}})
            continue
        link = re.match(r"\s+Link (\d+): (.+)", line)
        if not link or gpu is None:
            continue
        n, rest = int(link.group(1)), link.group(2).strip()
        speed = re.fullmatch(r"([\d.]+) GB/s", rest)
        counter = re.fullmatch(r"([A-Za-z][\w ]*?): (\d+)", rest)
        if speed or "inactive" in rest.lower():
            gpu["links"][n] = float(speed.group(1)) if speed else None
        elif counter and re.search(r"error|replay|recover|crc", counter.group(1).lower()):
            gpu["errors"][(n, counter.group(1))] = int(counter.group(2))
    return gpus


def nvlink_checks(rows, nvlink, before=None):
    """Links down, and error counters: non-zero since the driver loaded warns; with ``before`` (the state read
    before the probe's load) only counters that rose, which fail."""
    out = []
    for gpu in rows:
        index = gpu.get("index")
        state = nvlink.get(index)
        if not state or not state["links"]:
            continue
        label, links = f"gpu{index}", state["links"]
        down = sorted(n for n, speed in links.items() if speed is None)
        isolated = len(down) == len(links) and len(rows) > 1
        if before is None and down and (len(down) < len(links) or isolated):
            out.append(check(f"{label}.nvlink", FAIL, f"{len(links) - len(down)} of {len(links)} links up",
                             f"{len(links)} up", f"links {','.join(map(str, down))} down: drain and reset"))
        elif before is None and not down:
            out.append(check(f"{label}.nvlink", PASS, f"{len(links)} links up", f"{len(links)} up"))
        errors = state["errors"]
        if before is not None:
            old = (before.get(index) or {}).get("errors", {})
            rose = {k: v - old.get(k, 0) for k, v in errors.items() if v > old.get(k, 0)}
            if rose:
                out.append(check(f"{label}.nvlink_errors_under_load", FAIL, _counts(rose), "no increase",
                                 "rose under load: drain and reset"))
        elif any(errors.values()):
            out.append(check(f"{label}.nvlink_errors", WARN, _counts(errors), 0, "since the driver loaded",
                             required=False))
    return out


def _counts(errors):
    return ", ".join(f"link {n} {name} {count}" for (n, name), count in sorted(errors.items())[:6])


def parse_q(text):
    """Fields of ``nvidia-smi -q`` that older drivers' --query-gpu lacks, per PCI bus: the fabric's state and
    status and the GPU reset status, named as the newer query fields."""
    gpus, gpu, section = {}, None, ""
    for line in text.splitlines():
        head = re.match(r"GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.\d)\s*$", line)
        if head:
            gpu = gpus.setdefault(_bus(head.group(1)), {})
            continue
        item = re.match(r"( +)([^:]+?)\s*:\s*(.*)", line) if gpu is not None else None
        if line.strip() and not item and gpu is not None:
            section = line.strip()
        if not item:
            continue
        key, got = item.group(2), value(item.group(3))
        if section == "Fabric" and key in ("State", "Status"):
            gpu[f"fabric.{key.lower()}"] = got
        elif key in ("Reset Required", "Drain and Reset Recommended") and got == "Yes":
            gpu["gpu_recovery_action"] = "Reset" if key == "Reset Required" else "Drain and Reset"
        elif key == "GPU Recovery Action":
            gpu["gpu_recovery_action"] = got
    return gpus


def with_q(rows, q):
    """``rows`` completed with what ``nvidia-smi -q`` showed (:func:`parse_q`) where the query did not answer."""
    return [{**row, **{k: v for k, v in q.get(_bus(str(row.get("pci.bus_id") or "")), {}).items()
                       if row.get(k) is None}} for row in rows]


def _version(text):
    match = re.match(r"(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def compatibility_checks(driver_cuda, framework, framework_cuda):
    """The CUDA version a framework was built with against the highest the driver supports."""
    built, supported = _version(framework_cuda), _version(driver_cuda)
    if not built or not supported:
        return []
    label = f"{framework}_cuda_vs_driver"
    shown = (f"{framework} built for CUDA {framework_cuda}", f"driver supports CUDA {driver_cuda}")
    if built[0] > supported[0]:
        return [check(label, FAIL, *shown, detail=f"a {framework} built for CUDA {built[0]} sees no GPU on a driver "
                      f"for CUDA {supported[0]}: upgrade the driver or use a CUDA {supported[0]}.x build")]
    if built > supported:
        return [check(label, WARN, *shown, detail="minor-version compatibility: runs, but kernels that need JIT "
                      "(PTX) or newer driver features fail; prefer a build for the driver's CUDA or a newer driver")]
    return [check(label, PASS, *shown)]


def environment():
    keys = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
    return {k: os.environ.get(k) for k in keys}


def environment_checks(env):
    out = []
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        out.append(check("cuda_visible_devices", FAIL, repr(visible), "unset or device ids",
                         "CUDA_VISIBLE_DEVICES hides every GPU from CUDA: frameworks see 0 devices"))
    if (env.get("NVIDIA_VISIBLE_DEVICES") or "").strip() in ("void", "none"):
        out.append(check("nvidia_visible_devices", FAIL, env["NVIDIA_VISIBLE_DEVICES"], "all or device ids",
                         "the container runtime mounted no GPU"))
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES")
    if caps is not None and not {"compute", "all"} & set(caps.replace(" ", "").split(",")):
        out.append(check("nvidia_driver_capabilities", FAIL, caps, "compute,utility",
                         "without 'compute' the runtime mounts no CUDA libraries"))
    return out


def model_of(name, memory_mib=None):
    """The key of :data:`EXPECTED` for a GPU by its nvidia-smi name (``NVIDIA H100 80GB HBM3``, ``Tesla
    V100-SXM2-16GB``, ``NVIDIA A100-SXM4-40GB``), or None: whole words only, so an L40 is not an L4."""
    words = set(re.split(r"[\s-]+", (name or "").upper()))
    for model in sorted(EXPECTED, key=len, reverse=True):
        first, _, variant = model.upper().partition(" ")
        if first not in words:
            continue
        if first == "A100" and not {"40GB", "80GB"} & words:
            variant = "80GB" if (memory_mib or 0) > 50_000 else "40GB"
            return f"A100 {variant}"
        if not variant or variant in words or (variant == "SXM" and not {"PCIE", "NVL"} & words):
            return model
    return None


def expected_for(name, memory_mib=None):
    """Typical figures for a GPU by its nvidia-smi name, or None."""
    model = model_of(name, memory_mib)
    return EXPECTED[model] if model else None


# --- framework view and throughput (PyTorch, when present) -------------------------------------------------------

def torch_checks(gpus_expected, smi_rows, quick=True, runner=subprocess.run, which=shutil.which):
    try:
        import torch
    except ImportError:
        return {"framework": None}, [check("framework", SKIP, detail="PyTorch is not installed: no throughput "
                                                                      "figures", required=False)]
    info = {"framework": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}
    try:
        info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001 (no NCCL in CPU builds)
        info["nccl"] = None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    info["device_count"] = count
    out = [check("torch_device_count", FAIL if count == 0 or count < gpus_expected else PASS, count,
                 max(gpus_expected, len(smi_rows)),
                 "torch sees fewer GPUs than nvidia-smi or the stack promised" if count < max(gpus_expected, 1)
                 else "")]
    if count == 0:
        return info, out
    size, reps, n = (4096 if quick else 8192), 10, 256 * 2**20
    for i in range(count):
        props = torch.cuda.get_device_properties(i)
        typical = expected_for(props.name, props.total_memory // 2**20) or (None, 0, None, 0)
        a = torch.randn(size, size, device=f"cuda:{i}", dtype=torch.bfloat16)
        b = torch.randn(size, size, device=f"cuda:{i}", dtype=torch.bfloat16)
        seconds = _timed(torch, i, lambda: a @ b, reps)
        out.append(_figure(f"gpu{i}.bf16_matmul_tflops", 2 * size ** 3 * reps / seconds / 1e12,
                           typical[0] and typical[0] * typical[1]))
        src, dst = (torch.empty(n, dtype=torch.uint8, device=f"cuda:{i}") for _ in range(2))
        seconds = _timed(torch, i, lambda: dst.copy_(src), reps)  # bytes read + written
        out.append(_figure(f"gpu{i}.memory_bandwidth_gbps", 2 * n * reps / seconds / 1e9,
                           typical[2] and typical[2] * typical[3]))
        host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        seconds = _timed(torch, i, lambda: dst.copy_(host, non_blocking=True), reps)
        out.append(_figure(f"gpu{i}.host_to_device_gbps", n * reps / seconds / 1e9,
                           host_to_device_typical(smi_rows[i] if i < len(smi_rows) else {}), soft=True))
    out += pcie_under_load(torch, count, runner, which)
    if count > 1:
        out.append(all_reduce_check(torch, count, torch.cuda.get_device_properties(0).name))
    return info, out


def _timed(torch, device, work, reps):
    """Seconds ``reps`` runs of ``work`` take on ``device``, after three to warm up."""
    for _ in range(3):
        work()
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(reps):
        work()
    torch.cuda.synchronize(device)
    return time.perf_counter() - start


def host_to_device_typical(gpu):
    """What a pinned host-to-device copy typically reaches over the link the GPU and host both support (GB/s)."""
    gens = [gpu.get(f) for f in ("pcie.link.gen.max", "pcie.link.gen.hostmax") if isinstance(gpu.get(f), int)]
    width = gpu.get("pcie.link.width.max")
    if not gens or not isinstance(width, int) or min(gens) not in PCIE_LANE_GBPS:
        return None
    return PCIE_LANE_GBPS[min(gens)] * width * PCIE_EFFICIENCY


def all_reduce_check(torch, count, name):
    """An all-reduce across the node's GPUs (one process, NCCL): correct sums, and the bus bandwidth against what
    the model's NVLink typically reaches with 8 GPUs (:data:`ALL_REDUCE`)."""
    tensors = [torch.ones(64 * 2**20, device=f"cuda:{i}") for i in range(count)]
    torch.cuda.nccl.all_reduce(tensors)
    torch.cuda.synchronize()
    ok = all(float(t[0]) == count for t in tensors)
    start = time.perf_counter()
    for _ in range(5):
        torch.cuda.nccl.all_reduce(tensors)
    torch.cuda.synchronize()
    busbw = tensors[0].numel() * 4 / ((time.perf_counter() - start) / 5) / 1e9 * 2 * (count - 1) / count
    if not ok:
        return check("nccl_all_reduce", FAIL, round(busbw, 1), None, "all-reduce returned wrong sums")
    # an A100 PCIe is held to the A100's figures elsewhere, but has no NVSwitch
    pcie = "PCIE" in re.split(r"[\s-]+", name.upper())
    typical = ALL_REDUCE.get(model_of(name)) if count == 8 and not pcie else None
    if typical is None:
        return check("nccl_all_reduce", PASS, round(busbw, 1), None, f"bus bandwidth GB/s across {count} GPUs; no "
                     f"typical figure for {count} x {name}", required=False)
    return _figure("nccl_all_reduce", busbw, typical)


LOAD_FIELDS = ("index", "utilization.gpu", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
               "pcie.link.width.max")


def pcie_under_load(torch, count, runner=subprocess.run, which=shutil.which):
    """The PCIe link read while every GPU multiplies matrices: idle GPUs lower their link, busy ones must not."""
    work = [torch.randn(4096, 4096, device=f"cuda:{i}", dtype=torch.bfloat16) for i in range(count)]
    for _ in range(200):  # queued asynchronously: the GPUs stay busy while nvidia-smi looks
        for a in work:
            a @ a
    rows, _, error = run_nvidia_smi(LOAD_FIELDS, runner, which)
    torch.cuda.synchronize()
    if error:
        return []
    # read while the GPUs work: judged as busy whatever utilization the sample caught
    return [c for gpu in rows for c in gpu_checks({**gpu, "utilization.gpu": 100}) if c["name"].endswith(".pcie_link")]


def _figure(name, measured, typical, required=True, soft=False):
    """A measured figure against what the GPU typically reaches: below :data:`VERDICT_FLOOR` of it fails (warns
    when ``soft``: a figure the host shapes as much as the GPU)."""
    measured = round(measured, 1)
    if not typical:
        return check(name, PASS, measured, None, "no typical figure for this GPU", required=False)
    verdict = PASS if measured >= VERDICT_FLOOR * typical else WARN if soft else FAIL
    return check(name, verdict, measured, round(typical, 1),
                 "" if verdict == PASS else f"below {VERDICT_FLOOR:.0%} of what this GPU typically reaches",
                 required=required)


# --- the report --------------------------------------------------------------------------------------------------

def node_state(rows, runner=subprocess.run, which=shutil.which, q=True):
    """What the node shows besides --query-gpu: its compute processes, NVLink, kernel log, and (``q``)
    ``nvidia-smi -q`` where an older driver's query lacks the fabric and reset fields; ``rows`` completed with it."""
    binary = which("nvidia-smi")

    def run(*args):
        try:
            out = runner([binary, *args], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout if out.returncode == 0 else ""

    if q and rows and all(r.get("fabric.state") is None and r.get("gpu_recovery_action") is None for r in rows):
        rows = with_q(rows, parse_q(run("-q")))
    log, why = read_kernel_log(runner, which)
    return rows, {"apps": parse_apps(run("--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
                                         "--format=csv")),
                  "nvlink": parse_nvlink(run("nvlink", "--status") + "\n" + run("nvlink", "--errorcounters")),
                  "log": log, "log_why": why}


def capture_state(text):
    """:func:`node_state`'s view from a saved capture: what of it the file holds."""
    log = text if "NVRM" in text else None
    return {"apps": parse_apps(text), "nvlink": parse_nvlink(text), "log": log,
            "log_why": "the capture holds no kernel log: append `dmesg` output to see Xid events"}


def latest_snapshots(rows):
    """``rows`` with one row per GPU, its last (a capture may hold several snapshots of each GPU: idle, then busy),
    in the order the GPUs first appear; and the most snapshots of one GPU."""
    latest, counts = {}, {}
    for i, gpu in enumerate(rows):
        # index 0 is a GPU like another; a row naming none is its own (by position, apart from every index)
        identity = next(((k, gpu[k]) for k in ("uuid", "gpu_uuid", "pci.bus_id", "index") if gpu.get(k) is not None),
                        ("row", i))
        counts[identity] = counts.get(identity, 0) + 1
        latest[identity] = gpu  # a key keeps its first place in the dict when its value is replaced
    return list(latest.values()), max(counts.values(), default=0)


def analyse(rows, versions, error=None, env=None, gpus_expected=0, state=None, sharing=None):
    """Checks from nvidia-smi's view (rows and versions), the node's ``state`` (:func:`node_state`) and the
    environment, without running anything. ``sharing``: how the stack shares GPUs on purpose (time-slicing, mps,
    mig), so memory others hold warns instead of failing."""
    checks = environment_checks(env or {})
    if error:
        checks.insert(0, check("nvidia_driver", FAIL, detail=error))
        return checks
    checks.append(check("nvidia_driver", PASS, versions.get("driver") or (rows[0].get("driver_version")
                                                                          if rows else None)))
    rows, snapshots = latest_snapshots(rows)
    seen = len(rows)
    want = max(gpus_expected, 1)
    checks.append(check("gpu_count", FAIL if seen < want else PASS, seen, want,
                        "no GPU visible" if seen == 0 else
                        ("fewer GPUs than the stack promised" if seen < want else "")
                        + (f"{'; ' if seen < want else ''}each GPU judged on the latest of its {snapshots} "
                           "snapshots in the capture" if snapshots > 1 else "")))
    for gpu in rows:
        checks += gpu_checks(gpu)
    state = state or {}
    checks += memory_checks(rows, state.get("apps") or [], sharing)
    checks += nvlink_checks(rows, state.get("nvlink") or {})
    if "log" in state:
        checks += xid_checks(rows, state["log"], state.get("log_why"))
    return checks


def verdict(checks):
    required = [c for c in checks if c["required"]]
    if any(c["verdict"] == FAIL for c in required):
        return FAIL
    if any(c["verdict"] == WARN for c in checks):
        return WARN
    return PASS


BURN_SECONDS = 300
"""The sustained tier's length unless told (``--seconds``)."""


def probe(gpus_expected=0, quick=True, runner=subprocess.run, which=shutil.which, seconds=BURN_SECONDS,
          sharing=None):
    """Everything this machine can tell: nvidia-smi, the node's state, the environment, and PyTorch when present
    (the quick figures; without ``quick``, larger ones and, for ``seconds`` > 0, the sustained tier of
    ``burn.py``). Xid events and NVLink errors that appear while the probe loads the GPUs fail."""
    env = environment()
    rows, versions, error = run_nvidia_smi(runner=runner, which=which)
    state = {}
    if not error:
        rows, state = node_state(rows, runner, which)
    checks = analyse(rows, versions, error, env, gpus_expected, state, sharing)
    framework = {"framework": None}
    if not error:
        framework, more = torch_checks(gpus_expected, rows, quick, runner, which)
        if not quick and seconds > 0 and framework.get("device_count"):
            more += _burn(framework["device_count"], seconds, runner, which)
        replaced = {c["name"] for c in more}  # the PCIe link read under load replaces the idle reading
        checks = [c for c in checks if c["name"] not in replaced] + more
        checks += compatibility_checks(versions.get("cuda"), "torch", framework.get("cuda"))
        if framework.get("device_count"):
            _, after = node_state(rows, runner, which, q=False)
            checks += nvlink_checks(rows, after["nvlink"], before=state["nvlink"])
            if state["log"] is not None and after["log"] is not None:
                checks += [c for c in xid_checks(rows, after["log"], before=state["log"]) if c["verdict"] == FAIL]
    return {"version": 1, "verdict": verdict(checks), "checks": checks, "gpus": rows, "versions": versions,
            "framework": framework, "environment": env, "host": os.uname().nodename if hasattr(os, "uname") else ""}


def _burn(count, seconds, runner, which):
    """The sustained tier's checks: ``burn.py`` from this package, or beside this file where a job carries both,
    run with this module (burn.py imports none of the probe: this is the one way between them)."""
    try:
        from . import burn
    except ImportError:
        try:
            import burn
        except ImportError:
            return [check("burn", FAIL, detail="burn.py is not beside the probe: the sustained tier cannot run")]
    import torch

    return burn.burn(torch, count, seconds, sys.modules[__name__], runner, which)


def finite(data, path="", notes=None):
    """``data`` with every infinite or NaN number as None, and a note naming it in ``notes``: strict JSON."""
    notes = [] if notes is None else notes
    if isinstance(data, float) and not math.isfinite(data):
        notes.append(f"{path} was {data}, written as null")
    elif isinstance(data, dict):
        return {k: finite(v, f"{path}.{k}".lstrip("."), notes) for k, v in data.items()}
    elif isinstance(data, (list, tuple)):
        return [finite(v, f"{path}[{i}]", notes) for i, v in enumerate(data)]
    else:
        return data


def report_line(report):
    notes = []
    report = finite(report, notes=notes)
    if notes:
        report["notes"] = notes
    return REPORT_MARKER + json.dumps(report, separators=(",", ":"), default=str, allow_nan=False)


def find_report(text, marker=REPORT_MARKER):
    """The last report in ``text`` (a job's logs) printed after ``marker`` (the probe's by default), or None."""
    for line in reversed(text.splitlines()):
        index = line.find(marker)
        if index >= 0:
            try:
                return json.loads(line[index + len(marker):])
            except json.JSONDecodeError:
                continue
    return None


def main(argv=None):
    """``[--gpus N] [--full [--seconds S]] [--sharing time-slicing|mps|mig]``: prints the report line; exit 1 when
    it fails."""
    argv = sys.argv[1:] if argv is None else argv

    def option(name, default=None):
        return argv[argv.index(name) + 1] if name in argv[:-1] else default

    report = probe(gpus_expected=int(option("--gpus", 0)), quick="--full" not in argv,
                   seconds=float(option("--seconds", BURN_SECONDS)), sharing=option("--sharing"))
    print(report_line(report), flush=True)
    return 0 if report["verdict"] != FAIL else 1


if __name__ == "__main__":
    sys.exit(main())
