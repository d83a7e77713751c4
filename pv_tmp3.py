import json
from tests.gpuready.policy.helpers import render_stack, violations
from tests.conftest import ROOT
cfg = json.loads((ROOT / "policies" / "policy-config.json").read_text())
for stack in ["aws-batch", "eks", "gke", "aks"]:
    for pv in (False, True):
        rep = violations(render_stack(stack, preview=pv), {**cfg, "gpu-capacity-caps": {"maxGpus": 8, "maxUsdPerHour": 1}})
        print(stack, pv, sorted({(v.policy, v.resource) for v in rep.violations}), rep.undecided)
