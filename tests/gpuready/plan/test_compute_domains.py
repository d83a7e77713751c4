"""What `gpuready plan` says of NVL72 pools: on a stack with ComputeDomains, per GB200 pool, the ComputeDomain a job
gets (valid against the DRA driver's CRD, sized to the pool) and the label its pods share; on one without, that jobs
across its nodes miss NVLink; nothing on stacks without a rack."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from gpuready.cli import main
from tests.conftest import DATA, ROOT

CRD = DATA / "helm-charts" / "dra-driver-nvidia-gpu-0.4.1" / "crds" / "resource.nvidia.com_computedomains.yaml"


def _text(capsys, *args) -> str:
    assert main(["plan", *args, "--no-policies"]) == 0
    return capsys.readouterr().out


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("Multi-node NVLink (GB200/GB300 NVL72):")
    return lines[start + 1:lines.index("", start)]


@pytest.mark.parametrize("stack, pool, label", [
    ("eks-nvl72", "eks-gpu", "nvidia.com/gpu.clique"),
    ("gke-nvl72", "gke-gpu", "cloud.google.com/gce-topology-subblock"),
    ("aks-nvl72", "aks-gpu", "nvidia.com/gpu.clique"),
])
def test_each_nvl72_stack_shows_the_compute_domain_a_job_gets(capsys, stack, pool, label):
    said, shown = _section(_text(capsys, "--stack", stack))
    assert said.startswith(f"  {pool} (GB200, up to 18 nodes x 4 GPUs): each multi-node job gets one ComputeDomain")
    assert f"share one {label} (one NVLink domain)" in said and "570.158.01" in said
    domain = json.loads(shown)
    (version,) = [v for v in yaml.safe_load(CRD.read_text())["spec"]["versions"] if v["storage"]]
    jsonschema.validate(domain, version["schema"]["openAPIV3Schema"])
    assert domain["spec"] == {"numNodes": 18, "channel": {"resourceClaimTemplate": {"name": "my-job-channel"}}}


def test_a_rack_without_compute_domains_is_said_to_miss_nvlink(capsys, tmp_path):
    data = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks-nvl72.yaml").read_text())
    data["config"].update({"gpuready:install": "device-plugin"})
    data["config"].pop("gpuready:computeDomains")
    path = tmp_path / "Pulumi.eks-nvl72.yaml"
    path.write_text(yaml.safe_dump(data))
    (said,) = _section(_text(capsys, "--stack-file", str(path)))
    assert said == ("  eks-gpu (GB200): no ComputeDomains: jobs across its 18 nodes talk over the network, not NVLink "
                    "(set gpuready:install: dra and gpuready:computeDomains: true)")


def test_a_stack_without_a_rack_says_nothing_of_it(capsys):
    assert "Multi-node NVLink" not in _text(capsys, "--stack", "eks")
