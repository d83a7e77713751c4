"""What a ``gpu-vm`` stack exports: the instance, and what the smoke target reads."""

from __future__ import annotations

from gpuready_components.outputs import STRING, WHOLE, Contract, Output

OUTPUTS = Contract("gpu-vm", (
    Output("platform", STRING, "the platform the stack builds: gpu-vm", smoke=True),
    Output("instanceId", STRING, "the GPU instance", smoke=True),
    Output("instanceType", STRING, "its instance type", smoke=True),
    Output("gpus", WHOLE, "GPUs the instance type has (the catalog's count)", smoke=True),
))
