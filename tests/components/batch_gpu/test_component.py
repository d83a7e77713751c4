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
    assert res["subnets"] == ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]
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
    """200 GiB, the documented default: deep-learning images are over 10 GB, and a job's data lands there too."""
    rendering, _ = build(render)
    assert rendering.of_type(LT)[0].inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 200


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


def _named(rendering, type_: str, name: str):
    (found,) = [r for r in rendering.of_type(type_) if r.name == name]
    return found


def _node_container(rendering) -> dict:
    multinode = next(j for j in rendering.of_type(JOB) if j.inputs["type"] == "multinode")
    (node_range,) = json.loads(multinode.inputs["nodeProperties"])["nodeRangeProperties"]
    assert node_range["targetNodes"] == "0:"
    return node_range["container"]


def test_security_group_is_egress_only_and_multi_node_gets_a_group_open_to_itself(render):
    single, _ = build(render)
    (group,) = single.of_type(SG)
    assert group.inputs.get("ingress", []) == [] and group.inputs["egress"]

    multi, _ = build(render, multi_node=MultiNodeArgs(nodes=2))
    instances, own = _named(multi, SG, "gpu-instances"), _named(multi, SG, "gpu-multi-node")
    assert instances.inputs.get("ingress", []) == []
    assert own.inputs["ingress"] == [{"fromPort": 0, "toPort": 0, "protocol": "-1", "self": True}]
    # EFA needs the self rule both ways: an egress rule to 0.0.0.0/0 does not cover its traffic.
    assert {"fromPort": 0, "toPort": 0, "protocol": "-1", "self": True} in own.inputs["egress"]


def test_multi_node_gets_its_own_on_demand_environment_and_queue_in_one_subnet(render):
    rendering, env = build(render, multi_node=MultiNodeArgs(nodes=2))
    gpu, multi = _named(rendering, CE, "gpu-gpu-on-demand"), _named(rendering, CE, "gpu-multi-node")
    assert "placementGroup" not in gpu.inputs["computeResources"]  # single-node jobs keep every AZ
    assert gpu.inputs["computeResources"]["subnets"] == ["subnet-aaaaaaaa", "subnet-bbbbbbbb"]
    (group,) = rendering.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert group.name == "gpu-multi-node" and group.inputs["strategy"] == "cluster"
    res = multi.inputs["computeResources"]
    assert res["type"] == "EC2" and res["placementGroup"] == group.outputs["name"]
    assert res["subnets"] == ["subnet-aaaaaaaa"]
    assert res["instanceTypes"] == ["g6.12xlarge"]  # the environment's types with the most GPUs
    assert int(res["maxVcpus"]) == 96 and int(res["minVcpus"]) == 0
    template = _named(rendering, LT, "gpu-multi-node")
    assert res["launchTemplate"]["launchTemplateId"] == mock_id(LT, template.name)
    queue = _named(rendering, QUEUE, "gpu-multi-node")
    assert [o["computeEnvironment"] for o in queue.inputs["computeEnvironmentOrders"]] == [multi.outputs["arn"]]
    assert queue.inputs["jobStateTimeLimitActions"]  # a stuck gang job is cancelled too
    gpu_queue = _named(rendering, QUEUE, "gpu-gpu")
    assert multi.outputs["arn"] not in [o["computeEnvironment"] for o in gpu_queue.inputs["computeEnvironmentOrders"]]

    out = env.outputs
    from pulumi.runtime.sync_await import _sync_await

    assert _sync_await(out["multiNodeJobQueueArn"].future()) == queue.outputs["arn"]
    assert (out["multiNodeNodes"], out["multiNodeGpusPerNode"], out["multiNodeInstanceTypes"],
            out["multiNodeEfaInterfaces"]) == (2, 4, ["g6.12xlarge"], 1)


def test_multi_node_subnet_can_be_chosen(render):
    rendering, _ = build(render, multi_node=MultiNodeArgs(subnet="subnet-bbbbbbbb"))
    assert _named(rendering, CE, "gpu-multi-node").inputs["computeResources"]["subnets"] == ["subnet-bbbbbbbb"]


def test_each_node_takes_a_whole_p5_with_its_32_efa_devices(render):
    rendering, env = build(render, instance_types=["p5.48xlarge"], max_vcpus=192, multi_node=MultiNodeArgs(nodes=2))
    node = _node_container(rendering)
    asked = {r["type"]: r["value"] for r in node["resourceRequirements"]}
    assert asked == {"GPU": "8", "VCPU": "192", "MEMORY": str(int(2048 * 1024 * 0.95))}
    devices = node["linuxParameters"]["devices"]
    assert [d["hostPath"] for d in devices] == [f"/dev/infiniband/uverbs{i}" for i in range(32)]
    assert all(set(d) == {"hostPath"} for d in devices)  # Batch's defaults: same path, read/write/mknod
    assert node["linuxParameters"]["sharedMemorySize"] >= 64 * 1024
    assert node["ulimits"] == [{"name": "memlock", "softLimit": -1, "hardLimit": -1}]
    environment = {e["name"]: e["value"] for e in node["environment"]}
    assert environment["NCCL_DEBUG"] == "INFO" and environment["FI_PROVIDER"] == "efa"
    assert environment["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert node["logConfiguration"]["logDriver"] == "awslogs"

    interfaces = _named(rendering, LT, "gpu-multi-node").inputs["networkInterfaces"]
    assert [(i["networkCardIndex"], i["deviceIndex"]) for i in interfaces] == \
        [(0, 0)] + [(card, 1) for card in range(1, 32)]
    assert {i["interfaceType"] for i in interfaces} == {"efa"}
    assert {i["subnetId"] for i in interfaces} == {"subnet-aaaaaaaa"}
    own = _named(rendering, SG, "gpu-multi-node")
    assert all(i["securityGroups"] == [mock_id(SG, own.name)] for i in interfaces)
    # Groups ride on the interfaces: EC2 refuses instance-level groups beside network interfaces.
    assert "securityGroupIds" not in _named(rendering, CE, "gpu-multi-node").inputs["computeResources"]
    assert env.outputs["multiNodeEfaInterfaces"] == 32


def test_p6_b300_keeps_card_0_for_ena_and_puts_16_efa_on_cards_1_to_16(render):
    rendering, _ = build(render, instance_types=["p6-b300.48xlarge"], max_vcpus=192, multi_node=MultiNodeArgs())
    interfaces = _named(rendering, LT, "gpu-multi-node").inputs["networkInterfaces"]
    assert (interfaces[0]["networkCardIndex"], interfaces[0]["deviceIndex"], interfaces[0]["interfaceType"]) == \
        (0, 0, "interface")
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces[1:]] == \
        [(card, 1, "efa") for card in range(1, 17)]
    assert len(_node_container(rendering)["linuxParameters"]["devices"]) == 16


def test_g6_efa_has_no_gpudirect_rdma_and_efa_off_passes_no_devices(render):
    rendering, _ = build(render, multi_node=MultiNodeArgs())
    node = _node_container(rendering)
    environment = {e["name"]: e["value"] for e in node["environment"]}
    assert environment["FI_PROVIDER"] == "efa" and "FI_EFA_USE_DEVICE_RDMA" not in environment
    assert len(node["linuxParameters"]["devices"]) == 1

    off, env = build(render, multi_node=MultiNodeArgs(efa_interfaces=0))
    node = _node_container(off)
    assert node["linuxParameters"]["devices"] == [] and "FI_PROVIDER" not in {e["name"] for e in node["environment"]}
    assert "networkInterfaces" not in _named(off, LT, "gpu-multi-node").inputs
    assert _named(off, CE, "gpu-multi-node").inputs["computeResources"]["securityGroupIds"]
    assert env.outputs["multiNodeEfaInterfaces"] == 0


def test_no_multi_node_means_no_multi_node_outputs(render):
    _, env = build(render)
    assert {k: env.outputs.get(k) for k in ("multiNodeJobQueueArn", "multiNodeNodes", "multiNodeEfaInterfaces")} \
        == dict.fromkeys(("multiNodeJobQueueArn", "multiNodeNodes", "multiNodeEfaInterfaces"))


def test_existing_security_groups_are_used_as_given(render):
    rendering, _ = build(render, vpc_id=None, security_group_ids=["sg-0123456789abcdef0"])
    assert not rendering.of_type(SG)
    assert rendering.of_type(CE)[0].inputs["computeResources"]["securityGroupIds"] == ["sg-0123456789abcdef0"]


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
