"""The AKS repairer against a fake Azure Resource Manager (fake_azure.py) through the fault proxy: the scale set
instance behind a node, the scale set's capacity, what is under way, a restart and a redeploy sent once whatever the
network does; every request checked against azure-mgmt-compute's request builders (path, method, api-version,
query) and every answer against its models."""

from __future__ import annotations

import functools
import time
from urllib.parse import parse_qsl, urlparse

import pytest
from azure.mgmt.compute import models
from azure.mgmt.compute._utils.model_base import Model
from azure.mgmt.compute.operations import _operations as operations

from gpuready.errors import UserError
from gpuready.repair import azure
from gpuready.repair.rest import CloudError
from gpuready.smoke.retry import Backoff

from . import fake_azure

VMSS = fake_azure.SCALE_SET
ANSWERS = {"virtual_machine_scale_sets_get": models.VirtualMachineScaleSet,
           "virtual_machine_scale_set_vms_get": models.VirtualMachineScaleSetVM}
"""The SDK model of each answer with a body (the operations answer 202 and none)."""


def _model_of(field) -> type | None:
    """The model class a model's field deserializes into (itself, or in a list or map), from the SDK's own field."""
    pending = [field._type]
    while pending:
        item = pending.pop()
        if isinstance(item, type) and issubclass(item, Model):
            return item
        if isinstance(item, functools.partial):
            pending += [item.func, *item.args]
    return None


def unknown(value, model: type, where: str) -> list[str]:
    """The fields of ``value`` (an answer's JSON) that ``model`` (an azure-mgmt-compute model) has not, at any
    depth."""
    model()  # the SDK maps its fields on first use
    fields = {f._rest_name: f for f in model._attr_to_rest_field.values()}
    found = []
    for key, item in value.items():
        if key not in fields:
            found.append(f"{where}.{key}: not a field of {model.__name__}")
            continue
        inner = _model_of(fields[key])
        for index, element in enumerate(item if isinstance(item, list) else [item]):
            if inner and isinstance(element, dict):
                found += unknown(element, inner, f"{where}.{key}" + (f"[{index}]" if isinstance(item, list) else ""))
    return found


def vendor_problems(fake: fake_azure.FakeAzure) -> list[str]:
    """Every request the fake received that azure-mgmt-compute's request builder of that operation would not send as
    it is (path, method, query with api-version), and every answer field its models do not know."""
    found = []
    for verb, path, query in fake.requests:
        name, params = fake_azure.route(verb, path) or (None, {})
        if name is None:
            found.append(f"{verb} {path}: no azure-mgmt-compute operation")
            continue
        parts = params["vmss"].split("/")
        arguments = [parts[4], parts[8], *([params["instance"]] if params.get("instance") else []), parts[2]]
        extra = {"expand": query["$expand"]} if "$expand" in query else {}
        built = getattr(operations, f"build_{name}_request")(*arguments, **extra)
        url = urlparse(built.url)
        if (built.method, url.path, dict(parse_qsl(url.query))) != (verb, path, query):
            found.append(f"{verb} {path}?{query}: {name} is {built.method} {built.url}")
    for name, body in fake.answers:
        if name in ANSWERS:
            found += unknown(body, ANSWERS[name], name)
    return found


def test_every_request_is_the_sdks_and_every_answer_its_models(arm):
    fake, _, repairer = arm()
    machine = repairer.machine(fake.node("1"))
    repairer.pool_size(machine)
    repairer.under_way(machine)
    repairer.reboot(machine)
    fake.finish()
    repairer.replace(machine)
    assert {fake_azure.route(verb, path)[0] for verb, path, _ in fake.requests} == {
        "virtual_machine_scale_sets_get", "virtual_machine_scale_set_vms_get", "virtual_machine_scale_set_vms_restart",
        "virtual_machine_scale_set_vms_redeploy"}
    assert not vendor_problems(fake)
    assert {q["api-version"] for _, _, q in fake.requests} == {azure.API_VERSION}


def test_the_vendor_check_can_fail():
    fake = fake_azure.FakeAzure()
    try:
        vm = f"{fake_azure.SCALE_SET_ID}/virtualMachines/1"
        fake.requests += [("GET", vm, {"api-version": "2024-07-01", "$expand": "instanceView"}),
                          ("GET", vm + "/restart", {"api-version": azure.API_VERSION})]
        fake.answers.append(("virtual_machine_scale_set_vms_get", {"properties": {
            "provisioningState": "Succeeded", "powerState": "running",
            "instanceView": {"statuses": [{"code": "PowerState/running", "state": "on"}]}}}))
        assert vendor_problems(fake) == [
            f"GET {vm}?{{'api-version': '2024-07-01', '$expand': 'instanceView'}}: virtual_machine_scale_set_vms_get "
            f"is GET {vm}?api-version={azure.API_VERSION}&$expand=instanceView",
            f"GET {vm}/restart: no azure-mgmt-compute operation",
            "virtual_machine_scale_set_vms_get.properties.powerState: not a field of "
            "VirtualMachineScaleSetVMProperties",
            "virtual_machine_scale_set_vms_get.properties.instanceView.statuses[0].state: not a field of "
            "InstanceViewStatus"]
    finally:
        fake.close()


def test_the_sdk_reads_the_fakes_instance_as_the_repairer_does(arm):
    fake, _, repairer = arm(powers={"2": "PowerState/deallocated"})
    repairer.under_way(repairer.machine(fake.node("2")))
    (body,) = [b for name, b in fake.answers if name == "virtual_machine_scale_set_vms_get"]
    vm = models.VirtualMachineScaleSetVM(body)
    assert vm.properties.provisioning_state == "Succeeded"
    assert [s.code for s in vm.properties.instance_view.statuses] == ["ProvisioningState/succeeded",
                                                                      "PowerState/deallocated"]


def test_the_machine_behind_an_aks_node_is_its_scale_set_instance(arm):
    fake, _, repairer = arm()
    machine = repairer.machine(fake.node("2"))
    group = fake_azure.GROUP.lower()
    assert machine.node == "aks-gpu-12345678-vmss000002"
    assert machine.pool == (f"/subscriptions/{fake_azure.SUBSCRIPTION}/resourceGroups/{group}/providers/"
                            f"Microsoft.Compute/virtualMachineScaleSets/{VMSS}")
    assert machine.id == machine.pool + "/virtualMachines/2"
    assert machine.where == f"instance 2 of VM scale set {VMSS} (resource group {group})"
    assert fake.requests == []  # all from the providerID


@pytest.mark.parametrize("provider", [
    "aws:///us-west-2a/i-0abc1234def567890", "gce://ml-project/us-central1-a/gke-ml-gpu-1a2b-x7k9",
    "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/aks-gpu-12345678-vm0", ""])
def test_a_node_with_no_scale_set_instance_is_not_this_repairers(arm, provider):
    _, _, repairer = arm()
    node = {"metadata": {"name": "n1"}, "spec": {"providerID": provider} if provider else {}}
    assert repairer.machine(node) is None
    assert "is not a VM scale set instance" in repairer.skipped(node)


def test_pool_size_is_the_scale_sets_capacity(arm):
    fake, _, repairer = arm(instances=("0", "1", "2", "3"))
    assert repairer.pool_size(repairer.machine(fake.node("0"))) == 4


def test_nothing_is_under_way_on_a_running_succeeded_instance(arm):
    fake, _, repairer = arm()
    assert repairer.under_way(repairer.machine(fake.node("0"))) is None


@pytest.mark.parametrize("scenario, words", [
    ({"states": {"0": "Updating"}}, f"VM scale set {VMSS} instance 0 is Updating"),
    ({"powers": {"0": "PowerState/stopped"}}, f"VM scale set {VMSS} instance 0 is VM stopped"),
])
def test_an_instance_not_succeeded_or_not_running_is_under_way(arm, scenario, words):
    fake, _, repairer = arm(**scenario)
    assert repairer.under_way(repairer.machine(fake.node("0"))) == words


def test_reboot_restarts_the_instance_and_says_the_operation_without_waiting(arm):
    fake, _, repairer = arm()
    machine = repairer.machine(fake.node("1"))
    answer = repairer.reboot(machine)
    assert answer.startswith(f"restart accepted: operation https://management.azure.com/subscriptions/"
                             f"{fake_azure.SUBSCRIPTION}/providers/Microsoft.Compute/locations/eastus/operations/")
    assert fake.actions == [("restart", "1")]
    assert repairer.under_way(machine) == f"VM scale set {VMSS} instance 1 is Updating"


def test_replace_redeploys_the_instance_to_other_hardware(arm):
    fake, _, repairer = arm()
    assert repairer.replace(repairer.machine(fake.node("1"))).startswith("redeploy accepted: operation https://")
    assert fake.actions == [("redeploy", "1")]


@pytest.mark.parametrize("call", ["virtual_machine_scale_sets_get", "virtual_machine_scale_set_vms_get"])
def test_reads_pass_throttles_5xx_and_resets(arm, call):
    fake, proxy, repairer = arm()
    proxy.plan[call] = ["throttle", "5xx", "reset"]
    machine = repairer.machine(fake.node("0"))
    assert repairer.pool_size(machine) == 3 and repairer.under_way(machine) is None
    assert [f for c, f in proxy.seen if c == call] == ["throttle", "5xx", "reset", None]


@pytest.mark.parametrize("action", ["restart", "redeploy"])
def test_an_operation_that_took_effect_unanswered_is_seen_under_way_and_not_sent_again(arm, action):
    fake, proxy, repairer = arm()
    proxy.plan[f"virtual_machine_scale_set_vms_{action}"] = ["reset-after"]
    machine = repairer.machine(fake.node("1"))
    answer = repairer.reboot(machine) if action == "restart" else repairer.replace(machine)
    assert answer == f"{action} already under way after an unanswered request: VM scale set {VMSS} instance 1 is " \
                     "Updating"
    assert fake.actions == [(action, "1")]
    assert [c for c, _ in proxy.seen].count(f"virtual_machine_scale_set_vms_{action}") == 1


def test_an_operation_that_never_reached_azure_is_sent_again_after_the_check(arm):
    fake, proxy, repairer = arm()
    proxy.plan["virtual_machine_scale_set_vms_redeploy"] = ["throttle", "5xx", "reset"]
    assert repairer.replace(repairer.machine(fake.node("1"))).startswith("redeploy accepted: operation ")
    assert fake.actions == [("redeploy", "1")]
    assert [f for c, f in proxy.seen if c == "virtual_machine_scale_set_vms_redeploy"] == ["throttle", "5xx", "reset",
                                                                                          None]


def test_a_refusal_is_raised_with_azures_status_and_words_and_not_retried(arm):
    fake, proxy, repairer = arm(states={"1": "Updating"})
    with pytest.raises(CloudError) as raised:
        repairer.reboot(repairer.machine(fake.node("1")))
    assert raised.value.status == 409
    assert "HTTP 409: OperationNotAllowed: Operation 'restart' is not allowed" in str(raised.value)
    assert fake.actions == [] and [c for c, _ in proxy.seen].count("virtual_machine_scale_set_vms_restart") == 1


def test_a_hung_api_is_given_up_after_each_tries_timeout(arm):
    fake, proxy, _ = arm()
    repairer = azure.repairer({}, management=proxy.url, timeout=0.2, backoff=Backoff(0.01, 0.01))
    proxy.plan["virtual_machine_scale_sets_get"] = ["always:hang"]
    started = time.monotonic()
    with pytest.raises(CloudError, match="no answer"):
        repairer.pool_size(repairer.machine(fake.node("0")))
    assert time.monotonic() - started < 3.0


def test_ctrl_c_while_a_redeploy_waits_stops_it_and_nothing_is_sent_again(arm):
    fake, proxy, repairer = arm()
    proxy.plan["virtual_machine_scale_set_vms_redeploy"] = ["interrupt"]
    with pytest.raises(KeyboardInterrupt):
        repairer.replace(repairer.machine(fake.node("1")))
    assert fake.actions == [("redeploy", "1")]
    assert [c for c, _ in proxy.seen].count("virtual_machine_scale_set_vms_redeploy") == 1


def test_the_token_comes_from_the_environment(arm, monkeypatch):
    fake, proxy, _ = arm()
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", "someone-else")
    with pytest.raises(CloudError, match="HTTP 401: AuthenticationFailed"):
        stranger = azure.repairer({}, management=proxy.url)
        stranger.pool_size(stranger.machine(fake.node("0")))


def test_no_token_at_all_is_one_line_saying_both_ways(monkeypatch, tmp_path):
    monkeypatch.delenv("AZURE_ACCESS_TOKEN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError) as raised:
        azure.repairer({})
    assert str(raised.value) == ("no Azure access token for --repair: set AZURE_ACCESS_TOKEN, or log in so that "
                                 "`az account get-access-token --query accessToken -o tsv` prints one")


def test_the_aks_platform_finds_this_repairer():
    from gpuready_components import platforms

    assert platforms.get("aks").repair() is azure
