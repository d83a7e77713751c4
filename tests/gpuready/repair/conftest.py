"""Fixtures of the repair tests: moto's server with real Auto Scaling groups (EC2 instances launched by the group),
the fault proxy in front of it, and the fake Kubernetes API server whose nodes name those instances; each other
cloud's fake API (fake_gce.py, fake_azure.py) behind the fault proxy, with its repairer pointed at the proxy with
short timeouts and pauses."""

from __future__ import annotations

import json

import pytest

from tests.gpuready.conftest import H100
from tests.gpuready.smoke.conftest import aws, fake_kube, moto_port, proxy  # noqa: F401 (the smoke tests' fixtures)
from tests.gpuready.smoke.moto_batch import aws_client

from gpuready.probe import core
from gpuready.repair import Limits, after_sweep, azure, gcp
from gpuready.smoke import sweep_on_stack
from gpuready.smoke.retry import Backoff

from ..smoke.fault_proxy import FaultProxy
from . import fake_azure, fake_gce

GROUP = "eks-gpu-1a2b"
ZONE = "us-east-1a"
EKS = {"gpuTaint": {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
       "gpuNodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
       "gpuNodeLabels": {"nvidia.com/gpu.present": "true"}, "platform": "eks"}
FAILURES = {"ecc": {"ecc.errors.uncorrected.volatile.total": "3"},  # a reset remaps the row: reboot
            "remap": {"remapped_rows.failure": "Yes"}}  # no spare rows left: replace
"""nvidia-smi answers (overrides of the replayed H100) that fail the probe."""


@pytest.fixture
def group(aws):
    """``make(n, name=GROUP)``: a moto Auto Scaling group launching ``n`` g6.12xlarge instances in ``ZONE``; their
    ids."""
    endpoint, _ = aws
    ec2, autoscaling = aws_client("ec2", endpoint), aws_client("autoscaling", endpoint)

    def make(n: int, name: str = GROUP) -> list[str]:
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", AvailabilityZone=ZONE)["Subnet"]["SubnetId"]
        ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={
            "ImageId": "ami-12c6146b", "InstanceType": "g6.12xlarge"})
        autoscaling.create_auto_scaling_group(AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateName": name},
                                              MinSize=0, MaxSize=n + 2, DesiredCapacity=n, VPCZoneIdentifier=subnet)
        return sorted(i["InstanceId"] for i in autoscaling.describe_auto_scaling_groups(
            AutoScalingGroupNames=[name])["AutoScalingGroups"][0]["Instances"])
    return make


def node(name: str, instance: str = "", labels: dict | None = None) -> dict:
    """A GPU node of an EKS managed node group whose providerID names ``instance``."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": "41",
                         "labels": {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "g6.12xlarge",
                                    "nvidia.com/gpu.present": "true", **(labels or {})}},
            "spec": {"providerID": f"aws:///{ZONE}/{instance}" if instance else "",
                     "taints": [dict(EKS["gpuTaint"])]},
            "status": {"allocatable": {"cpu": "48", "nvidia.com/gpu": "4"}}}


def pod(name: str, namespace: str, on: str, labels: dict | None = None, owner: str = "") -> dict:
    """A running pod of ``namespace`` on node ``on`` (``owner``: the DaemonSet that made it)."""
    meta = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": f"uid-{owner}"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": on, "containers": [{"name": "main", "image": "trainer"}]},
            "status": {"phase": "Running"}}


def swept(outputs, tmp_path, limits=Limits(), **endpoints):
    """``gpuready sweep --repair`` (``--apply`` where ``limits`` say so, which quarantines as the CLI does) on
    ``outputs`` written to a file, the repairer given ``endpoints`` (its fakes): the sweep's result."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    return sweep_on_stack(stack=None, outputs_file=path, nodes=None, timeout=30,
                          after=after_sweep(limits, **endpoints), quarantine=limits.apply)


def nodes_of(server):
    """The fake API server's Nodes now, by name."""
    return {n["metadata"]["name"]: n for n in server.now()["nodes"]}


@pytest.fixture
def logs(fake_smi):
    """``logs(kind=None, slow=False)``: what the probe prints on a node with the replayed H100, healthy or failing
    (:data:`FAILURES`), or (``slow``) healthy but for a bf16 GEMM far below the H100's (no repair cures that)."""
    made: dict = {}

    def of(kind: str | None = None, slow: bool = False) -> str:
        if (kind, slow) not in made:
            fake_smi(H100, row=0, **FAILURES.get(kind, {}))
            report = core.probe(gpus_expected=1)
            if slow:
                report["checks"].append({"name": "gpu0.bf16_matmul_tflops", "verdict": "fail", "measured": 310.0,
                                         "expected": 989.0, "detail": "below 75% of what an H100 reaches",
                                         "required": True})
                report["verdict"] = "fail"
            made[(kind, slow)] = f"starting probe\n{core.report_line(report)}\n"
        return made[(kind, slow)]
    return of


FAST = {"timeout": 1.0, "backoff": Backoff(0.01, 0.05)}
"""Each try waits a second at most; pauses of 10 to 50 ms."""


def injected(error_body):
    """The fault proxy's ``error_body`` from a fake's (status, code, message): the message says the fault."""
    return lambda status, code, fault: error_body(status, code, f"injected {fault}")


@pytest.fixture
def gce(monkeypatch):
    """``start(**scenario)``: a :class:`~.fake_gce.FakeGce` playing ``scenario`` behind a fault proxy, and the GKE
    repairer going through it: (fake, proxy, repairer). Everything started is closed after the test."""
    started = []
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", fake_gce.TOKEN)

    def start(**scenario):
        fake = fake_gce.FakeGce(**scenario)
        proxy = FaultProxy(fake.port, fake_gce.gce_action, fake_gce.GCE_ERRORS, injected(fake_gce.error_body))
        started.extend((proxy, fake))
        return fake, proxy, gcp.repairer({}, compute=f"{proxy.url}/compute/v1/", **FAST)
    yield start
    for server in started:
        server.close()


@pytest.fixture
def arm(monkeypatch):
    """``start(**scenario)``: a :class:`~.fake_azure.FakeAzure` behind a fault proxy, and the AKS repairer going
    through it: (fake, proxy, repairer)."""
    started = []
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", fake_azure.TOKEN)

    def start(**scenario):
        fake = fake_azure.FakeAzure(**scenario)
        proxy = FaultProxy(fake.port, fake_azure.azure_action, fake_azure.AZURE_ERRORS,
                           injected(fake_azure.error_body))
        started.extend((proxy, fake))
        return fake, proxy, azure.repairer({}, management=proxy.url, **FAST)
    yield start
    for server in started:
        server.close()
