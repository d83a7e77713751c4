"""The outputs every Kubernetes platform (eks, gke, aks) shares; each platform's ``outputs.py`` adds its own."""

from __future__ import annotations

from ..outputs import (LABELS, NUMBER, QUEUE, RESERVATIONS, STRING, STRING_MAP, STRINGS, TAINT, TAINTS, TEAMS, WHOLE,
                       Contract, Output)


def kubernetes_contract(platform: str, pool: Output, *extra: Output) -> Contract:
    """The contract of a Kubernetes platform whose GPU pool's name is ``pool``, with its ``extra`` outputs."""
    return Contract(platform, (
        Output("platform", STRING, f"the platform the stack builds: {platform}", smoke=True),
        Output("clusterName", STRING, "the cluster"),
        Output("kubeconfig", STRING, "the cluster's kubeconfig, with which the smoke Job is created", smoke=True,
               secret=True),
        pool,
        *extra,
        Output("gpuTaint", TAINT, "the platform's GPU taint ({key, value, effect})", smoke=True),
        Output("gpuNodeTaints", TAINTS, "every taint the GPU nodes carry: what the smoke pod tolerates", smoke=True),
        Output("gpuNodeLabels", LABELS, "labels the GPU nodes carry from boot: what the smoke pod selects",
               smoke=True),
        Output("gpuNamespace", STRING, "namespace of the NVIDIA Helm releases", when="where a chart is installed"),
        Output("gpuModels", STRINGS, "GPU models of the GPU pool"),
        Output("gpuSharing", STRING, "how pods share each GPU on purpose: time-slicing, mps or mig (the probe then "
               "warns, not fails, on GPU memory others hold)", smoke=True, when="with GPU sharing"),
        Output("gpuComputeDomains", STRING, "with ComputeDomains (each multi-node job gets one, its pods claiming its "
               "IMEX channel: multi-node NVLink on NVL72 racks), the node label naming each GPU node's NVLink domain, "
               "which a job's pods share (nvidia.com/gpu.clique; GKE: cloud.google.com/gce-topology-subblock)",
               smoke=True, when="with install dra and computeDomains"),
        Output("gpuDeviceClass", STRING, "the DRA DeviceClass jobs claim GPUs of (install dra: gpu.nvidia.com), "
               "through a ResourceClaimTemplate, instead of nvidia.com/gpu limits", smoke=True,
               when="with install dra"),
        Output("gpuFabric", STRING, "the GPU nodes' fabric for NCCL across nodes: efa, ib, tcpx or tcpxo (absent: TCP "
               "sockets)", smoke=True, when="with a GPU fabric"),
        Output("gpuEfaInterfaces", WHOLE, "EFA interfaces of each GPU node: the vpc.amazonaws.com/efa devices a "
               "multi-node smoke pod asks for", smoke=True, when="with an EFA fabric"),
        Output("maxGpusPerNode", WHOLE, "most GPUs of one GPU node", smoke=True),
        Output("maxGpus", WHOLE, "GPUs at once with the GPU pool at its largest", smoke=True),
        Output("maxUsdPerHour", NUMBER, "on-demand dollars per hour of that capacity"),
        Output("metaflowProfile", STRING_MAP, "a Metaflow profile for @kubernetes(gpu=N) steps on the GPU nodes: save "
               "it as ~/.metaflowconfig/config_gpu.json (with teams: the first team's, teams[0].metaflowProfile)"),
        Output("gpuReservations", RESERVATIONS, "the reservations the GPU pools launch into: {pool, kind, target, "
               "only, and start, end, count, zone where the stack was given them or (an EKS Capacity Block) read them "
               "from EC2 at preview, factsRead where it reads them (false offline), subnetZones where it read them, nodeZones: the pool's zones "
               "where the zone was checked against them by name}, "
               "which gpuready smoke reads to say why a GPU pod waits (not started, ended, every reserved instance in "
               "use, the wrong zone)", smoke=True,
               when="on a reservation"),
        Output("teams", TEAMS, "the teams sharing the GPUs, each with its Kueue queue: {name, namespace, localQueue, "
               "clusterQueue, cohort, gpus, borrow, lend, weight, flavors, mostGpus, mostGpusPerJob, metaflowProfile} "
               "(mostGpus: the most GPUs its queue holds at once while the others idle, by Kueue's arithmetic; "
               "mostGpusPerJob: the most one job gets, on one pool; metaflowProfile: the team's namespace and "
               "METAFLOW_KUBERNETES_LABELS naming its queue; gangLevels, on pools with a Kueue Topology: pool -> the "
               "levels a gang there may ask for, finest first)", smoke=True, when="with teams"),
        Output("operatorsQueue", QUEUE, "the operators' queue, for the platform's own checks: {namespace, localQueue, "
               "clusterQueue, cohort, priorityClass, and gangLevels as a team's}; gpuready smoke and sweep without --team "
               "send their Jobs to that LocalQueue with that WorkloadPriorityClass", smoke=True, when="with teams"),
    ))

SOFTWARE_OUTPUTS = Contract("k8s-software", (
    Output("namespace", STRING, "namespace of the NVIDIA Helm releases", when="where a chart is installed"),
    Output("releases", STRINGS, "names of the Helm releases, in install order"),
    Output("nodeSoftware", STRING_MAP, "who provides each of the driver, the container toolkit and the device plugin "
           "on the GPU nodes (with install dra, the DRA driver too, and no device plugin): the node image, or a "
           "chart's name"),
))
"""What :class:`~gpuready_components.k8s_gpu.K8sGpuSoftware` registers (not a platform's stack outputs: a platform
component exports its own contract)."""
