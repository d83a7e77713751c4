"""What each of the probe's checks means and what to do when it fails: one table, read by the readiness-check
reference (``docs/reference/checks.md``, written by ``python docs/gen_reference.py``).

The checks themselves are made in :mod:`.core` (node state, PyTorch figures), :mod:`.burn` (``--full``) and
:mod:`.nccl` (across nodes); this module is not shipped into jobs (the probe's size in a Batch job definition is
bounded), and a test checks that every check name those modules make is described here and that nothing described
here is gone from them. ``gpuN.`` stands for each GPU's index (``gpu0.``, ``gpu1.``...).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReadinessCheck:
    """One row of the reference: the check names it covers, what they read, when they fail (or warn), the fix."""

    names: tuple[str, ...]
    tier: str
    """``node`` (every run), ``pytorch`` (where PyTorch is installed), ``full`` (``--full``), ``nodes`` (a gang job
    across nodes: ``gpuready smoke --nodes N``)."""
    reads: str
    fails_when: str
    action: str


TIERS = {
    "node": "Every run: nvidia-smi, the environment and the kernel log",
    "pytorch": "Where PyTorch is installed: what the GPUs do (the quick tier)",
    "full": "`--full`: the sustained tier (`gpuready/probe/burn.py`)",
    "nodes": "Across nodes: the NCCL check (`gpuready/probe/nccl.py`, `gpuready smoke --nodes N`)",
}
"""Tier -> its heading in the reference, in the order the reference lists them."""

CHECKS = (
    ReadinessCheck(
        ("nvidia_driver", "gpu_count"), "node", "nvidia-smi",
        "no driver answers; fewer GPUs than the node's type has (`--gpus`)",
        "fix the image or runtime (`NVIDIA_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`); a node that lost a GPU: "
        "drain, reset, replace"),
    ReadinessCheck(
        ("cuda_visible_devices", "nvidia_visible_devices", "nvidia_driver_capabilities"), "node", "the environment",
        "`CUDA_VISIBLE_DEVICES` hides every GPU (empty, `-1`, `none`); `NVIDIA_VISIBLE_DEVICES` is `void` or `none` "
        "(the runtime mounted no GPU); `NVIDIA_DRIVER_CAPABILITIES` lacks `compute` (no CUDA libraries mounted)",
        "set them in the job or pod spec, or leave them to the container runtime"),
    ReadinessCheck(
        ("gpuN.memory_in_use",), "node",
        "`memory.used` before the job starts, `--query-compute-apps` (or the table's processes)",
        "more than 5% of the GPU's memory is held by others on a GPU scheduled whole (the processes are named where "
        "the container sees them); **warns** where the stack shares GPUs on purpose (`gpuSharing`: time-slicing, "
        "MPS, MIG; `gpuready probe --sharing`)",
        "stop the stray process or the job that never exited; drain the node (a reset frees memory only with nothing "
        "left on the GPU)"),
    ReadinessCheck(
        ("xid", "gpuN.xid", "gpuN.xid_under_load"), "node",
        "the kernel log (`dmesg`, else `/dev/kmsg`): readable by the burn-in agent and privileged pods; `xid` is "
        "a skip where it is not readable",
        "a hardware Xid since boot (48 double-bit ECC, 61/62 internal micro-controller, 63/64 row-remap or "
        "page-retirement events, 74 NVLink, 79 fallen off the bus, 92 high single-bit ECC rate, 94/95 "
        "contained/uncontained ECC, 119/120 GSP, 140 unrecovered ECC) fails; other Xids (13, 31, 43, 45: an "
        "application's illegal access, page fault or stopped kernel) warn; any Xid that appears while the probe "
        "loads the GPUs fails (`_under_load`)",
        "hardware Xid: drain the node, reset the GPU (`nvidia-smi -r` with nothing running, or reboot), replace it if "
        "the Xid returns; application Xids: fix the application. A reset does not clear the kernel log: the Xid "
        "stays until reboot"),
    ReadinessCheck(
        ("gpuN.nvlink", "gpuN.nvlink_errors", "gpuN.nvlink_errors_under_load"), "node",
        "`nvidia-smi nvlink --status`, `--errorcounters`, before and after the load",
        "a link down while others are up (or every link down on a multi-GPU node); error counters (replay, "
        "recovery, CRC) that rise under the probe's load; non-zero counters since the driver loaded warn",
        "drain, reset; a link that stays down or keeps counting needs the board or NVSwitch tray replaced"),
    ReadinessCheck(
        ("gpuN.fabric",), "node", "`fabric.state`/`fabric.status` (`nvidia-smi -q` Fabric on older drivers)",
        "the NVSwitch fabric is not `Completed`/`Success`: on HGX H100/H200/B200 8-GPU nodes CUDA cannot start "
        "(error 802, \"system not yet initialized\")",
        "start `nvidia-fabricmanager` of exactly the driver's version, read its log; drain if it does not complete"),
    ReadinessCheck(
        ("gpuN.recovery_action",), "node",
        "`gpu_recovery_action` (`nvidia-smi -q` GPU Reset Status: Reset Required, Drain and Reset Recommended)",
        "the driver asks for a reset, a reboot or a drain", "as the driver asks: drain, then reset or reboot"),
    ReadinessCheck(
        ("gpuN.ecc_uncorrected", "gpuN.row_remap_failure", "gpuN.row_remap_pending", "gpuN.retired_pages_pending"),
        "node", "`--query-gpu`",
        "uncorrected ECC since the driver loaded, a failed row remap (replace); rows or pages waiting for a reset "
        "warn",
        "reset to remap; replace a GPU whose remapping failed"),
    ReadinessCheck(
        ("gpuN.ecc_mode", "gpuN.ecc_mode_pending"), "node", "`ecc.mode.current`/`pending`",
        "ECC off on an HBM GPU (V100, A100, H100, H200, B200, B300) fails, on a GDDR board warns; a pending change "
        "warns",
        "`nvidia-smi -e 1` and reboot"),
    ReadinessCheck(
        ("gpuN.compute_mode", "gpuN.persistence_mode"), "node", "`compute_mode`, `persistence_mode`",
        "compute `Prohibited` fails (no CUDA context); persistence off warns",
        "`nvidia-smi -c DEFAULT`; run `nvidia-persistenced`"),
    ReadinessCheck(
        ("gpuN.clock_event_reasons", "gpuN.thermal_margin", "gpuN.lost"), "node", "`--query-gpu`",
        "hardware, thermal or power-brake slowdown fails; other reasons warn; a thermal margin under 5 C warns; a "
        "lost GPU (fallen off the bus) fails",
        "cooling, power; a lost GPU: drain and repair"),
    ReadinessCheck(
        ("gpuN.pcie_link",), "pytorch",
        "the link read while every GPU multiplies matrices (an idle GPU lowers its link)",
        "below its maximum generation or width under load (warn)",
        "reseat or replace the riser; check BIOS link settings"),
    ReadinessCheck(
        ("framework", "torch_device_count", "torch_cuda_vs_driver"), "pytorch",
        "PyTorch: the devices it sees, the CUDA version it was built for against the driver's",
        "`framework` skips without PyTorch (no throughput figures); torch sees fewer devices than nvidia-smi or "
        "`--gpus`; a build for a newer CUDA major than the driver supports fails (it sees no GPU), a newer minor "
        "warns",
        "use a PyTorch build for the driver's CUDA, or a newer driver; check the device environment variables"),
    ReadinessCheck(
        ("gpuN.bf16_matmul_tflops", "gpuN.memory_bandwidth_gbps"), "pytorch", "a bf16 matmul, a device memory copy",
        "below 75% of the model's typical figure (`EXPECTED` in `core.py`: datasheet peak x typical fraction; "
        "memory fractions are DCGM's per-SKU minima over its 0.75 floor); a GPU without a typical figure shows the "
        "number alone",
        "a slow GPU: clocks, power cap, a stray process; drain and compare with `dcgmi diag -r 3`"),
    ReadinessCheck(
        ("gpuN.host_to_device_gbps",), "pytorch",
        "a pinned copy, against 80% of the PCIe link both ends support",
        "below 75% of that **warns** (the host's NUMA placement and IOMMU shape it as much as the GPU)",
        "pin the job to the GPU's NUMA node; check the link"),
    ReadinessCheck(
        ("nccl_all_reduce",), "pytorch", "one process, NCCL, across the node's GPUs",
        "wrong sums fail; on 8 NVSwitch GPUs below 75% of the typical bus bandwidth fails (`ALL_REDUCE` in "
        "`core.py`); other models and counts show the figure without a verdict",
        "a slow or down NVLink: see `gpuN.nvlink`"),
    ReadinessCheck(
        ("burn", "gpuN.sustained_tflops", "gpuN.sustained_memory_gbps"), "full",
        "every GPU at once under bf16 GEMMs and 1 GiB device copies for `--seconds` (300), in rounds timed with "
        "CUDA events",
        "a median below 75% of typical; the last quarter of rounds below 90% of the first (a figure that sags: heat, "
        "power); `burn` says how long it ran, and fails when `burn.py` is not beside the probe",
        "cooling and power first; drain a GPU that sags again"),
    ReadinessCheck(
        ("gpuN.burn_clocks", "gpuN.burn_ecc_uncorrected", "gpuN.burn_ecc_corrected"), "full",
        "nvidia-smi read in each round of the burn",
        "hardware or thermal slowdown in any round (power capping alone is normal under full load); uncorrected ECC "
        "errors that appear fail, corrected ones warn",
        "cooling and power; drain and reset a GPU whose ECC errors rise, replace it if they return"),
    ReadinessCheck(
        ("nccl_report",), "nodes", "the main node's `GPUREADY_NCCL_REPORT {json}` line",
        "no report (the launcher did not run), or one with `error` set: `torchrun` failed, peers never arrived, or "
        "the run passed its time limit",
        "read the main node's log; a node that never arrives: capacity, subnet, security group"),
    ReadinessCheck(
        ("nccl_hosts", "nccl_all_reduce_correct"), "nodes", "the report",
        "fewer distinct hosts than nodes; an all-reduce that returned wrong sums (each rank adds `rank + 1`)",
        "check the gang's placement; wrong sums: a faulty GPU or link, sweep the nodes (`gpuready sweep`)"),
    ReadinessCheck(
        ("nccl_transport",), "nodes",
        "the NCCL log line saying which network the channels use (not a plugin that loaded)",
        "EFA, InfiniBand or TCPX expected and sockets used (one rank on sockets makes the run sockets)",
        "EFA: libfabric and aws-ofi-nccl in the image, the `/dev/infiniband` devices, `FI_PROVIDER=efa`; "
        "InfiniBand: `rdma/shared_ib`; GKE: the TCPX/TCPXO plugin and daemon"),
    ReadinessCheck(
        ("nccl_bus_bandwidth",), "nodes", "bus bandwidth of 1 GiB all-reduces (2 GiB with `--full`)",
        "below 75% of the typical figure for 2 nodes x 8 GPUs at 2 GiB (`TYPICAL_BUS_BANDWIDTH` in `nccl.py`); "
        "other types, GPU counts or sizes are reported without a verdict",
        "the fabric: see `nccl_transport`; EFA interfaces and placement group on Batch"),
)
"""Every check the probe makes, grouped as the reference shows them."""
