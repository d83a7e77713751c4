"""Metaflow profiles: Metaflow itself reads every key, and what it reads lands a step on the stack's GPU nodes."""

from __future__ import annotations

import json

import pytest

from gpuready_components import metaflow as profiles
from gpuready_components.k8s_gpu.facts import Taint
from gpuready_components.k8s_gpu.scheduling import schedulable
from tests.metaflow_config import metaflow_reads

EKS_TAINTS = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
AKS_SPOT_TAINTS = [{"key": "sku", "value": "gpu", "effect": "NoSchedule"},
                   {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}]


def test_metaflow_reads_the_batch_profile_from_its_profile_file(tmp_path):
    profile = profiles.batch_profile(job_queue="arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
                                     job_role_arn="arn:aws:iam::123456789012:role/gpu-job",
                                     image="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", datastore_bucket="ml-data")
    read = metaflow_reads(profile, tmp_path)
    assert read == {key.removeprefix("METAFLOW_"): value for key, value in profile.items()}
    assert read["DATASTORE_SYSROOT_S3"] == "s3://ml-data/metaflow"


@pytest.mark.parametrize("taints", [EKS_TAINTS, AKS_SPOT_TAINTS])
def test_metaflow_reads_the_kubernetes_profile_and_its_pods_tolerate_the_gpu_nodes(tmp_path, taints):
    from metaflow.plugins.kubernetes.kube_utils import parse_kube_keyvalue_list
    from kubernetes.client import V1Toleration

    labels = {"eks.amazonaws.com/nodegroup": "gpu-gpu", "gpuready.io/gpu": "true"}
    profile = profiles.kubernetes_profile(namespace="default", service_account="gpu-jobs", node_labels=labels,
                                          taints=taints)
    read = metaflow_reads(profile, tmp_path)
    selector = parse_kube_keyvalue_list(read["KUBERNETES_NODE_SELECTOR"].split(","))  # as @kubernetes parses it
    tolerations = json.loads(read["KUBERNETES_TOLERATIONS"])
    assert selector == labels
    assert all(set(t) <= set(V1Toleration.attribute_map) for t in tolerations)  # @kubernetes refuses other keys
    pod = {"nodeSelector": selector, "tolerations": tolerations}
    assert schedulable(pod, labels, [Taint(t["key"], t["value"], t["effect"]) for t in taints])
    assert not schedulable({"nodeSelector": selector, "tolerations": tolerations[:-1]}, labels,
                           [Taint(t["key"], t["value"], t["effect"]) for t in taints])
    assert (read["KUBERNETES_NAMESPACE"], read["KUBERNETES_SERVICE_ACCOUNT"], read["KUBERNETES_GPU_VENDOR"]) == \
        ("default", "gpu-jobs", "nvidia")
