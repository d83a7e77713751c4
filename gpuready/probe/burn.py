"""The probe's sustained tier (``--full``): every GPU under bounded GEMM and memory load for minutes, nvidia-smi read
while it runs. Standard library and PyTorch; shipped beside ``core.py`` where a job runs the full probe.

It imports nothing of the probe's: ``core.py`` runs the tier and hands itself in (``probe``: its nvidia-smi reader,
expectations and check helpers), so that the two import in one direction only and the tier uses the very module
that runs, whatever name a job gives its file (``probe.py`` on Kubernetes, ``__main__`` when run as a script).
"""

import shutil
import subprocess
import time

BURN_FIELDS = ("index", "clocks.current.sm", "temperature.gpu", "power.draw", "clocks_event_reasons.active",
               "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.volatile.total")
BURN_ROUND_S = 10.0
"""Each round of load lasts about this long; nvidia-smi is read once a round, while the GPUs work."""
SAG_LIMIT = 0.90
"""A GPU whose last quarter of rounds runs below this share of its first quarter fails (heat, power, clocks)."""
SIZING_ROUNDS = 1
"""Rounds that size the rest (20 products and 20 copies: tens of milliseconds) and warm the libraries: not judged.
On a real H100 the first ran at 787 TFLOP/s on one machine and 131 on another (cold cuBLAS), the ~10 s rounds after
it at 680-690 on both, SM clock at 1980 MHz throughout (tests/data/nvidia-smi/h100-device-2026-11-26)."""


def burn(torch, count, seconds, probe, runner=subprocess.run, which=shutil.which):
    """Bounded sustained load on every GPU at once: bf16 GEMMs and device memory copies in rounds of about
    :data:`BURN_ROUND_S`, each timed on the GPU (CUDA events), nvidia-smi read while the rounds run (``probe``: the
    probe module, ``core``). The verdicts are :func:`burn_checks`'."""
    size, n = 8192, 2**30
    work = [(torch.randn(size, size, device=f"cuda:{i}", dtype=torch.bfloat16),
             torch.empty(n, dtype=torch.uint8, device=f"cuda:{i}"),
             torch.empty(n, dtype=torch.uint8, device=f"cuda:{i}")) for i in range(count)]
    reps, copies = [20] * count, [20] * count
    gemm, memory, samples = [[] for _ in range(count)], [[] for _ in range(count)], []
    start = time.perf_counter()
    while True:
        events = []
        for i, (a, src, dst) in enumerate(work):
            with torch.cuda.device(i):
                marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                marks[0].record()
                for _ in range(reps[i]):
                    a @ a
                marks[1].record()
                for _ in range(copies[i]):
                    dst.copy_(src)
                marks[2].record()
                events.append(marks)
        rows, _, _ = probe.run_nvidia_smi(BURN_FIELDS, runner, which)
        samples.append((round(time.perf_counter() - start, 1), rows))
        for i, marks in enumerate(events):
            torch.cuda.synchronize(i)
            gemm_s, copy_s = marks[0].elapsed_time(marks[1]) / 1e3, marks[1].elapsed_time(marks[2]) / 1e3
            gemm[i].append(2 * size ** 3 * reps[i] / gemm_s / 1e12)
            memory[i].append(2 * n * copies[i] / copy_s / 1e9)
            share = BURN_ROUND_S / 2  # half a round each, so that a round lasts BURN_ROUND_S
            reps[i] = max(1, int(reps[i] * share / gemm_s))
            copies[i] = max(1, int(copies[i] * share / copy_s))
        if time.perf_counter() - start >= seconds:
            break
    typical = [probe.expected_for(torch.cuda.get_device_properties(i).name) or (None, 0, None, 0)
               for i in range(count)]
    return burn_checks(gemm, memory, samples, time.perf_counter() - start, typical, probe)


def sized(series):
    """The rounds a verdict reads: all but the :data:`SIZING_ROUNDS` (all of them, where the burn ran no more)."""
    return series[SIZING_ROUNDS:] or series


def burn_checks(gemm, memory, samples, elapsed, typical, probe):
    """Verdicts on a burn: per GPU the GEMM and memory figures of its rounds (``gemm[i]``, ``memory[i]``) against
    the typical ones and against their own start (a sag fails), the sizing rounds left out (:func:`sized`); and
    nvidia-smi's samples taken under load (``(seconds, rows)``): hardware or thermal slowdown, and ECC errors that
    appeared, fail. ``probe``: the probe module (``core``), whose check records, verdicts and clock event reasons
    these are."""
    out = [probe.check("burn", probe.PASS, f"{elapsed:.0f} s", None, f"{len(gemm)} GPUs under GEMM and memory load, "
                       f"{len(samples)} rounds of about {BURN_ROUND_S:g} s, nvidia-smi read in each", required=False)]
    for i, (figures, copies) in enumerate(zip(map(sized, gemm), map(sized, memory))):
        label, peak = f"gpu{i}", typical[i] if i < len(typical) else (None, 0, None, 0)
        for name, series, want in (("sustained_tflops", figures, peak[0] and peak[0] * peak[1]),
                                   ("sustained_memory_gbps", copies, peak[2] and peak[2] * peak[3])):
            if not series:
                continue
            quarter = max(1, len(series) // 4)
            first, last = sum(series[:quarter]) / quarter, sum(series[-quarter:]) / quarter
            result = probe._figure(f"{label}.{name}", sorted(series)[len(series) // 2], want)
            if last < SAG_LIMIT * first:
                result.update(verdict=probe.FAIL, required=True, detail=f"sagged from {first:.0f} to {last:.0f} "
                              f"({last / first - 1:+.0%}) over {elapsed:.0f} s: heat, power or clocks")
            out.append(result)
        mine = [(t, row) for t, rows in samples for row in rows if row.get("index") == i]
        if not mine:
            continue
        slow = [(t, r) for t, row in mine for r in probe.active_reasons(row.get("clocks_event_reasons.active"))
                if r in probe.SLOWING]
        seen = [row for _, row in mine]
        facts = ", ".join(f"{key} {fmt % max(values) if key != 'SM clock min' else fmt % min(values)}"
                          for key, field, fmt in (("temperature max", "temperature.gpu", "%d C"),
                                                  ("power max", "power.draw", "%.0f W"),
                                                  ("SM clock min", "clocks.current.sm", "%d MHz"))
                          for values in [[r[field] for r in seen if isinstance(r.get(field), (int, float))]]
                          if values)
        out.append(probe.check(f"{label}.burn_clocks", probe.FAIL if slow else probe.PASS, facts,
                               "no hardware or thermal slowdown",
                               f"{slow[0][1]} at {slow[0][0]:g} s: check cooling and power; drain if it recurs"
                               if slow else ""))
        for kind, verdict in (("uncorrected", probe.FAIL), ("corrected", probe.WARN)):
            counts = [row.get(f"ecc.errors.{kind}.volatile.total") for row in seen]
            counts = [c for c in counts if isinstance(c, int)]
            if counts and counts[-1] > counts[0]:
                out.append(probe.check(f"{label}.burn_ecc_{kind}", verdict, counts[-1] - counts[0], 0,
                                       f"{kind} ECC errors appeared under load"
                                       + (": drain and reset the GPU, replace it if they return"
                                          if verdict == probe.FAIL else "")))
    return out
