"""A location mistake in a GKE stack is refused at preview (component construction) in one line naming the key, the
value and a fix; followed as written, the fix plans. GKE zones are checked by their names (a zone is its region's name
and a letter): no list of zones exists offline, so a zone's existence is left to ``pulumi up``."""

from __future__ import annotations

import pytest

from tests.stacks.test_config_messages import _plan

RESERVATION = {"affinity": "specific", "name": "my-h100-reservation", "only": True, "machineType": "a3-highgpu-8g",
               "count": 2}

# (mistake, the one line plan prints, the fix that line suggests, as config changes)
CASES = [
    pytest.param(
        {"gpuready:reservation": {**RESERVATION, "zone": "us-central1"}},
        "gpuready:reservation.zone = 'us-central1': not a zone: a reservation is in one zone (REGION-LETTER). Fix: "
        "give the zone `gcloud compute reservations list` shows for it, e.g. us-central1-a of gpuready:nodeLocations",
        {"gpuready:reservation": {**RESERVATION, "zone": "us-central1-a"}}, id="a region for the zone"),
    pytest.param(
        {"gpuready:reservation": {**RESERVATION, "zone": "us-east1-b"}},
        "gpuready:reservation.zone = 'us-east1-b': in us-east1, and the nodes of a cluster in us-central1 are only in "
        "zones of us-central1. Fix: set gpuready:location to us-east1 and gpuready:nodeLocations to [us-east1-b] (the "
        "cluster beside the reservation), or name a reservation of us-central1",
        {"gpuready:reservation": {**RESERVATION, "zone": "us-east1-b"}, "gpuready:location": "us-east1",
         "gpuready:nodeLocations": ["us-east1-b"]}, id="a zone of another region"),
    pytest.param(
        {"gpuready:reservation": {**RESERVATION, "zone": "us-east1-b"}, "gpuready:nodeLocations": ["us-east1-b"]},
        "gpuready:nodeLocations = ['us-east1-b']: us-east1-b not in us-central1, and GKE puts the nodes of a cluster "
        "in us-central1 only in zones of us-central1. Fix: set gpuready:location to us-east1 (where the zones are), "
        "or list zones of us-central1 only",
        {"gpuready:reservation": {**RESERVATION, "zone": "us-east1-b"}, "gpuready:nodeLocations": ["us-east1-b"],
         "gpuready:location": "us-east1"}, id="node locations outside the region"),
    pytest.param(
        {"gpuready:reservation": {**RESERVATION, "zone": "us-central1-b"}},
        "gpuready:nodeLocations = ['us-central1-a']: the reservation is in us-central1-b, and nodes elsewhere never "
        "consume it. Fix: set gpuready:nodeLocations [us-central1-b]",
        {"gpuready:reservation": {**RESERVATION, "zone": "us-central1-b"}, "gpuready:nodeLocations": ["us-central1-b"]},
        id="a zone the pool is not in"),
]

SUBNETWORK = "projects/p/regions/europe-west4/subnetworks/s"


def test_a_subnetwork_of_another_region_is_refused_with_a_fix_that_plans(tmp_path, capsys):
    network = {"gpuready:network": {"network": "ml-vpc", "subnetwork": SUBNETWORK}}
    code, _ = _plan(tmp_path, "gke", network)
    assert (code, capsys.readouterr().err) == (
        2, f"gpuready: plan: gpuready:network.subnetwork = '{SUBNETWORK}': a subnetwork of europe-west4: GKE puts the "
           "nodes of a cluster in us-central1 only in subnetworks of that region. Fix: give a subnetwork of "
           "us-central1, or set gpuready:location to europe-west4 (and gpuready:nodeLocations to zones of it)\n")
    code, _ = _plan(tmp_path, "gke", {**network, "gpuready:location": "europe-west4",
                                      "gpuready:nodeLocations": ["europe-west4-a"]})
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("mistake, line, fixed", CASES)
def test_a_location_mistake_is_refused_in_one_line_whose_fix_plans(tmp_path, capsys, mistake, line, fixed):
    code, _ = _plan(tmp_path, "gke-reservation", mistake)
    assert (code, capsys.readouterr().err) == (2, f"gpuready: plan: {line}\n")
    code, _ = _plan(tmp_path, "gke-reservation", fixed)
    assert code == 0, capsys.readouterr().err


def test_node_locations_of_several_other_regions_are_refused_without_a_single_move(tmp_path, capsys):
    code, _ = _plan(tmp_path, "gke", {"gpuready:nodeLocations": ["us-central1-a", "us-east1-b", "europe-west4-a"]})
    assert (code, capsys.readouterr().err) == (
        2, "gpuready: plan: gpuready:nodeLocations = ['us-central1-a', 'us-east1-b', 'europe-west4-a']: us-east1-b, "
           "europe-west4-a not in us-central1, and GKE puts the nodes of a cluster in us-central1 only in zones of "
           "us-central1. Fix: list zones of us-central1 only\n")


@pytest.mark.parametrize("stack, line", [
    ("gke-reservation", "  gke-gpu: reservation zone us-central1-a checked offline by name against the pool's zones "
                        "(us-central1-a); that the reservation is in it is not read before pulumi up"),
    ("aks-reservation", "  gpu: reservation zone 1 checked offline by name against the pool's zones (1); that the "
                        "reservation is in it is not read before pulumi up"),
])
def test_the_plan_says_what_was_checked_of_a_zone_where_preview_reads_nothing(tmp_path, capsys, stack, line):
    """GKE and AKS previews read no subnet and no reservation: the plan claims no such read."""
    code, _ = _plan(tmp_path, stack, {})
    text = capsys.readouterr().out
    assert code == 0 and line in text.splitlines() and "preview reads" not in text
