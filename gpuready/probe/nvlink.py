"""Multi-node NVLink verdicts (GB200/GB300 NVL72 through a ComputeDomain), on the SDK side: whether NCCL put the
gang's ranks in one NVLink clique (``mnnvl_ranks`` of the NCCL report, read from NCCL's ``MNNVL 1 ... cliqueSize N``
line), and the all-reduce bus bandwidth it measured set beside NVIDIA's figure for the GPU's NVLink.

Not shipped in jobs (the jobs carry ``core.py`` and ``nccl.py`` only). UNVERIFIED on a real rack: written and tested
offline against NCCL's documented log lines (docs/platforms/nvl72.md says how to check a rack)."""

from __future__ import annotations

from typing import Any, Optional

from . import core

NVLINK_GBPS = {"GB200": 1800.0, "GB300": 1800.0}
"""NVLink bandwidth of one GPU, GB/s, both directions together: fifth-generation NVLink, 1.8 TB/s bidirectional per
GPU (NVIDIA, "NVIDIA GB200 NVL72 Delivers Trillion-Parameter LLM Training and Real-Time Inference",
developer.nvidia.com/blog; the rack's 130 TB/s over 72 GPUs; Google's A4X and A4X Max pages: 1,800 GBps
bidirectional NVLink per GPU). Keyed by the catalog's model names."""
FIX = ("NCCL ran the all-reduce over the network, not NVLink: the pods must claim the job's ComputeDomain channel "
       "(resource.nvidia.com), land on hosts of one NVLink domain (one nvidia.com/gpu.clique value), and the nodes "
       "need NVIDIA driver 570.158.01 or later with IMEX; NCCL_MNNVL_ENABLE must not be 0")


def model(gpu_name: Optional[str]) -> Optional[str]:
    """The :data:`NVLINK_GBPS` model a GPU name (``NVIDIA GB200``) is, or None."""
    found = [m for m in NVLINK_GBPS if gpu_name and m in gpu_name.upper()]
    return found[0] if found else None


def checks(report: Optional[dict[str, Any]], *, gpu_name: Optional[str]) -> list[dict[str, Any]]:
    """``nccl_nvlink``: every rank of the gang in one NVLink clique (required: without it a ComputeDomain stack's
    all-reduce is not on NVLink); ``nccl_nvlink_bandwidth``: the measured bus bandwidth beside :data:`NVLINK_GBPS`
    per direction (advisory: no typical all-reduce figure on an NVL72 rack could be cited, so no floor is set)."""
    if report is None or report.get("error") or (report.get("world_size") or 0) <= 1:
        return []
    world, ranks = report.get("world_size") or 0, report.get("mnnvl_ranks")
    if ranks is None:
        return [core.check("nccl_nvlink", core.FAIL, None, world, "the NCCL report says nothing of NVLink "
                           "cliques: the job ran an older gpuready launcher", required=True)]
    found = [core.check("nccl_nvlink", core.PASS if ranks >= world else core.FAIL, ranks, world,
                        "" if ranks >= world else (f"only {ranks} of {world} ranks shared an NVLink clique; "
                                                   if ranks else "") + FIX)]
    peak = NVLINK_GBPS.get(model(gpu_name) or "")
    measured = report.get("busbw_gbps")
    if ranks >= world and isinstance(measured, (int, float)):
        each_way = peak / 2 if peak else None
        detail = (f"{measured / each_way:.0%} of the {each_way:.0f} GB/s each way NVLink 5 gives a {model(gpu_name)} "
                  f"({peak / 1000:.1f} TB/s bidirectional, NVIDIA); no typical all-reduce figure on an NVL72 rack "
                  "is cited, so this is not judged") if each_way else \
            f"no NVLink figure for {gpu_name or 'this GPU'}"
        found.append(core.check("nccl_nvlink_bandwidth", core.PASS, round(measured, 1), each_way, detail,
                                required=False))
    return found
