"""The sustained tier's rounds, one line each: what ``gpuready probe --full`` judges, shown whole. Run it where a GPU
is (the device tool's machine), from the repository root: ``python3 bench/burn_rounds.py SECONDS``. It prints each
round's bf16 GEMM TFLOP/s and copy GB/s per GPU and the nvidia-smi sample taken while the round ran (SM clock,
temperature, power, clock event reasons), then the verdicts. It changes no GPU setting."""

from __future__ import annotations

import json
import sys

sys.path.insert(0, "gpuready/probe")
import burn  # noqa: E402  (beside core.py, as a job ships them)
import core  # noqa: E402


def main() -> None:
    import torch

    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    judged = burn.burn_checks

    def shown(gemm, memory, samples, elapsed, typical, probe):
        for r, (at, rows) in enumerate(samples):
            for i, row in enumerate(rows):
                line = {"round": r, "t_s": at, "gpu": i, "tflops": round(gemm[i][r], 1),
                        "copy_gbps": round(memory[i][r], 1),
                        **{k: row.get(k) for k in ("clocks.current.sm", "temperature.gpu", "power.draw",
                                                   "clocks_event_reasons.active")}}
                print("ROUND " + json.dumps(line), flush=True)
        return judged(gemm, memory, samples, elapsed, typical, probe)

    burn.burn_checks = shown
    for check in burn.burn(torch, torch.cuda.device_count(), seconds, core):
        print("CHECK " + json.dumps(check), flush=True)


if __name__ == "__main__":
    main()
