#!/usr/bin/env bash
# The probe on a real GPU, for the captures under tests/data/nvidia-smi and the figures in bench/README.md. Run it
# from the repository root on a machine with NVIDIA GPUs and PyTorch (the device tool's machine); it changes no GPU
# setting (no MIG, clocks, persistence or reset). Writes everything under $OUT (default ./gpu-run):
#   smi-query.csv smi-q.txt nvlink-status.txt nvlink-errors.txt compute-apps.csv smi-table.txt dmesg.txt
#   probe-quick.json probe-full.json nccl-one-node.txt reference.json times.txt
# then prints the probe's figures beside a plain PyTorch measurement of the same work (bench/torch_reference.py).
set -u
out=${OUT:-./gpu-run}
seconds=${BURN_SECONDS:-120}
mkdir -p "$out"
gpus=$(nvidia-smi -L | grep -c '^GPU ')
fields=$(python3 -c "import sys; sys.path.insert(0, 'gpuready/probe'); import core; print(','.join(core.QUERY_FIELDS))")
nvidia-smi --query-gpu="$fields" --format=csv > "$out/smi-query.csv" 2>&1
nvidia-smi -q > "$out/smi-q.txt" 2>&1
nvidia-smi nvlink --status > "$out/nvlink-status.txt" 2>&1
nvidia-smi nvlink --errorcounters > "$out/nvlink-errors.txt" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv > "$out/compute-apps.csv" 2>&1
nvidia-smi > "$out/smi-table.txt" 2>&1
dmesg > "$out/dmesg.txt" 2>&1 || echo "dmesg refused (exit $?)" >> "$out/dmesg.txt"
timed() {  # name, command...: the command's output to $out/name, its wall time to times.txt
  local name=$1; shift
  local start=$(date +%s.%N) rc
  "$@" > "$out/$name" 2>&1; rc=$?
  echo "$name $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s (exit $rc)" >> "$out/times.txt"
}
timed probe-quick.json python3 gpuready/probe/core.py --gpus "$gpus"
timed probe-full.json python3 gpuready/probe/core.py --gpus "$gpus" --full --seconds "$seconds"
timed nccl-one-node.txt env JOB_COMPLETION_INDEX=0 GPUREADY_TORCHRUN="python3 -m torch.distributed.run" python3 gpuready/probe/nccl.py \
  launch --nodes 1 --gpus-per-node "$gpus" --main-address 127.0.0.1 --timeout 600 --rendezvous-timeout 120
timed reference.json python3 bench/torch_reference.py
cat "$out/times.txt"
python3 bench/torch_reference.py --compare "$out/probe-quick.json" "$out/reference.json"
