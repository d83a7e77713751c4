"""The outputs of an ``aws-batch`` stack: what :class:`BatchGpuEnvironment` registers and ``gpuready smoke`` reads."""

from __future__ import annotations

from ..outputs import NUMBER, RESERVATIONS, STRING, STRING_MAP, STRINGS, TEAMS, WHOLE, Contract, Output

OUTPUTS = Contract("aws-batch", (
    Output("platform", STRING, "the platform the stack builds: aws-batch", smoke=True),
    Output("jobQueueName", STRING, "the GPU-only job queue", smoke=True),
    Output("jobQueueArn", STRING, "the GPU-only job queue's ARN, where the smoke job is submitted", smoke=True),
    Output("jobDefinitionArn", STRING, "the GPU job definition the smoke job runs", smoke=True),
    Output("jobVcpus", WHOLE, "vCPUs the GPU job definition asks for (job.vcpus)", smoke=True),
    Output("jobMemoryMib", WHOLE, "memory in MiB the GPU job definition asks for (job.memoryMiB)", smoke=True),
    Output("jobRoleArn", STRING, "the IAM role every job assumes"),
    Output("multiNodeJobQueueArn", STRING, "the multi-node queue: its own on-demand compute environment in one subnet "
           "and cluster placement group", smoke=True, when="with multiNode"),
    Output("multiNodeJobDefinitionArn", STRING, "the multi-node parallel job definition", smoke=True,
           when="with multiNode"),
    Output("multiNodeNodes", WHOLE, "nodes per multi-node job (multiNode.nodes; `gpuready smoke --nodes N` asks "
           "for N)", when="with multiNode"),
    Output("multiNodeGpusPerNode", WHOLE, "GPUs each node of a multi-node job asks for", smoke=True,
           when="with multiNode"),
    Output("multiNodeInstanceTypes", STRINGS, "instance types of the multi-node compute environment", smoke=True,
           when="with multiNode"),
    Output("multiNodeEfaInterfaces", WHOLE, "EFA interfaces per multi-node instance (0: no EFA, NCCL uses TCP "
           "sockets)", smoke=True, when="with multiNode"),
    Output("cpuJobQueueArn", STRING, "the CPU-only job queue", when="with cpuQueue"),
    Output("computeEnvironmentArns", STRINGS, "the GPU compute environments, in queue order"),
    Output("logGroupName", STRING, "the log group the job definitions write to", smoke=True),
    Output("gpuModels", STRINGS, "GPU models of the instance types"),
    Output("maxGpusPerInstance", WHOLE, "most GPUs of one instance type"),
    Output("maxVcpusPerInstance", WHOLE, "most vCPUs of one instance type"),
    Output("maxMemoryMibPerInstance", WHOLE, "most memory (MiB) of one instance type"),
    Output("maxTotalGpus", WHOLE, "GPUs running at once with every compute environment at maxVcpus"),
    Output("maxUsdPerHour", NUMBER, "on-demand dollars per hour of that capacity"),
    Output("metaflowProfile", STRING_MAP, "a Metaflow profile for @batch(gpu=N) steps on the GPU queue: save it as "
           "~/.metaflowconfig/config_gpu.json"),
    Output("metaflowMultiNodeProfile", STRING_MAP, "a Metaflow profile for @batch steps with num_parallel on the "
           "multi-node queue", when="with multiNode"),
    Output("teams", TEAMS, "the teams sharing the GPUs, each `{name, shareIdentifier, jobQueueArn, gpus, weight, "
           "weightFactor, metaflowProfile, metaflowJobQueueArn, multiNodeJobQueueArn}`: its jobs go to the fair-share "
           "queue `jobQueueArn` with `shareIdentifier` (and multi-node ones to `multiNodeJobQueueArn`, with "
           "multiNode); its Metaflow steps, which send no share identifier, to the FIFO queue "
           "`metaflowJobQueueArn` that its `metaflowProfile` names", smoke=True, when="with teams"),
    Output("gpuReservations", RESERVATIONS, "the reservation the GPU compute environments launch into, one item per "
           "environment: {pool (the environment's name), kind, target, only, and start, end, count, zone where the "
           "stack was given them, subnetZones where it read them}, which gpuready smoke reads to say why a GPU job "
           "stays RUNNABLE (not started, ended, every reserved instance in use, the wrong zone)", smoke=True,
           when="on a reservation"),
))
