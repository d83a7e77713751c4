"""The GKE repairer against a fake Compute Engine API (fake_gce.py) through the fault proxy: the machine behind a
node, its group's size, what is under way, a reset and a recreate sent once whatever the network does; every request
and answer checked against Compute Engine v1's discovery document (google-api-python-client ships it)."""

from __future__ import annotations

import json
import re
import time
from importlib import resources

import pytest

from gpuready.errors import UserError
from gpuready.repair import gcp
from gpuready.repair.rest import CloudError
from gpuready.smoke.retry import Backoff

from . import fake_gce

X, Y, Z = "gke-ml-gpu-1a2b-x7k9", "gke-ml-gpu-1a2b-q4w8", "gke-ml-gpu-1a2b-m3n5"
GROUP_PATH = f"projects/{fake_gce.NUMBER}/zones/{fake_gce.ZONE}/instanceGroupManagers/{fake_gce.GROUP}"


def discovery() -> dict:
    return json.loads(resources.files("googleapiclient").joinpath("discovery_cache/documents/compute.v1.json")
                      .read_text(encoding="utf-8"))


def method(document: dict, name: str) -> dict:
    """The discovery document's method ``compute.RESOURCE.METHOD``."""
    _, resource, verb = name.split(".")
    return document["resources"][resource]["methods"][verb]


def problems(value, schema: dict, schemas: dict, where: str) -> list[str]:
    """Where ``value`` is not what ``schema`` (a discovery document schema) allows: unknown fields, wrong types,
    values outside an enum."""
    if "$ref" in schema:
        schema = schemas[schema["$ref"]]
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        found = []
        for key, item in value.items():
            inner = (schema.get("properties") or {}).get(key) or schema.get("additionalProperties")
            found += problems(item, inner, schemas, f"{where}.{key}") if inner else [f"{where}.{key}: no such field"]
        return found
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not an array"]
        return [p for i, item in enumerate(value) for p in problems(item, schema["items"], schemas, f"{where}[{i}]")]
    expected = {"string": str, "integer": int, "boolean": bool, "number": (int, float)}.get(kind)
    if expected and not isinstance(value, expected):
        return [f"{where}: {value!r} is not a {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is none of {schema['enum']}"]
    return []


def vendor_problems(fake: fake_gce.FakeGce) -> list[str]:
    """Every request the fake received that Compute Engine v1 would not take as sent (method, path, query, body),
    and every answer it gave that is not Compute Engine's shape."""
    document = discovery()
    schemas, found = document["schemas"], []
    for verb, path, query, body in fake.requests:
        name, _ = fake_gce.route(verb, path) or (None, None)
        if name is None:
            found.append(f"{verb} {path}: no Compute Engine method")
            continue
        spec = method(document, name)
        template = re.sub(r"\{(\w+)\}", r"[^/]+", spec["path"])
        if spec["httpMethod"] != verb or not re.fullmatch(template, path):
            found.append(f"{verb} {path}: {name} is {spec['httpMethod']} {spec['path']}")
        found += [f"{name}: query parameter {k} is not one of its query parameters" for k in query
                  if spec["parameters"].get(k, {}).get("location") != "query"]
        if "request" in spec:
            found += problems(body, spec["request"], schemas, f"{name} request")
        elif body is not None:
            found.append(f"{name} takes no body, was sent {body!r}")
    for name, answer in fake.answers:
        found += problems(answer, method(document, name)["response"], schemas, f"{name} answer")
    return found


def test_every_request_and_answer_is_compute_engines(gce):
    fake, _, repairer = gce(names=(X, Y, Z), actions={Z: "VERIFYING"})
    machine = repairer.machine(fake.node(X))
    repairer.pool_size(machine)
    repairer.under_way(machine)
    repairer.reboot(machine)
    repairer.replace(machine)
    assert {fake_gce.route(verb, path)[0] for verb, path, _, _ in fake.requests} == {r[2] for r in fake_gce.ROUTES}
    assert not vendor_problems(fake)


def test_the_vendor_check_can_fail():
    fake = fake_gce.FakeGce()
    try:
        actions = discovery()["schemas"]["ManagedInstance"]["properties"]["currentAction"]["enum"]
        fake.requests.append(("POST", f"{GROUP_PATH}/recreateInstances", {"requestId": "r", "force": "1"},
                              {"instances": "one", "names": []}))
        fake.answers.append(("compute.instanceGroupManagers.get", {"targetSize": "2", "size": 2}))
        fake.answers.append(("compute.instanceGroupManagers.listManagedInstances",
                             {"managedInstances": [{"currentAction": "REBOOTING"}]}))
        assert vendor_problems(fake) == [
            "compute.instanceGroupManagers.recreateInstances: query parameter force is not one of its query "
            "parameters",
            "compute.instanceGroupManagers.recreateInstances request.instances: 'one' is not an array",
            "compute.instanceGroupManagers.recreateInstances request.names: no such field",
            "compute.instanceGroupManagers.get answer.targetSize: '2' is not a integer",
            "compute.instanceGroupManagers.get answer.size: no such field",
            "compute.instanceGroupManagers.listManagedInstances answer.managedInstances[0].currentAction: "
            f"'REBOOTING' is none of {actions}"]
    finally:
        fake.close()


def test_the_machine_behind_a_gke_node_is_its_instance_in_its_managed_instance_group(gce):
    fake, _, repairer = gce()
    machine = repairer.machine(fake.node(X))
    assert machine.node == X
    assert machine.id == f"https://www.googleapis.com/compute/v1/projects/ml-project/zones/us-central1-a/instances/{X}"
    assert machine.pool.endswith("/compute/v1/" + GROUP_PATH)
    assert machine.where == f"instance {X} of managed instance group gke-ml-gpu-1a2b-grp (us-central1-a)"
    assert repairer.skipped(fake.node(X)) == ""


@pytest.mark.parametrize("provider", [
    "aws:///us-west-2a/i-0abc1234def567890",
    "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/v/"
    "virtualMachines/0",
    "kind://docker/kind/kind-worker", ""])
def test_a_node_of_another_cloud_is_not_this_repairers_and_no_api_is_asked(gce, provider):
    fake, _, repairer = gce()
    node = {"metadata": {"name": "n1"}, "spec": {"providerID": provider} if provider else {}}
    assert repairer.machine(node) is None
    assert "is not a Compute Engine instance (gce://...)" in repairer.skipped(node)
    assert fake.requests == []


def test_an_instance_in_no_managed_instance_group_is_skipped_saying_so(gce):
    fake, _, repairer = gce(extra=("lone-vm",))
    assert repairer.machine(fake.node("lone-vm")) is None
    assert repairer.skipped(fake.node("lone-vm")) == ("instance lone-vm is in no zonal managed instance group (its "
                                                      "metadata created-by is absent)")


def test_pool_size_is_the_groups_target_size(gce):
    fake, _, repairer = gce(names=(X, Y, Z))
    assert repairer.pool_size(repairer.machine(fake.node(X))) == 3


def test_nothing_is_under_way_on_a_running_instance_the_group_leaves_alone(gce):
    fake, _, repairer = gce(names=(X, Y, Z))
    assert repairer.under_way(repairer.machine(fake.node(Z))) is None  # on the group's second page


def test_the_groups_action_on_the_instance_is_under_way(gce):
    fake, _, repairer = gce(names=(X, Y, Z), actions={Z: "RESTARTING"})
    assert repairer.under_way(repairer.machine(fake.node(Z))) == (
        f"managed instance group gke-ml-gpu-1a2b-grp is RESTARTING instance {Z}")


def test_an_instance_not_running_is_under_way(gce):
    fake, _, repairer = gce(status={X: "STOPPING"})
    assert repairer.under_way(repairer.machine(fake.node(X))) == f"instance {X} is STOPPING"


def test_an_instance_the_group_no_longer_lists_is_under_way(gce):
    fake, _, repairer = gce()
    machine = repairer.machine(fake.node(X))
    fake.members.remove(X)
    assert repairer.under_way(machine) == f"instance {X} is no longer in managed instance group gke-ml-gpu-1a2b-grp"


def test_reboot_resets_the_instance_and_says_the_operation(gce):
    fake, _, repairer = gce()
    answer = repairer.reboot(repairer.machine(fake.node(X)))
    assert answer == "reset requested: operation operation-1764000000000-0001-reset (RUNNING)"
    assert fake.resets == [X] and fake.recreates == []


def test_replace_recreates_the_instance_in_its_group_which_then_says_so(gce):
    fake, _, repairer = gce()
    machine = repairer.machine(fake.node(X))
    assert repairer.replace(machine) == ("recreate requested: operation operation-1764000000000-0001-"
                                         "recreateInstances (RUNNING)")
    assert fake.recreates == [X] and fake.resets == []
    assert repairer.under_way(machine) == f"managed instance group gke-ml-gpu-1a2b-grp is RECREATING instance {X}"


@pytest.mark.parametrize("call", ["instances.get", "instanceGroupManagers.get",
                                  "instanceGroupManagers.listManagedInstances"])
def test_reads_pass_throttles_5xx_and_resets(gce, call):
    fake, proxy, repairer = gce()
    proxy.plan[call] = ["throttle", "5xx", "reset"]
    machine = repairer.machine(fake.node(X))
    assert repairer.pool_size(machine) == 2 and repairer.under_way(machine) is None
    assert [f for c, f in proxy.seen if c == call][:4] == ["throttle", "5xx", "reset", None]


def test_a_recreate_that_took_effect_unanswered_is_seen_under_way_and_not_sent_again(gce):
    fake, proxy, repairer = gce()
    proxy.plan["instanceGroupManagers.recreateInstances"] = ["reset-after"]
    answer = repairer.replace(repairer.machine(fake.node(X)))
    assert answer == ("recreate already under way after an unanswered request: managed instance group "
                      f"gke-ml-gpu-1a2b-grp is RECREATING instance {X}")
    assert fake.recreates == [X]
    assert [f for c, f in proxy.seen if c == "instanceGroupManagers.recreateInstances"] == ["reset-after"]


def test_a_recreate_that_never_reached_the_api_is_sent_again_after_the_check(gce):
    fake, proxy, repairer = gce()
    proxy.plan["instanceGroupManagers.recreateInstances"] = ["5xx", "reset"]
    assert repairer.replace(repairer.machine(fake.node(X))).startswith("recreate requested: operation ")
    assert fake.recreates == [X]
    assert [f for c, f in proxy.seen if c == "instanceGroupManagers.recreateInstances"] == ["5xx", "reset", None]


def test_a_reset_that_took_effect_unanswered_is_sent_again_with_its_request_id_and_acts_once(gce):
    fake, proxy, repairer = gce()
    proxy.plan["instances.reset"] = ["reset-after"]
    answer = repairer.reboot(repairer.machine(fake.node(X)))
    assert answer == "reset requested: operation operation-1764000000000-0001-reset (RUNNING)"
    assert fake.resets == [X]
    ids = [query["requestId"] for verb, path, query, _ in fake.requests if path.endswith("/reset")]
    assert len(ids) == 2 and ids[0] == ids[1]


def test_the_same_change_asked_again_is_the_same_request_which_compute_engine_acts_on_once(gce):
    fake, proxy, repairer = gce()
    machine = repairer.machine(fake.node(X))
    first, again = repairer.reboot(machine), repairer.reboot(machine)
    assert first == again and fake.resets == [X]
    repairer.replace(machine)
    assert fake.recreates == [X]


def test_a_refusal_is_raised_with_the_clouds_status_and_words_and_not_retried(gce):
    fake, proxy, repairer = gce()
    proxy.plan["instances.reset"] = ["client"]
    with pytest.raises(CloudError) as raised:
        repairer.reboot(repairer.machine(fake.node(X)))
    assert raised.value.status == 403
    assert str(raised.value) == (f"POST projects/ml-project/zones/us-central1-a/instances/{X}/reset: HTTP 403: "
                                 "injected client (forbidden)")
    assert fake.resets == [] and [c for c, _ in proxy.seen].count("instances.reset") == 1


def test_a_hung_api_is_given_up_after_each_tries_timeout(gce):
    fake, proxy, _ = gce()
    repairer = gcp.repairer({}, compute=f"{proxy.url}/compute/v1/", timeout=0.2, backoff=Backoff(0.01, 0.01))
    proxy.plan["instanceGroupManagers.get"] = ["always:hang"]
    machine = repairer.machine(fake.node(X))
    started = time.monotonic()
    with pytest.raises(CloudError, match="no answer"):
        repairer.pool_size(machine)
    assert time.monotonic() - started < 3.0


def test_ctrl_c_while_a_recreate_waits_stops_it_and_nothing_is_sent_again(gce):
    fake, proxy, repairer = gce()
    machine = repairer.machine(fake.node(X))
    proxy.plan["instanceGroupManagers.recreateInstances"] = ["interrupt"]
    with pytest.raises(KeyboardInterrupt):
        repairer.replace(machine)
    assert fake.recreates == [X]
    assert [c for c, _ in proxy.seen].count("instanceGroupManagers.recreateInstances") == 1


def test_the_token_comes_from_the_environment(gce, monkeypatch):
    fake, _, repairer = gce()
    assert repairer.machine(fake.node(X)) is not None
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.someone-else")
    stranger = gcp.repairer({}, compute=repairer.api.base)
    with pytest.raises(CloudError, match="HTTP 401: Request had invalid authentication credentials"):
        stranger.machine(fake.node(X))


def test_the_token_comes_from_gcloud_when_the_environment_has_none(gce, monkeypatch, tmp_path):
    fake, _, repairer = gce()
    gcloud = tmp_path / "gcloud"
    gcloud.write_text(f"#!/bin/sh\n[ \"$*\" = 'auth print-access-token' ] && echo {fake_gce.TOKEN}\n")
    gcloud.chmod(0o755)
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gcp.repairer({}, compute=repairer.api.base).machine(fake.node(X)).node == X


def test_no_token_at_all_is_one_line_saying_both_ways(monkeypatch, tmp_path):
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError) as raised:
        gcp.repairer({})
    assert str(raised.value) == ("no Google Cloud access token for --repair: set GOOGLE_OAUTH_ACCESS_TOKEN, or log in "
                                 "so that `gcloud auth print-access-token` prints one")


def test_the_gke_platform_finds_this_repairer():
    from gpuready_components import platforms

    assert platforms.get("gke").repair() is gcp
