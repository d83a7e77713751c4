"""GPU node pools on a Compute Engine reservation and on flex-start VMs (queued provisioning through Kueue's
ProvisioningRequest admission check), each field against Google's container v1 discovery document, the pulumi_gcp
args, and each Kueue object against Kueue 0.19.2's CRDs."""

from __future__ import annotations

import datetime
import inspect
import json
from importlib import resources

import pytest

from gpuready.resources import gcp as readers
from gpuready.resources.base import FLEX_START, ON_DEMAND, RESERVED
from gpuready_components.errors import ConfigError
from gpuready_components.gke_gpu import FlexStartArgs, ReservationArgs, facts, reservation
from gpuready_components.gke_gpu.validation import check
from gpuready_components.k8s_gpu import facts as k8s_facts
from gpuready_components.teams import TeamArgs
from tests.components.k8s_gpu import kueue_schemas
from tests.conftest import one

from .helpers import NODE_POOL, args, build

KUEUE = f"kubernetes:{k8s_facts.KUEUE_API}:"
RESERVED_POOL = {"machine_type": "a3-highgpu-8g", "node_locations": ("us-central1-a",), "max_nodes": 2,
                 "reservation": ReservationArgs(affinity="specific", name="h100-block", only=True,
                                                machine_type="a3-highgpu-8g", zone="us-central1-a", count=2,
                                                start="2026-01-01", end="2999-01-01")}
FLEX_POOL = {"machine_type": "a3-highgpu-8g", "max_nodes": 4,
             "flex_start": FlexStartArgs(max_run_duration_seconds=86400)}
TEAMS = (TeamArgs("research", 16),)


@pytest.fixture(scope="module")
def container():
    path = resources.files("googleapiclient").joinpath("discovery_cache/documents/container.v1.json")
    return json.loads(path.read_text())["schemas"]


def _pool(rendering):
    return one(rendering, NODE_POOL, "ml-gpu")


def test_a_specific_reservation_pool_names_it_and_reads_as_reserved_only(render):
    pool = _pool(build(render, RESERVED_POOL)[0])
    config = pool.inputs["nodeConfig"]
    assert config["reservationAffinity"] == {"consumeReservationType": "SPECIFIC_RESERVATION",
                                             "key": "compute.googleapis.com/reservation-name",
                                             "values": ["h100-block"]}
    source = readers.GkeNodePool(pool.inputs).source()
    assert source.kinds == (RESERVED,) and source.only and not source.falls_back
    assert (source.reservation.target, source.reservation.count) == ("h100-block", 2)
    assert (source.reservation.start, source.reservation.end) == ("2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z")
    assert "flexStart" not in config and "queuedProvisioning" not in pool.inputs


def test_any_reservation_falls_back_to_on_demand_and_an_unset_one_is_on_demand(render):
    pool = _pool(build(render, {"reservation": ReservationArgs(affinity="any")})[0])
    assert pool.inputs["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "ANY_RESERVATION"}
    source = readers.GkeNodePool(pool.inputs).source()
    assert source.kinds == (RESERVED, ON_DEMAND) and str(source.reservation) == "reservation any"
    plain = _pool(build(render)[0])
    assert "reservationAffinity" not in plain.inputs["nodeConfig"]
    assert readers.GkeNodePool(plain.inputs).source().kinds == (ON_DEMAND,)


def test_a_queued_flex_start_pool_waits_in_kueue_for_a_provisioning_request(render):
    rendering, gke = build(render, FLEX_POOL, teams=TEAMS)
    pool = _pool(rendering)
    config = pool.inputs["nodeConfig"]
    assert config["flexStart"] is True and config["maxRunDuration"] == "86400s"
    assert config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool.inputs["queuedProvisioning"] == {"enabled": True}
    assert pool.inputs["management"]["autoRepair"] is False
    assert pool.inputs["autoscaling"]["totalMinNodeCount"] == 0 and pool.inputs["initialNodeCount"] == 0
    assert "nodeCount" not in pool.inputs and "spot" not in config
    reader = readers.GkeNodePool(pool.inputs)
    assert reader.source().kinds == (FLEX_START,) and facts.QUEUED_TAINT in reader.taints

    (config_obj,) = rendering.of_type(KUEUE + "ProvisioningRequestConfig")
    (check_obj,) = rendering.of_type(KUEUE + "AdmissionCheck")
    (queue,) = [q for q in rendering.of_type(KUEUE + "ClusterQueue") if "gpuready.io/role" not in
                q.inputs["metadata"]["labels"]]
    (flavor,) = rendering.of_type(KUEUE + "ResourceFlavor")
    assert config_obj.inputs["spec"] == {"provisioningClassName": "queued-provisioning.gke.io",
                                         "managedResources": ["nvidia.com/gpu"],
                                         "parameters": {"maxRunDurationSeconds": "86400"}}
    assert check_obj.inputs["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request", "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config_obj.inputs["metadata"]["name"]}}
    assert queue.inputs["spec"]["admissionChecksStrategy"] == {"admissionChecks": [
        {"name": check_obj.inputs["metadata"]["name"], "onFlavors": [flavor.inputs["metadata"]["name"]]}]}
    # Kueue puts the flavor's labels and tolerations on the admitted pods: they select the queued nodes and
    # tolerate GKE's taint on them.
    assert flavor.inputs["spec"]["nodeLabels"].items() <= reader.node_labels.items()
    assert flavor.inputs["spec"]["nodeLabels"][facts.QUEUED_LABEL] == "true"
    assert {(t["key"], t["effect"]) for t in flavor.inputs["spec"]["tolerations"]} >= {
        ("cloud.google.com/gke-queued", "NoSchedule"), ("nvidia.com/gpu", "NoSchedule")}
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in gke.gpu_node_taints
    for obj in (config_obj, check_obj, queue, flavor):
        kueue_schemas.validate({**obj.inputs, "apiVersion": k8s_facts.KUEUE_API, "kind": obj.type.rsplit(":", 1)[1]})


def test_a_flex_start_pool_without_queueing_takes_no_admission_check(render):
    rendering, _ = build(render, {**FLEX_POOL, "flex_start": FlexStartArgs(queued=False)}, teams=TEAMS)
    pool = _pool(rendering)
    assert pool.inputs["nodeConfig"]["flexStart"] is True and "queuedProvisioning" not in pool.inputs
    assert "maxRunDuration" not in pool.inputs["nodeConfig"]
    assert readers.GkeNodePool(pool.inputs).node_labels[facts.FLEX_START_LABEL] == "true"
    assert not rendering.of_type(KUEUE + "AdmissionCheck")
    assert "admissionChecksStrategy" not in rendering.of_type(KUEUE + "ClusterQueue")[0].inputs["spec"]


def test_every_field_and_value_is_in_googles_container_v1_api(render, container):
    node_config, node_pool = container["NodeConfig"]["properties"], container["NodePool"]["properties"]
    affinity = container["ReservationAffinity"]["properties"]
    assert set(facts.RESERVATION_AFFINITY.values()) <= set(affinity["consumeReservationType"]["enum"])
    assert f'"{facts.RESERVATION_NAME_KEY}"' in affinity["key"]["description"]
    assert node_config["flexStart"]["type"] == "boolean"
    assert node_config["maxRunDuration"]["format"] == "google-duration"
    assert node_config["reservationAffinity"]["$ref"] == "ReservationAffinity"
    assert node_pool["queuedProvisioning"]["$ref"] == "QueuedProvisioning"
    assert container["QueuedProvisioning"]["properties"]["enabled"]["type"] == "boolean"
    for pool in (_pool(build(render, RESERVED_POOL)[0]), _pool(build(render, FLEX_POOL, teams=TEAMS)[0])):
        config = pool.inputs["nodeConfig"]
        assert set(config["reservationAffinity"]) <= set(affinity)
        assert set(config) - {"guestAccelerators"} <= set(node_config)
        assert set(pool.inputs.get("queuedProvisioning") or {}) <= set(container["QueuedProvisioning"]["properties"])


def test_the_reservation_name_pattern_is_computes(container):
    path = resources.files("googleapiclient").joinpath("discovery_cache/documents/compute.v1.json")
    compute = json.loads(path.read_text())["schemas"]
    assert compute["Reservation"]["properties"]["name"]["pattern"] == facts.RESERVATION_NAME


def test_pulumi_gcp_takes_each_field():
    from pulumi_gcp import container as gcp

    assert {"reservation_affinity", "flex_start", "max_run_duration"} <= set(
        inspect.signature(gcp.NodePoolNodeConfigArgs.__init__).parameters)
    assert "queued_provisioning" in inspect.signature(gcp.NodePool._internal_init).parameters
    assert {"consume_reservation_type", "key", "values"} <= set(
        inspect.signature(gcp.NodePoolNodeConfigReservationAffinityArgs.__init__).parameters)
    assert "enabled" in inspect.signature(gcp.NodePoolQueuedProvisioningArgs.__init__).parameters


def test_kueues_chart_lets_its_controller_make_provisioning_requests_with_no_gate_to_set():
    from gpuready_components.k8s_gpu import kueue

    rendered = kueue_schemas.render(kueue.chart_values({facts.NODE_POOL_LABEL: "system"}))
    rules = [rule for o in rendered if o["kind"] == "ClusterRole" for rule in o.get("rules") or []]
    assert any("autoscaling.x-k8s.io" in r.get("apiGroups", []) and "provisioningrequests" in r.get("resources", [])
               and "create" in r.get("verbs", []) for r in rules)
    (manager,) = [o for o in rendered if o["kind"] == "Deployment"]
    args = manager["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith("--feature-gates")]  # Kueue's defaults: the check needs no gate


def _res(**changes):
    return ReservationArgs(**{**dict(affinity="specific", name="h100-block"), **changes})


@pytest.mark.parametrize("pool, overrides, line", [
    ({"reservation": _res(affinity="sometimes")}, {},
     "node_pool.reservation.affinity = 'sometimes': not a reservation affinity. Fix: use specific, any, "
     'none'),
    ({"reservation": _res(name=None)}, {},
     'node_pool.reservation.name = None: specific consumes the reservation named, by its name. Fix: give '
     'the name `gcloud compute reservations list` shows, or projects/PROJECT/reservations/NAME '
     '(NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK for one sub-block)'),
    ({"reservation": _res(name="H100 Block")}, {},
     "node_pool.reservation.name = 'H100 Block': specific consumes the reservation named, by its name. "
     'Fix: give the name `gcloud compute reservations list` shows, or projects/PROJECT/reservations/NAME '
     '(NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK for one sub-block)'),
    ({"reservation": _res(affinity="any")}, {},
     "node_pool.reservation.name = 'h100-block': affinity any names no reservation. Fix: use affinity "
     'specific, or drop name'),
    ({"reservation": ReservationArgs(affinity="any", only=True)}, {},
     'node_pool.reservation.only = True: affinity any launches on-demand nodes when no reservation has '
     "room. Fix: use affinity specific with the reservation's name, or drop only"),
    ({"reservation": _res(), "spot": True}, {},
     "node_pool.spot = True: Spot VMs consume no reservation. Fix: set spot false on a reservation's "
     'pool, or use affinity none'),
    ({"reservation": _res(machine_type="a3-highgpu-8g")}, {},
     "node_pool.machine_type = 'g2-standard-8': the reservation holds a3-highgpu-8g VMs. Fix: use "
     'machine_type a3-highgpu-8g'),
    ({"reservation": _res(zone="us-central1-b"), "node_locations": ("us-central1-a",)}, {},
     "node_pool.node_locations = ['us-central1-a']: the reservation is in us-central1-b, and nodes "
     'elsewhere never consume it. Fix: set node_locations [us-central1-b]'),
    ({"reservation": _res(zone="us-central1-a")}, {},
     'node_pool.node_locations = []: the reservation is in us-central1-a, and nodes elsewhere never '
     'consume it. Fix: set node_locations [us-central1-a]'),
    ({"reservation": _res(zone="us-central1"), "node_locations": ("us-central1-a",)}, {},
     "node_pool.reservation.zone = 'us-central1': not a zone: a reservation is in one zone "
     '(REGION-LETTER). Fix: give the zone `gcloud compute reservations list` shows for it, e.g. '
     'us-central1-a of node_locations'),
    ({"reservation": _res(zone="us-east1-b"), "node_locations": ("us-central1-a",)}, {},
     "node_pool.reservation.zone = 'us-east1-b': in us-east1, and the nodes of a cluster in us-central1 "
     'are only in zones of us-central1. Fix: set `location` to us-east1 and node_locations to '
     '[us-east1-b] (the cluster beside the reservation), or name a reservation of us-central1'),
    ({"reservation": _res(zone="us-east1-b")}, {"location": "us-central1-a"},
     "node_pool.reservation.zone = 'us-east1-b': in us-east1, and the nodes of a cluster in us-central1-a "
     'are only in zones of us-central1. Fix: set `location` to us-east1 and node_locations to '
     '[us-east1-b] (the cluster beside the reservation), or name a reservation of us-central1'),
    ({"reservation": _res(count=2), "max_nodes": 3}, {},
     'node_pool.max_nodes = 3: the reservation holds 2 VM(s), so the nodes past them are never created. '
     'Fix: set max_nodes to 2 or less'),
    ({"reservation": _res(count=0)}, {},
     'node_pool.reservation.count = 0: a reservation holds 1 VM or more. Fix: set the reserved VM count, '
     'or leave it out'),
    ({"reservation": _res(end="2020-01-01")}, {},
     "node_pool.reservation.end = '2020-01-01': the reservation has ended. Fix: name a current "
     'reservation, or remove node_pool.reservation'),
    ({"reservation": _res(end="soon")}, {},
     "node_pool.reservation.end = 'soon': not an ISO date. Fix: write it like 2026-12-31 or "
     '2026-12-31T11:30:00Z'),
    ({"reservation": _res(start="2999-02-01", end="2999-01-01")}, {},
     "node_pool.reservation.start = '2999-02-01': it is not before the end 2999-01-01. Fix: copy start "
     'and end from the reservation as the cloud describes it'),
    ({"flex_start": FlexStartArgs(), "spot": True}, {"teams": TEAMS},
     'node_pool.spot = True: flex-start is its own provisioning model, not Spot. Fix: set spot false, or '
     'drop flex_start'),
    ({"flex_start": FlexStartArgs(), "reservation": _res()}, {"teams": TEAMS},
     "node_pool.reservation.affinity = 'specific': a flex-start pool consumes no reservation (reservation "
     'affinity none). Fix: drop reservation, or drop flex_start'),
    ({"flex_start": FlexStartArgs(), "min_nodes": 1}, {"teams": TEAMS},
     'node_pool.min_nodes = 1: a flex-start pool starts at 0 nodes and GKE adds them when it obtains '
     'them. Fix: set min_nodes 0'),
    ({"flex_start": FlexStartArgs(max_run_duration_seconds=8 * 86400)}, {"teams": TEAMS},
     'node_pool.flex_start.max_run_duration_seconds = 691200: GKE runs a flex-start node 1 to 604800 '
     'seconds (seven days). Fix: use e.g. 86400 (a day)'),
    ({"flex_start": FlexStartArgs(max_run_duration_seconds=0)}, {"teams": TEAMS},
     'node_pool.flex_start.max_run_duration_seconds = 0: GKE runs a flex-start node 1 to 604800 seconds '
     '(seven days). Fix: use e.g. 86400 (a day)'),
    ({"flex_start": FlexStartArgs()}, {},
     "node_pool.flex_start.queued = True: a queued pool's nodes come only for a ProvisioningRequest, and "
     'with no teams no Kueue is installed to make one. Fix: add teams (their jobs then wait in Kueue '
     'until the nodes come), or set queued false'),
])
def test_combinations_gke_refuses_are_refused_in_one_line(pool, overrides, line):
    """Each refusal whole: the stack key, the value, what is wrong and a fix that works."""
    with pytest.raises(ConfigError) as error:
        check(args(pool, **overrides), "ml-project")
    assert str(error.value) == line


@pytest.mark.parametrize("pool, overrides", [
    ({"reservation": _res(count=3)}, {}),  # no zone or machine type known: nothing to check them against
    ({"reservation": ReservationArgs(affinity="any", count=1)}, {}),  # past the reservation: on-demand
    ({"reservation": ReservationArgs(affinity="none")}, {}),
    ({"flex_start": FlexStartArgs(queued=False)}, {}),  # flex-start VMs the autoscaler asks for: no Kueue needed
    ({"flex_start": FlexStartArgs(), "reservation": ReservationArgs(affinity="none")}, {"teams": TEAMS}),
    ({"reservation": _res(zone="us-central1-a")}, {"location": "us-central1-a"}),  # a zonal cluster's zone
    ({"flex_start": FlexStartArgs(max_run_duration_seconds=1)}, {"teams": TEAMS}),  # GKE's shortest run
    ({"flex_start": FlexStartArgs(max_run_duration_seconds=7 * 86400)}, {"teams": TEAMS}),  # and its longest
])
def test_what_gke_takes_passes(pool, overrides):
    check(args(pool, **overrides), "ml-project")


def test_an_end_is_checked_against_now():
    res = _res(end="2030-01-01T00:00:00Z")
    before = datetime.datetime(2029, 12, 31, tzinfo=datetime.timezone.utc)
    reservation.check_reservation(res, machine_type="g2-standard-8", node_locations=(), location="us-central1",
                                  max_nodes=1, spot=False, now=before)
    with pytest.raises(ConfigError, match="has ended"):
        reservation.check_reservation(res, machine_type="g2-standard-8", node_locations=(), location="us-central1",
                                      max_nodes=1, spot=False, now=before + datetime.timedelta(days=2))


@pytest.mark.parametrize("pool, overrides, fix", [
    ({"reservation": _res(zone="us-central1"), "node_locations": ("us-central1-c",)}, {},
     "give the zone `gcloud compute reservations list` shows for it, e.g. us-central1-c of node_locations"),
    ({"reservation": _res(zone="us-central1")}, {},
     "give the zone `gcloud compute reservations list` shows for it, a zone of us-central1"),
    ({"reservation": _res(zone="us-east1-b")}, {"location": "us-central1-f"},
     "set `location` to us-east1 and node_locations to [us-east1-b] (the cluster beside the reservation), or name a "
     "reservation of us-central1"),
])
def test_a_reservation_zone_mistake_says_which_zone_would_do(pool, overrides, fix):
    with pytest.raises(ConfigError) as error:
        check(args(pool, **overrides), "ml-project")
    assert (error.value.field, error.value.fix) == ("node_pool.reservation.zone", fix)


@pytest.mark.parametrize("affinity, refused", [("specific", True), ("any", True), ("none", False)])
def test_spot_vms_consume_no_reservation_whatever_the_affinity(affinity, refused):
    res = _res() if affinity == "specific" else ReservationArgs(affinity=affinity)
    pool = {"reservation": res, "spot": True}
    if refused:
        with pytest.raises(ConfigError) as error:
            check(args(pool), "ml-project")
        assert error.value.field == "node_pool.spot" and "consume no reservation" in str(error.value)
    else:
        check(args(pool), "ml-project")


RACK = "gb200/reservationBlocks/block-1/reservationSubBlocks/sub-block-3"


@pytest.mark.parametrize("name", [RACK, f"projects/owner-project/reservations/{RACK}"])
def test_an_nvl72_pool_consumes_one_sub_block_of_at_most_one_domain(name):
    from gpuready_components.gke_gpu import reservation

    reservation.check_reservation(ReservationArgs(affinity="specific", name=name), machine_type="a4x-highgpu-4g",
                                  node_locations=["us-central1-a"], location="us-central1", max_nodes=18, spot=False)


@pytest.mark.parametrize("name, max_nodes, line", [
    ("gb200", 18, "node_pool.reservation.name = 'gb200': a4x-highgpu-4g nodes share NVLink only within one sub-block "
     "of the reservation (one NVL72 domain of 18 VMs). Fix: name the sub-block: "
     "gb200/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK (`gcloud compute reservations sub-blocks list`)"),
    ("gb200/reservationBlocks/block-1", 18, "node_pool.reservation.name = 'gb200/reservationBlocks/block-1': specific "
     "consumes the reservation named, by its name. Fix: give the name `gcloud compute reservations list` shows, or "
     "projects/PROJECT/reservations/NAME (NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK for one "
     "sub-block)"),
    (RACK, 19, "node_pool.max_nodes = 19: a sub-block is one NVL72 domain of 18 a4x-highgpu-4g VMs. Fix: set "
     "max_nodes to 18 or less (a pool per sub-block for more)"),
])
def test_an_nvl72_pool_beyond_one_sub_block_is_refused_in_one_line_with_its_fix(name, max_nodes, line):
    with pytest.raises(ConfigError) as error:
        reservation.check_reservation(ReservationArgs(affinity="specific", name=name), machine_type="a4x-highgpu-4g",
                                      node_locations=["us-central1-a"], location="us-central1", max_nodes=max_nodes,
                                      spot=False)
    assert str(error.value) == line
