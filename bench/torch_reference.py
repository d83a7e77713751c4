"""A plain PyTorch measurement of what the probe measures (bf16 matmul, device copy, pinned host-to-device copy),
timed with CUDA events, to hold the probe's figures to: ``python bench/torch_reference.py`` prints JSON;
``--compare PROBE_REPORT REFERENCE`` prints each probe figure beside the reference and their ratio.

Needs a CUDA GPU; run by bench/probe_on_gpu.sh.
"""

from __future__ import annotations

import json
import sys


def measure(size: int = 8192, copy_mib: int = 1024, reps: int = 20) -> dict[str, dict[str, float]]:
    import torch

    out = {}
    for i in range(torch.cuda.device_count()):
        with torch.cuda.device(i):
            a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
            src = torch.empty(copy_mib * 2**20, dtype=torch.uint8, device="cuda")
            dst, host = torch.empty_like(src), torch.empty(copy_mib * 2**20, dtype=torch.uint8, pin_memory=True)
            figures = {}
            for name, work, scale in (("bf16_matmul_tflops", lambda: a @ a, 2 * size ** 3 / 1e12),
                                      ("memory_bandwidth_gbps", lambda: dst.copy_(src), 2 * src.numel() / 1e9),
                                      ("host_to_device_gbps", lambda: dst.copy_(host, non_blocking=True),
                                       host.numel() / 1e9)):
                for _ in range(3):
                    work()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(reps):
                    work()
                end.record()
                end.synchronize()
                figures[name] = round(scale * reps / (start.elapsed_time(end) / 1e3), 1)
            out[f"gpu{i}"] = figures
    return out


def compare(probe_file: str, reference_file: str) -> None:
    text = open(probe_file).read()
    marker = "GPUREADY_PROBE_REPORT "
    report = json.loads(text[text.rindex(marker) + len(marker):].splitlines()[0])
    reference = json.load(open(reference_file))
    for check in report["checks"]:
        gpu, _, name = check["name"].partition(".")
        if name in reference.get(gpu, {}) and isinstance(check["measured"], (int, float)):
            ref = reference[gpu][name]
            ratio = check["measured"] / ref
            print(f"{check['name']:32} probe {check['measured']:>9}  torch {ref:>9}  ratio {ratio:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        compare(*sys.argv[2:4])
    else:
        print(json.dumps(measure()))
