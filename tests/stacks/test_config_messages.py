"""Every config mistake a stack user can make is reported under the ``gpuready:`` key they typed, and sizes past the
clouds' quotas are refused unless ``gpuready:allowLargeCapacity`` says they are meant."""

from __future__ import annotations

import re

import pytest
import yaml

from gpuready.cli import main
from tests.conftest import ROOT

PYTHON_NAME = re.compile(r"(?<![\w:.])[a-z]+_[a-z_]+(?:\.[a-z_]+)*\b")
"""A snake_case argument name (``max_vcpus``, ``node_group.min_size``) outside a ``gpuready:`` key."""


def _plan(tmp_path, stack: str, changes: dict) -> tuple[int, str]:
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"].update(changes)
    data["config"] = {k: v for k, v in data["config"].items() if v is not None}  # None: the key removed
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return main(["plan", "--stack-file", str(path), "--no-policies"]), path.name


AKS_GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpu-reservations/providers/"
             "Microsoft.Compute/capacityReservationGroups/a100-eastus")
MISTAKES = [
    ("aws-batch", {"gpuready:minVcpus": 100}, "gpuready:minVcpus/gpuready:maxVcpus"),
    ("aws-batch", {"gpuready:maxVcpus": 2}, "gpuready:maxVcpus"),
    ("aws-batch", {"gpuready:imageType": "ECS_AL1"}, "gpuready:imageType"),
    ("aws-batch", {"gpuready:job": {"memoryMiB": 1}}, "gpuready:job.memoryMiB"),
    ("aws-batch", {"gpuready:job": {"vcpus": 0}}, "gpuready:job.vcpus"),
    ("aws-batch", {"gpuready:rootVolumeGiB": 5}, "gpuready:rootVolumeGiB"),
    ("aws-batch", {"gpuready:logRetentionDays": 2}, "gpuready:logRetentionDays"),
    ("aws-batch", {"gpuready:metaflowDatastoreBucket": "s3://ml/metaflow"}, "gpuready:metaflowDatastoreBucket"),
    ("aws-batch", {"gpuready:runnableTimeoutMinutes": 1}, "gpuready:runnableTimeoutMinutes"),
    ("aws-batch", {"gpuready:capacity": ["spot", "spot"]}, "gpuready:capacity"),
    ("aws-batch", {"gpuready:multiNode": {"nodes": 1}}, "gpuready:multiNode.nodes"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"capacity": "spot"}}, "gpuready:multiNode.capacity"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"subnet": ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]}},
     "gpuready:multiNode.subnet"),
    ("aws-batch-multinode", {"gpuready:instanceTypes": ["g6.4xlarge", "g6.8xlarge"], "gpuready:maxVcpus": 64,
                             "gpuready:job": {"gpus": 1, "vcpus": 4, "memoryMiB": 8192},
                             "gpuready:multiNode": {"instanceTypes": ["g6.4xlarge", "g6.8xlarge"]}},
     "gpuready:multiNode.instanceTypes"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"efaInterfaces": 64}}, "gpuready:multiNode.efaInterfaces"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"nodes": 4, "maxVcpus": 384}}, "gpuready:multiNode.maxVcpus"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"vcpus": 256}}, "gpuready:multiNode.vcpus"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"memoryMiB": 4194304}}, "gpuready:multiNode.memoryMiB"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"sharedMemoryMiB": 1}}, "gpuready:multiNode.sharedMemoryMiB"),
    ("aws-batch-multinode", {"gpuready:multiNode": {"instanceTypes": ["p5en.48xlarge", "p6-b300.48xlarge"]}},
     "gpuready:multiNode.instanceTypes"),
    ("aws-batch", {"gpuready:cpuQueue": {"instanceTypes": ["g6.xlarge"]}}, "gpuready:cpuQueue.instanceTypes"),
    ("aws-batch", {"gpuready:network": {"cidrBlock": "nonsense"}}, "gpuready:network.cidrBlock"),
    ("aws-batch", {"gpuready:jobRolePolicyArns": ["AmazonS3ReadOnlyAccess"]}, "gpuready:jobRolePolicyArns"),
    ("aws-batch", {"gpuready:network": {"subnetIds": ["vpc-0123456789abcdef0"], "securityGroupIds": ["sg-12345678"]}},
     "gpuready:network.subnetIds[0]"),
    ("aws-batch", {"gpuready:network": {"subnetIds": ["subnet-12345678"], "securityGroupIds": ["default"]}},
     "gpuready:network.securityGroupIds[0]"),
    ("eks", {"gpuready:network": {"vpcId": "vpc-12345678", "subnetIds": ["subnet-12345678"]}},
     "gpuready:network.subnetIds"),
    ("eks", {"gpuready:existingCluster": "arn:aws:eks:us-east-1:123456789012:cluster/prod", "gpuready:kubeconfig": "k",
             "gpuready:apiAllowedCidrs": None,
             "gpuready:network": {"vpcId": "vpc-12345678", "subnetIds": ["subnet-12345678"]}},
     "gpuready:existingCluster"),
    ("gke", {"gpuready:network": {"network": "ml-vpc", "subnetwork": "projects/p/regions/europe-west4/subnetworks/s"}},
     "gpuready:network.subnetwork"),
    ("aks", {"gpuready:vnetSubnetId": "gpu-subnet"}, "gpuready:vnetSubnetId"),
    ("gke", {"gpuready:nodeLocations": ["mars-1a"]}, "gpuready:nodeLocations"),
    ("eks", {"gpuready:minSize": 30}, "gpuready:minSize/"),
    ("eks", {"gpuready:rootVolumeGiB": 1}, "gpuready:rootVolumeGiB"),
    ("eks", {"gpuready:capacityType": "CHEAP"}, "gpuready:capacityType"),
    ("eks", {"gpuready:amiType": "AL2_x86_64"}, "gpuready:amiType"),
    ("eks", {"gpuready:timeSlicingReplicas": 1}, "gpuready:timeSlicingReplicas"),
    ("eks", {"gpuready:install": "magic"}, "gpuready:install"),
    ("eks", {"gpuready:mig": {"strategy": "odd"}}, "gpuready:mig"),
    ("eks-capacity-block", {"gpuready:reservation": {"kind": "capacity-block", "id": "cr-1"}},
     "gpuready:reservation.id"),
    ("eks-capacity-block", {"gpuready:reservation": {"kind": "capacity-block", "id": "cr-0123456789abcdef0",
                                                     "end": "2020-01-01"}}, "gpuready:reservation.end"),
    ("eks-capacity-block", {"gpuready:reservation": {"id": "cr-0123456789abcdef0"}}, "gpuready:reservation.kind"),
    ("eks-capacity-block", {"gpuready:reservation": {"kind": "odcr", "preference": "closed"}},
     "gpuready:reservation.preference"),
    ("eks-capacity-block", {"gpuready:reservation": {"kind": "odcr", "resourceGroupArn": "gpus"}},
     "gpuready:reservation.resourceGroupArn"),
    ("eks-capacity-block", {"gpuready:maxSize": 3}, "gpuready:maxSize"),
    ("eks-capacity-block", {"gpuready:capacityType": "SPOT"}, "gpuready:capacityType"),
    ("eks-capacity-block", {"gpuready:instanceTypes": ["p5.48xlarge", "p5e.48xlarge"]}, "gpuready:instanceTypes"),
    ("gke-reservation", {"gpuready:reservation": {"affinity": "specific"}}, "gpuready:reservation.name"),
    ("gke-reservation", {"gpuready:reservation": {"name": "my-h100-reservation"}}, "gpuready:reservation.affinity"),
    ("gke-reservation", {"gpuready:reservation": {"affinity": "any", "only": True}}, "gpuready:reservation.only"),
    ("gke-reservation", {"gpuready:reservation": {"affinity": "specific", "name": "r", "end": "2020-01-01"}},
     "gpuready:reservation.end"),
    ("gke-reservation", {"gpuready:maxNodes": 3}, "gpuready:maxNodes"),
    ("gke-reservation", {"gpuready:nodeLocations": ["us-central1-b"]}, "gpuready:nodeLocations"),
    ("gke-reservation", {"gpuready:machineType": "a2-highgpu-1g"}, "gpuready:machineType"),
    ("gke-reservation", {"gpuready:spot": True}, "gpuready:spot"),
    ("gke-flex-start", {"gpuready:teams": None}, "gpuready:flexStart.queued"),
    ("gke-flex-start", {"gpuready:flexStart": {"maxRunDurationSeconds": 999999}},
     "gpuready:flexStart.maxRunDurationSeconds"),
    ("gke-flex-start", {"gpuready:minNodes": 1}, "gpuready:minNodes"),
    ("gke-flex-start", {"gpuready:reservation": {"affinity": "any"}}, "gpuready:reservation.affinity"),
    ("aks-reservation", {"gpuready:reservation": {"groupId": "a100-eastus"}}, "gpuready:reservation.groupId"),
    ("aks-reservation", {"gpuready:reservation": {"vmSize": "Standard_NC24ads_A100_v4"}}, "gpuready:reservation.groupId"),
    ("aks-reservation", {"gpuready:reservation": {"groupId": AKS_GROUP, "only": True}}, "gpuready:reservation.only"),
    ("aks-reservation", {"gpuready:reservation": {"groupId": AKS_GROUP, "end": "2020-01-01"}},
     "gpuready:reservation.end"),
    ("aks-reservation", {"gpuready:reservation": {"groupId": AKS_GROUP, "zones": ["5"]}}, "gpuready:reservation.zones"),
    ("aks-reservation", {"gpuready:spot": True}, "gpuready:spot"),
    ("aks-reservation", {"gpuready:vmSize": "Standard_NC40ads_H100_v5"}, "gpuready:vmSize"),
    ("aks-reservation", {"gpuready:availabilityZones": ["2"]}, "gpuready:availabilityZones"),
    ("gke", {"gpuready:minNodes": 5}, "gpuready:minNodes/gpuready:maxNodes"),
    ("gke", {"gpuready:diskSizeGb": 1}, "gpuready:diskSizeGb"),
    ("gke", {"gpuready:machineType": "n2-standard-8"}, "gpuready:machineType"),
    ("aks", {"gpuready:minCount": 5}, "gpuready:minCount/gpuready:maxCount"),
    ("aks", {"gpuready:osDiskSizeGb": 1}, "gpuready:osDiskSizeGb"),
    ("aks", {"gpuready:vmSize": "Standard_D8s_v5"}, "gpuready:vmSize"),
]


@pytest.mark.parametrize("stack,changes,key", MISTAKES)
def test_component_mistakes_name_the_key_the_user_typed(tmp_path, capsys, stack, changes, key):
    code, _ = _plan(tmp_path, stack, changes)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"gpuready: plan: {key}"), err
    assert not PYTHON_NAME.findall(err.replace("--path", "")), err


@pytest.mark.parametrize("stack,key,most", [
    ("aws-batch", "maxVcpus", 10_000), ("eks", "maxSize", 450), ("gke", "maxNodes", 1_000), ("aks", "maxCount", 1_000),
])
def test_absurd_sizes_are_refused_unless_asked_for(tmp_path, capsys, stack, key, most):
    code, _ = _plan(tmp_path, stack, {f"gpuready:{key}": 10**12})
    err = capsys.readouterr().err
    assert code == 2 and f"gpuready:{key} = 1000000000000: more than {most:,}" in err
    assert "gpuready:allowLargeCapacity: true" in err
    code, _ = _plan(tmp_path, stack, {f"gpuready:{key}": most + 1, "gpuready:allowLargeCapacity": True})
    assert f"more than {most:,}" not in capsys.readouterr().err


def test_nested_sizes_are_bounded_too(tmp_path, capsys):
    code, _ = _plan(tmp_path, "aws-batch", {"gpuready:cpuQueue": {"instanceTypes": ["m6i.large"], "maxVcpus": 10**9}})
    assert code == 2 and "gpuready:cpuQueue.maxVcpus = 1000000000: more than 10,000" in capsys.readouterr().err


def test_unknown_key_with_a_terminal_escape_is_printed_escaped(tmp_path, capsys):
    code, _ = _plan(tmp_path, "aws-batch", {"gpuready:\x1b[2Jx": 1, })
    err = capsys.readouterr().err
    assert code == 2 and "\x1b" not in err and "gpuready:\\x1b[2Jx" in err


def test_multi_node_max_vcpus_is_bounded_too(tmp_path, capsys):
    code, _ = _plan(tmp_path, "aws-batch-multinode", {"gpuready:multiNode": {"nodes": 2, "maxVcpus": 10**9}})
    assert code == 2 and "gpuready:multiNode.maxVcpus = 1000000000: more than 10,000" in capsys.readouterr().err


def test_a_key_given_twice_in_an_object_the_engine_passes_is_refused():
    """The Pulumi engine hands an object setting to the program as JSON text; JSON keeps the last of two equal keys
    silently, so the stack refuses it, naming the key."""
    from pulumi.runtime import config

    from gpuready_components.errors import ConfigError
    from gpuready_stacks import aws_batch
    from gpuready_stacks.config import StackConfig

    token = config.CONFIG.set({"gpuready:multiNode": '{"nodes": 2, "nodes": 3}'})
    try:
        with pytest.raises(ConfigError) as error:
            StackConfig(aws_batch.SETTINGS).read("multiNode")
        assert error.value.field == "gpuready:multiNode.nodes" and "given twice" in str(error.value)
        config.CONFIG.set({"gpuready:multiNode": '{"nodes": 2}'})
        assert StackConfig(aws_batch.SETTINGS).read("multiNode") == {"nodes": 2}
    finally:
        config.CONFIG.reset(token)


@pytest.mark.parametrize("stack, typo, meant, providers", [
    ("eks", "gpuredy:maxSize", "gpuready:maxSize", "aws, kubernetes, pulumi"),
    ("gke", "gpu-ready:maxNodes", "gpuready:maxNodes", "gcp, kubernetes, pulumi"),
    ("aks", "gpuready_:maxCount", "gpuready:maxCount", "azure-native, kubernetes, pulumi"),
])
def test_a_misspelt_namespace_is_refused_with_the_key_meant(tmp_path, capsys, stack, typo, meant, providers):
    code, _ = _plan(tmp_path, stack, {typo: 4})
    err = capsys.readouterr().err
    assert code == 2 and f"not a key gpuready or this stack's providers ({providers}) read" in err
    assert f"Fix: did you mean {meant}?" in err and err.count("\n") == 1


@pytest.mark.parametrize("stack, key", [
    ("eks", "kubernetes:enableServerSideApply"), ("gke", "gcp:region"), ("aks", "azure-native:location"),
    ("aws-batch", "pulumi:disable-default-providers"),
])
def test_the_providers_own_keys_pass(tmp_path, stack, key):
    assert _plan(tmp_path, stack, {key: "true" if "enable" in key or "disable" in key else "x"})[0] == 0
