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
    "clocks.sm", "clocks.max.sm", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
    "pcie.link.width.max", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total", "remapped_rows.pending", "remapped_rows.failure",
    "retired_pages.pending", "clocks_event_reasons.active", "compute_cap", "mig.mode.current",
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

# Typical figures a healthy GPU reaches (../shared/reference/gpu-specs.md: dense peak x typical fraction).
# model: (bf16 matmul TFLOP/s peak, fraction typically reached, memory GB/s peak, fraction typically reached)
EXPECTED = {
    "T4": (65.0, 0.70, 320.0, 0.76),
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
}
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
        if all(re.fullmatch(r"[a-z_][\w.]*", c) for c in header) and \
                any(c.split(".")[0] in FAMILIES for c in header) and \
                (header == names[:len(header)] or not names or header[0] in ("index", "name", "timestamp")):
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
    for _ in range(len(fields) + 1):
        out = runner([binary, f"--query-gpu={','.join(fields)}", "--format=csv"], capture_output=True, text=True,
                     timeout=60)
        if out.returncode == 0:
            table = runner([binary], capture_output=True, text=True, timeout=60)
            rows = parse_query_csv(out.stdout, fields)
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
    return out


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


def expected_for(name, memory_mib=None):
    """Typical figures for a GPU by its nvidia-smi name, or None."""
    name = name or ""
    for model in sorted(EXPECTED, key=len, reverse=True):
        words = model.split()
        if all(w in name for w in words[:1]) and (len(words) == 1 or words[1] in name
                                                  or (words[1] == "SXM" and "PCIe" not in name and "NVL" not in name)):
            if model.startswith("A100") and memory_mib and "GB" not in name:
                return EXPECTED["A100 80GB" if memory_mib > 50_000 else "A100 40GB"]
            return EXPECTED[model]
    return None


# --- framework view and throughput (PyTorch, when present) -------------------------------------------------------

def torch_checks(gpus_expected, smi_rows, quick=True):
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
    size = 4096 if quick else 8192
    for i in range(count):
        props = torch.cuda.get_device_properties(i)
        typical = expected_for(props.name, props.total_memory // 2**20)
        a = torch.randn(size, size, device=f"cuda:{i}", dtype=torch.bfloat16)
        b = torch.randn(size, size, device=f"cuda:{i}", dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize(i)
        reps, start = 10, time.perf_counter()
        for _ in range(reps):
            a @ b
        torch.cuda.synchronize(i)
        tflops = 2 * size ** 3 * reps / (time.perf_counter() - start) / 1e12
        out.append(_figure(f"gpu{i}.bf16_matmul_tflops", tflops, typical and typical[0] * typical[1]))
        n = 256 * 2**20
        src, dst = torch.empty(n, dtype=torch.uint8, device=f"cuda:{i}"), torch.empty(n, dtype=torch.uint8,
                                                                                      device=f"cuda:{i}")
        dst.copy_(src)
        torch.cuda.synchronize(i)
        start = time.perf_counter()
        for _ in range(reps):
            dst.copy_(src)
        torch.cuda.synchronize(i)
        gbps = 2 * n * reps / (time.perf_counter() - start) / 1e9  # bytes read + written
        out.append(_figure(f"gpu{i}.memory_bandwidth_gbps", gbps, typical and typical[2] * typical[3]))
        host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        start = time.perf_counter()
        for _ in range(reps):
            dst.copy_(host, non_blocking=True)
        torch.cuda.synchronize(i)
        out.append(_figure(f"gpu{i}.host_to_device_gbps", n * reps / (time.perf_counter() - start) / 1e9, None,
                           required=False))
    out += pcie_under_load(torch, count)
    if count > 1:
        tensors = [torch.ones(64 * 2**20, device=f"cuda:{i}") for i in range(count)]
        torch.cuda.nccl.all_reduce(tensors)
        torch.cuda.synchronize()
        ok = all(float(t[0]) == count for t in tensors)
        start = time.perf_counter()
        for _ in range(5):
            torch.cuda.nccl.all_reduce(tensors)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / 5
        busbw = tensors[0].numel() * 4 / seconds / 1e9 * 2 * (count - 1) / count
        out.append(check("nccl_all_reduce", PASS if ok else FAIL, round(busbw, 1), None,
                         "bus bandwidth GB/s across the node's GPUs" if ok else "all-reduce returned wrong sums"))
    return info, out


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
    return [c for gpu in rows for c in gpu_checks(dict(gpu, **{"utilization.gpu": max(
        gpu.get("utilization.gpu") or 0, 50)})) if c["name"].endswith(".pcie_link")]


def _figure(name, measured, typical, required=True):
    measured = round(measured, 1)
    if not typical:
        return check(name, PASS, measured, None, "no typical figure for this GPU", required=False)
    verdict = PASS if measured >= VERDICT_FLOOR * typical else FAIL
    return check(name, verdict, measured, round(typical, 1),
                 "" if verdict == PASS else f"below {VERDICT_FLOOR:.0%} of what this GPU typically reaches",
                 required=required)


# --- the report --------------------------------------------------------------------------------------------------

def analyse(rows, versions, error=None, env=None, gpus_expected=0):
    """Checks from nvidia-smi's view (rows and versions) and the environment, without running anything."""
    checks = environment_checks(env or {})
    if error:
        checks.insert(0, check("nvidia_driver", FAIL, detail=error))
        return checks
    checks.append(check("nvidia_driver", PASS, versions.get("driver") or (rows[0].get("driver_version")
                                                                          if rows else None)))
    seen = len({g.get("uuid") or g.get("gpu_uuid") or g.get("pci.bus_id") or g.get("index") or i
                for i, g in enumerate(rows)})  # a capture may hold several snapshots of each GPU
    want = max(gpus_expected, 1)
    checks.append(check("gpu_count", FAIL if seen < want else PASS, seen, want,
                        "no GPU visible" if seen == 0 else
                        ("fewer GPUs than the stack promised" if seen < want else "")))
    seen_ids: dict = {}
    for i, gpu in enumerate(rows):
        identity = gpu.get("uuid") or gpu.get("pci.bus_id") or gpu.get("index") or i
        seen_ids[identity] = seen_ids.get(identity, 0) + 1
        found = gpu_checks(gpu)
        if seen_ids[identity] > 1:  # a later snapshot of the same GPU in a capture
            for c in found:
                c["name"] = c["name"].replace(".", f"#{seen_ids[identity]}.", 1)
        checks += found
    return checks


def verdict(checks):
    required = [c for c in checks if c["required"]]
    if any(c["verdict"] == FAIL for c in required):
        return FAIL
    if any(c["verdict"] == WARN for c in checks):
        return WARN
    return PASS


def probe(gpus_expected=0, quick=True, runner=subprocess.run, which=shutil.which):
    """Everything this machine can tell: nvidia-smi, the environment, and PyTorch when present."""
    env = environment()
    rows, versions, error = run_nvidia_smi(runner=runner, which=which)
    checks = analyse(rows, versions, error, env, gpus_expected)
    framework = {"framework": None}
    if not error:
        framework, more = torch_checks(gpus_expected, rows, quick)
        checks += more
        checks += compatibility_checks(versions.get("cuda"), "torch", framework.get("cuda"))
    return {"version": 1, "verdict": verdict(checks), "checks": checks, "gpus": rows, "versions": versions,
            "framework": framework, "environment": env, "host": os.uname().nodename if hasattr(os, "uname") else ""}


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
    argv = sys.argv[1:] if argv is None else argv
    gpus = int(argv[argv.index("--gpus") + 1]) if "--gpus" in argv else 0
    report = probe(gpus_expected=gpus, quick="--full" not in argv)
    print(report_line(report), flush=True)
    return 0 if report["verdict"] != FAIL else 1


if __name__ == "__main__":
    sys.exit(main())
