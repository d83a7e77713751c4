"""The EKS repairer against moto's server: the machine behind a node (providerID -> instance -> its Auto Scaling
group), the pool's size, what is under way, and every request it sends a valid member of botocore's own input
shapes (the models AWS's SDKs are generated from)."""

from __future__ import annotations

import json

import botocore.session

from gpuready.repair import Machine
from gpuready.repair import aws as eks

from .conftest import GROUP, node


def test_every_request_is_a_valid_shape_of_botocore_s_models(aws, group):
    ids = group(3)
    repairer = eks.repairer({"platform": "eks"})
    sent = []
    for client in (repairer.autoscaling, repairer.ec2, repairer.autoscaling_act, repairer.ec2_act):
        client.meta.events.register("provide-client-params.*.*", lambda params, model, **kw: sent.append(
            (model.service_model.service_name, model.name, dict(params))))
    machine = repairer.machine(node("gpu-0", ids[0]))
    assert machine == Machine("gpu-0", GROUP, ids[0], f"instance {ids[0]} of Auto Scaling group {GROUP}")
    assert repairer.pool_size(machine) == 3 and repairer.under_way(machine) is None
    assert "RebootInstances accepted" in repairer.reboot(machine)
    assert "activity" in repairer.replace(machine)
    assert repairer.under_way(machine) == f"instance {ids[0]} has left Auto Scaling group {GROUP}"
    models = botocore.session.get_session()
    assert {(service, name) for service, name, _ in sent} == {
        ("autoscaling", "DescribeAutoScalingInstances"), ("autoscaling", "DescribeAutoScalingGroups"),
        ("ec2", "DescribeInstances"), ("ec2", "RebootInstances"),
        ("autoscaling", "TerminateInstanceInAutoScalingGroup")}
    for service, name, params in sent:
        shape = models.get_service_model(service).operation_model(name).input_shape
        assert set(params) <= set(shape.members), (name, params)
        assert set(shape.required_members) <= set(params), (name, params)
    terminate = next(p for _, name, p in sent if name == "TerminateInstanceInAutoScalingGroup")
    assert terminate == {"InstanceId": ids[0], "ShouldDecrementDesiredCapacity": False}  # the group keeps its size


def test_a_node_the_repairer_does_not_handle_has_no_machine(aws, group):
    group(1)
    repairer = eks.repairer({"platform": "eks"})
    assert repairer.machine(node("gpu-gke")) is None  # no AWS providerID
    gke = node("gpu-gke")
    gke["spec"]["providerID"] = "gce://ml/us-central1-a/gke-ml-gpu-1a2b-x7k9"
    assert repairer.machine(gke) is None
    assert repairer.machine(node("gpu-auto", "i-0123456789abcdef0")) is None  # in no Auto Scaling group


def test_the_region_is_the_one_the_stack_s_kubeconfig_names():
    def kubeconfig(args):
        return json.dumps({"apiVersion": "v1", "kind": "Config", "users": [{"name": "eks", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": args}}}]})
    written = ["eks", "get-token", "--cluster-name", "ml", "--region", "eu-west-1"]  # what the eks stack writes
    assert eks.region({"kubeconfig": kubeconfig(written)}) == "eu-west-1"
    assert eks.region({"kubeconfig": kubeconfig(["--region=us-west-2", "eks", "get-token"])}) == "us-west-2"
    assert eks.region({"kubeconfig": kubeconfig(["eks", "get-token"])}) is None
    assert eks.region({"kubeconfig": "users: [{name: eks, user: {exec: {args: [--region, ap-south-1]}}}]"}) == \
        "ap-south-1"
    assert eks.region({}) is None
