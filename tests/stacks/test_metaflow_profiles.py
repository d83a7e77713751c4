"""Every reference stack exports Metaflow profiles that Metaflow reads and that agree with the stack: its queue, its
job role, its namespace and service account, and tolerations and a selector that land on its GPU nodes."""

from __future__ import annotations

import json

import pytest

from gpuready.plan.render import render
from gpuready.project import find_project, load_stack_config
from gpuready_components.k8s_gpu.facts import Taint
from gpuready_components.k8s_gpu.scheduling import schedulable
from tests.conftest import ROOT
from tests.metaflow_config import metaflow_reads

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
QUEUE = "aws:batch/jobQueue:JobQueue"


def _render(stack: str, **config: str):
    project = find_project(ROOT)
    return render(project.main, project.name, stack, {**load_stack_config(project.stack_file(stack), project.name),
                                                      **config})


@pytest.mark.parametrize("stack", ["aws-batch", "aws-batch-multinode"])
def test_batch_profiles_name_the_stacks_queues_and_job_role(stack, tmp_path):
    rendering = _render(stack)
    outputs = rendering.outputs
    queues = {q.name: q.outputs["name"] for q in rendering.of_type(QUEUE)}
    profiles = {"metaflowProfile": queues["gpu-gpu"]}
    if stack == "aws-batch-multinode":
        profiles["metaflowMultiNodeProfile"] = queues["gpu-multi-node"]
        assert outputs["multiNodeJobQueueArn"].endswith("/" + queues["gpu-multi-node"])
    else:
        assert "metaflowMultiNodeProfile" not in outputs
    for output, queue in profiles.items():
        read = metaflow_reads(outputs[output], tmp_path)
        assert read["BATCH_JOB_QUEUE"] == queue and outputs["jobQueueArn"].endswith("/" + queues["gpu-gpu"])
        assert read["ECS_S3_ACCESS_IAM_ROLE"].split(":role/")[1] == outputs["jobRoleArn"].split(":role/")[1]
        assert "DATASTORE_SYSROOT_S3" not in read  # no bucket named: the role gets no S3 access either
    assert not rendering.of_type(ROLE_POLICY)


def test_a_datastore_bucket_is_in_the_profile_and_the_job_role_may_use_it(tmp_path):
    rendering = _render("aws-batch", **{"gpuready:metaflowDatastoreBucket": "ml-metaflow"})
    read = metaflow_reads(rendering.outputs["metaflowProfile"], tmp_path)
    assert (read["DEFAULT_DATASTORE"], read["DATASTORE_SYSROOT_S3"]) == ("s3", "s3://ml-metaflow/metaflow")
    (policy,) = rendering.of_type(ROLE_POLICY)
    statements = json.loads(policy.inputs["policy"])["Statement"]
    assert {r for s in statements for r in [s["Resource"]]} == {"arn:aws:s3:::ml-metaflow",
                                                                "arn:aws:s3:::ml-metaflow/*"}
    assert policy.inputs["role"] == rendering.outputs["jobRoleArn"].split(":role/")[1]


@pytest.mark.parametrize("stack", ["eks", "gke", "aks"])
def test_kubernetes_profiles_run_steps_as_the_stacks_account_on_its_gpu_nodes(stack, tmp_path):
    rendering = _render(stack)
    outputs = rendering.outputs
    read = metaflow_reads(outputs["metaflowProfile"], tmp_path)
    # a stack with teams: the first team's profile, in a namespace a queue takes (outside, jobs escape every quota)
    teams = outputs.get("teams") or []
    assert not teams or outputs["metaflowProfile"] == teams[0]["metaflowProfile"]
    (account,) = [a for a in rendering.of_type(SERVICE_ACCOUNT) if ("-team-" in a.name) == bool(teams)
                  and a.inputs["metadata"]["namespace"] == read["KUBERNETES_NAMESPACE"]]
    assert (read["KUBERNETES_NAMESPACE"], read["KUBERNETES_SERVICE_ACCOUNT"]) == \
        (account.inputs["metadata"]["namespace"], account.inputs["metadata"]["name"])
    if teams:
        local = [r.inputs for r in rendering.resources if r.type.endswith(":LocalQueue")]
        assert any(q["metadata"]["namespace"] == read["KUBERNETES_NAMESPACE"] for q in local)
    from metaflow.plugins.kubernetes.kube_utils import parse_kube_keyvalue_list

    pod = {"nodeSelector": parse_kube_keyvalue_list(read["KUBERNETES_NODE_SELECTOR"].split(",")),
           "tolerations": json.loads(read["KUBERNETES_TOLERATIONS"])}
    assert pod["nodeSelector"] == outputs["gpuNodeLabels"]
    assert schedulable(pod, outputs["gpuNodeLabels"], [Taint(**t) for t in outputs["gpuNodeTaints"]])
    assert read["KUBERNETES_GPU_VENDOR"] == "nvidia"
