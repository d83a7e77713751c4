"""What BatchGpuEnvironment asks AWS for, as rendered under Pulumi's mock runtime."""

from __future__ import annotations

import json

import pytest

from gpuready_components import catalog
from gpuready_components.batch_gpu import CpuQueueArgs, GpuJobArgs, MultiNodeArgs
from gpuready.plan.render import mock_id
from tests.conftest import non_camel_keys

from .helpers import ATTACH, CE, JOB, LT, QUEUE, ROLE, SG, build, container


def test_gpu_compute_environment_scales_from_zero_on_nvidia_ami(render):
    rendering, _ = build(render)
    (env,) = rendering.of_type(CE)
    res = env.inputs["computeResources"]
    assert env.inputs["type"] == "MANAGED"
    assert res["type"] == "EC2" and res["allocationStrategy"] == "BEST_FIT_PROGRESSIVE"
    assert res["minVcpus"] == 0 and res["maxVcpus"] == 64
    assert res["instanceTypes"] == ["g6.xlarge", "g6.12xlarge"]
    assert res["ec2Configurations"] == [{"imageType": "ECS_AL2023_NVIDIA"}]
    assert res["subnets"] == ["subnet-a", "subnet-b"]
    assert "desiredVcpus" not in res


def test_launch_template_requires_imdsv2_and_encrypts_a_large_gp3_root(render):
    rendering, _ = build(render, root_volume_gib=300)
    (template,) = rendering.of_type(LT)
    assert template.inputs["metadataOptions"]["httpTokens"] == "required"
    # 1, not 2: a job container behind the docker bridge gets no IMDSv2 token, so no instance-role credentials.
    assert template.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
    (root,) = template.inputs["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"]["volumeSize"] == 300 and root["ebs"]["volumeType"] == "gp3"
    assert root["ebs"]["encrypted"] == "true"
    (env,) = rendering.of_type(CE)
    assert env.inputs["computeResources"]["launchTemplate"] == {"launchTemplateId": mock_id(LT, "gpu-gpu"), "version": "1"}


def test_default_root_volume_fits_deep_learning_images(render):
    rendering, _ = build(render)
    assert rendering.of_type(LT)[0].inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] >= 100


def test_gpu_queue_holds_only_gpu_environments_and_cancels_stuck_jobs(render):
    rendering, _ = build(render, capacity=["spot", "on-demand"], cpu_queue=CpuQueueArgs(), runnable_timeout_minutes=45)
    environments = {e.outputs["arn"]: e for e in rendering.of_type(CE)}
    queues = {q.name: q for q in rendering.of_type(QUEUE)}
    gpu_queue, cpu_queue = queues["gpu-gpu"], queues["gpu-cpu"]

    members = [environments[o["computeEnvironment"]] for o in gpu_queue.inputs["computeEnvironmentOrders"]]
    assert [m.name for m in members] == ["gpu-gpu-spot", "gpu-gpu-on-demand"]
    for member in members:
        assert all(catalog.find("aws", t) for t in member.inputs["computeResources"]["instanceTypes"])
    (cpu_member,) = [environments[o["computeEnvironment"]] for o in cpu_queue.inputs["computeEnvironmentOrders"]]
    assert not any(catalog.find("aws", t) for t in cpu_member.inputs["computeResources"]["instanceTypes"])
    assert cpu_member.inputs["computeResources"]["ec2Configurations"] == [{"imageType": "ECS_AL2023"}]

    actions = {a["reason"]: a for a in gpu_queue.inputs["jobStateTimeLimitActions"]}
    assert actions["MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT"]["maxTimeSeconds"] == 600
    assert actions["CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"]["maxTimeSeconds"] == 45 * 60
    assert all(a["action"] == "CANCEL" and a["state"] == "RUNNABLE" for a in actions.values())


def test_job_definition_requests_gpus_and_logs_to_the_stack_log_group(render):
    rendering, _ = build(render, job=GpuJobArgs(gpus=4, vcpus=8, memory_mib=32768))
    (job,) = rendering.of_type(JOB)
    props = container(job)
    assert job.inputs["type"] == "container" and job.inputs["platformCapabilities"] == ["EC2"]
    assert props["resourceRequirements"] == [{"type": "GPU", "value": "4"}, {"type": "VCPU", "value": "8"},
                                             {"type": "MEMORY", "value": "32768"}]
    assert props["logConfiguration"]["logDriver"] == "awslogs"
    (log_group,) = rendering.of_type("aws:cloudwatch/logGroup:LogGroup")
    assert props["logConfiguration"]["options"]["awslogs-group"] == log_group.outputs["name"]
    assert "cuda" in props["image"]


def test_spot_adds_a_spot_environment_and_its_fleet_role_only_then(render):
    on_demand, _ = build(render)
    assert [r.name for r in on_demand.of_type(ROLE)] == ["gpu-ecs-instance", "gpu-job"]

    spot, _ = build(render, capacity=["spot"])
    (env,) = spot.of_type(CE)
    res = env.inputs["computeResources"]
    assert res["type"] == "SPOT" and res["allocationStrategy"] == "SPOT_CAPACITY_OPTIMIZED"
    fleet_role = next(r for r in spot.of_type(ROLE) if r.name == "gpu-spot-fleet")
    assert res["spotIamFleetRole"] == fleet_role.outputs["arn"]


def test_roles_use_aws_managed_policies_only(render):
    rendering, _ = build(render, capacity=["spot"])
    policies = sorted(a.inputs["policyArn"] for a in rendering.of_type(ATTACH))
    assert policies == ["arn:aws:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role",
                        "arn:aws:iam::aws:policy/service-role/AmazonEC2SpotFleetTaggingRole"]
    assert not rendering.of_type("aws:iam/rolePolicy:RolePolicy")
    for role in rendering.of_type(ROLE):
        (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert statement["Action"] == "sts:AssumeRole" and list(statement["Principal"]) == ["Service"]


def test_compute_environments_use_batchs_service_linked_role_and_update_in_place(render):
    """No serviceRole: Batch uses AWSServiceRoleForBatch, without which AWS replaces an environment on most edits."""
    rendering, _ = build(render, capacity=["spot", "on-demand"], cpu_queue=CpuQueueArgs())
    for env in rendering.of_type(CE):
        assert "serviceRole" not in env.inputs, env.name
        assert env.inputs["updatePolicy"] == {"terminateJobsOnUpdate": False, "jobExecutionTimeoutMinutes": 30}
        assert env.inputs["computeResources"]["allocationStrategy"] != "BEST_FIT"  # BEST_FIT cannot update in place
    assert not any("batch" in json.loads(r.inputs["assumeRolePolicy"])["Statement"][0]["Principal"]["Service"]
                   for r in rendering.of_type(ROLE))


def test_jobs_assume_their_own_role_with_no_permissions_by_default(render):
    rendering, env = build(render, multi_node=MultiNodeArgs(nodes=2))
    job_role = next(r for r in rendering.of_type(ROLE) if r.name == "gpu-job")
    (statement,) = json.loads(job_role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "ecs-tasks.amazonaws.com"}
    assert not [a for a in rendering.of_type(ATTACH) if a.inputs["role"] == job_role.outputs["name"]]
    single, multi = sorted(rendering.of_type(JOB), key=lambda j: j.inputs["type"])
    # Built from the role's name, so that it is known in a preview: IAM ARNs carry no region.
    arn = f"arn:aws:iam::123456789012:role/{job_role.outputs['name']}"
    assert container(single)["jobRoleArn"] == arn
    nodes = json.loads(multi.inputs["nodeProperties"])["nodeRangeProperties"]
    assert [n["container"]["jobRoleArn"] for n in nodes] == [arn]
    from pulumi.runtime.sync_await import _sync_await

    assert _sync_await(env.job_role_arn.future()) == job_role.outputs["arn"]


def test_job_role_gets_the_policies_given_and_no_others(render):
    arns = ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "arn:aws:iam::123456789012:policy/team/datasets"]
    rendering, _ = build(render, job_role_policy_arns=arns)
    job_role = next(r for r in rendering.of_type(ROLE) if r.name == "gpu-job")
    attached = [a.inputs["policyArn"] for a in rendering.of_type(ATTACH) if a.inputs["role"] == job_role.outputs["name"]]
    assert attached == arns


def test_security_group_is_egress_only_unless_multi_node(render):
    single, _ = build(render)
    (group,) = single.of_type(SG)
    assert group.inputs.get("ingress", []) == [] and group.inputs["egress"]

    multi, _ = build(render, multi_node=MultiNodeArgs(nodes=2))
    (group,) = multi.of_type(SG)
    assert group.inputs["ingress"] == [{"fromPort": 0, "toPort": 0, "protocol": "-1", "self": True}]


def test_multi_node_registers_a_multinode_job_in_a_cluster_placement_group(render):
    rendering, _ = build(render, multi_node=MultiNodeArgs(nodes=4), max_vcpus=192)
    (group,) = rendering.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert group.inputs["strategy"] == "cluster"
    (env,) = rendering.of_type(CE)
    assert env.inputs["computeResources"]["placementGroup"] == group.outputs["name"]
    multinode = next(j for j in rendering.of_type(JOB) if j.inputs["type"] == "multinode")
    nodes = json.loads(multinode.inputs["nodeProperties"])
    assert nodes["numNodes"] == 4 and nodes["mainNode"] == 0
    assert nodes["nodeRangeProperties"][0]["container"]["resourceRequirements"][0] == {"type": "GPU", "value": "1"}


def test_existing_security_groups_are_used_as_given(render):
    rendering, _ = build(render, vpc_id=None, security_group_ids=["sg-123"])
    assert not rendering.of_type(SG)
    assert rendering.of_type(CE)[0].inputs["computeResources"]["securityGroupIds"] == ["sg-123"]


def test_children_are_parented_to_the_component_with_its_type_token(render):
    rendering, _ = build(render, capacity=["spot", "on-demand"], multi_node=None, cpu_queue=CpuQueueArgs())
    (component,) = [r for r in rendering.resources if not r.custom]
    assert component.type == "gpuready:aws:BatchGpuEnvironment"
    children = [r for r in rendering.resources if r.custom]
    assert children and all(r.parent == component.urn for r in children)


def test_outputs_carry_what_the_smoke_test_and_the_summary_need(render):
    rendering, env = build(render, instance_types=["g6.xlarge", "g6.12xlarge"], max_vcpus=96)
    cap = env.capacity
    assert (cap.max_gpus_per_instance, cap.max_vcpus_per_instance) == (4, 48)
    assert cap.max_memory_mib_per_instance == int(192 * 1024 * 0.95)
    # 96 vCPUs hold 24 g6.xlarge (1 GPU per 4 vCPUs) but only 2 g6.12xlarge (8 GPUs): the bound takes the former.
    assert cap.max_total_gpus == 24
    assert cap.max_usd_per_hour == pytest.approx(24 * 0.8048, abs=0.01)
    assert cap.gpu_models == ("L4",)
    (queue,) = rendering.of_type(QUEUE)
    from pulumi.runtime.sync_await import _sync_await

    assert _sync_await(env.job_queue_arn.future()) == queue.outputs["arn"]
    assert _sync_await(env.compute_environment_arns.future()) == [rendering.of_type(CE)[0].outputs["arn"]]


def test_every_rendered_input_key_is_camel_case(render):
    rendering, _ = build(render, capacity=["spot", "on-demand"], cpu_queue=CpuQueueArgs(), tags={"cost-center": "ml"},
                         multi_node=None)
    rendering_mn, _ = build(render, multi_node=MultiNodeArgs())
    for r in rendering.resources + rendering_mn.resources:
        assert list(non_camel_keys(r.inputs)) == [], r.name
        for key in ("containerProperties", "nodeProperties"):
            if key in r.inputs:
                assert list(non_camel_keys(json.loads(r.inputs[key]))) == [], (r.name, key)


def test_camel_case_check_catches_a_snake_case_key():
    assert list(non_camel_keys({"computeResources": {"min_vcpus": 0}})) == [".computeResources.min_vcpus"]


def test_compute_environments_are_auto_named_so_replacement_creates_first(render):
    """With no fixed name, Pulumi creates a replacement environment and repoints the queue before deleting the old."""
    rendering, _ = build(render, capacity=["spot", "on-demand"], cpu_queue=CpuQueueArgs())
    for env in rendering.of_type(CE):
        assert "name" not in env.inputs and "namePrefix" not in env.inputs
