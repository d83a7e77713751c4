"""The GPU agent pool on an Azure capacity reservation group: the pool names the group, a new cluster runs on a
user-assigned identity with Contributor on the group's resource group, and what cannot work is refused at preview."""

from __future__ import annotations

import datetime
import inspect
import re

import pytest
from azure.mgmt.containerservice import models

from gpuready_components.aks_gpu import CapacityReservationGroupArgs, ExistingClusterArgs, facts, reservation
from gpuready_components.aks_gpu.validation import check
from gpuready_components.capacity import RESERVATION_COUNT, RESERVATION_END, RESERVATIONS_ONLY
from gpuready_components.errors import ConfigError
from tests.conftest import one

from .helpers import CLUSTER, POOL, ROLE_ASSIGNMENT, args, build

IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
SUB = "11111111-2222-4333-8444-555555555555"
GROUP = (f"/subscriptions/{SUB}/resourceGroups/gpu-reservations/providers/Microsoft.Compute/"
         "capacityReservationGroups/a100-eastus")
RESERVED = {"availability_zones": ["1"],
            "reservation": CapacityReservationGroupArgs(group_id=GROUP, vm_size="Standard_NC24ads_A100_v4", count=2,
                                                        zones=["1"], end="2999-01-01")}


def _rest_names(model) -> set[str]:
    return {f._rest_name for f in model()._attr_to_rest_field.values()}


def test_the_pool_names_the_group_and_carries_its_stamps(render):
    rendering, _ = build(render, RESERVED)
    pool = one(rendering, POOL, "ml-gpu")
    assert pool.inputs["capacityReservationGroupID"] == GROUP
    assert pool.inputs["tags"][RESERVATION_COUNT] == "2"
    assert pool.inputs["tags"][RESERVATION_END] == "29990101t000000z"
    assert RESERVATIONS_ONLY not in pool.inputs["tags"]


def test_a_new_cluster_runs_on_a_user_assigned_identity_with_contributor_on_the_groups_resource_group(render):
    rendering, _ = build(render, RESERVED)
    (identity,) = rendering.of_type(IDENTITY)
    assert identity.inputs["resourceGroupName"] == "ml-rg" and identity.inputs["location"] == "eastus"
    cluster = one(rendering, CLUSTER, "ml")
    assert cluster.inputs["identity"]["type"] == "UserAssigned"
    (given,) = cluster.inputs["identity"]["userAssignedIdentities"]
    assert given.endswith("/resourceGroups/ml-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ml-identity")
    role = one(rendering, ROLE_ASSIGNMENT, "ml-reservation-contributor")
    assert role.inputs["scope"] == f"/subscriptions/{SUB}/resourceGroups/gpu-reservations"
    assert role.inputs["roleDefinitionId"] == (f"/subscriptions/{SUB}/providers/Microsoft.Authorization/"
                                               "roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c")
    assert role.inputs["principalId"] == identity.outputs["principalId"]
    assert role.inputs["principalType"] == "ServicePrincipal"
    # AKS uses the group through the identity's role: the pool is created after it.
    assert role.urn in one(rendering, POOL, "ml-gpu").dependencies


def test_without_a_reservation_nothing_changes(render):
    rendering, component = build(render)
    assert one(rendering, CLUSTER, "ml").inputs["identity"] == {"type": "SystemAssigned"}
    assert not rendering.of_type(IDENTITY)
    assert [r.name for r in rendering.of_type(ROLE_ASSIGNMENT)] == ["ml-deployer-admin"]
    pool = one(rendering, POOL, "ml-gpu")
    assert "capacityReservationGroupID" not in pool.inputs
    assert not any(key.endswith(".gpuready.io") for key in pool.inputs["tags"])
    assert getattr(component, "gpu_reservations", None) is None


def test_an_existing_cluster_pool_names_the_group_and_nothing_else_is_made(render):
    rendering, _ = build(render, RESERVED, cluster=None,
                         existing_cluster=ExistingClusterArgs(name="ml-aks", kubeconfig="apiVersion: v1"))
    assert one(rendering, POOL, "ml-gpu").inputs["capacityReservationGroupID"] == GROUP
    assert not rendering.of_type(IDENTITY) and not rendering.of_type(ROLE_ASSIGNMENT)


def test_the_reservation_is_told_beside_its_pool(render):
    """What the ``gpuReservations`` output holds (smoke reads it): the pool by its nodes' agentpool label."""
    _, component = build(render, RESERVED)
    assert component.gpu_reservations == [{"pool": "gpu", "kind": "capacity-reservation-group", "target": GROUP,
                                           "only": False, "end": "2999-01-01", "count": 2, "zone": "1",
                                           "nodeZones": ["1"]}]


def test_every_field_sent_is_in_the_azure_sdks_models(render):
    rendering, _ = build(render, RESERVED)
    pool = one(rendering, POOL, "ml-gpu")
    # The agent pool's REST property, on both of the SDK's agent pool models.
    for model in (models.AgentPoolManagedClusterAgentPoolProfileProperties, models.ManagedClusterAgentPoolProfile):
        assert "capacityReservationGroupID" in _rest_names(model)
    # The group id in the form the SDK documents for it ({placeholders} filled in).
    documented = re.search(r"'(/subscriptions/\{subscriptionId\}/[^']+capacityreservationgroups/[^']+)'",
                           models.ManagedClusterAgentPoolProfile.__doc__, re.IGNORECASE).group(1)
    example = re.sub(r"\{(\w+)\}", "x1", documented)
    assert re.fullmatch(facts.CAPACITY_RESERVATION_GROUP_ID, example, re.IGNORECASE)
    assert re.fullmatch(facts.CAPACITY_RESERVATION_GROUP_ID, pool.inputs["capacityReservationGroupID"], re.IGNORECASE)
    # The cluster's identity: the SDK's field names, type values, and the identity id in its documented key form.
    identity = one(rendering, CLUSTER, "ml").inputs["identity"]
    assert set(identity) <= _rest_names(models.ManagedClusterIdentity)
    assert {facts.IDENTITY_SYSTEM_ASSIGNED, facts.IDENTITY_USER_ASSIGNED} <= {t.value for t in
                                                                              models.ResourceIdentityType}
    key_form = re.search(r"'(/subscriptions/\{subscriptionId\}/[^']+userAssignedIdentities/\{identityName\})'",
                         models.ManagedClusterIdentity.__doc__).group(1)
    (given,) = identity["userAssignedIdentities"]
    assert re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(key_form)), given)


def test_the_role_assignment_and_identity_are_the_providers_args(render):
    """azure-mgmt-authorization is not in the environment: the role assignment is held to pulumi_azure_native's
    ``RoleAssignmentArgs`` (Azure's REST specification, generated) and its ``PrincipalType`` enum."""
    from pulumi_azure_native.authorization import PrincipalType, RoleAssignmentArgs
    from pulumi_azure_native.managedidentity import UserAssignedIdentityArgs

    def camel(name):
        head, *rest = name.split("_")
        return head + "".join(p.title() for p in rest)

    rendering, _ = build(render, RESERVED)
    role = one(rendering, ROLE_ASSIGNMENT, "ml-reservation-contributor")
    accepted = {camel(p) for p in inspect.signature(RoleAssignmentArgs.__init__).parameters if p != "self"}
    assert set(role.inputs) <= accepted, set(role.inputs) - accepted
    assert role.inputs["principalType"] in {t.value for t in PrincipalType}
    (identity,) = rendering.of_type(IDENTITY)
    accepted = {camel(p) for p in inspect.signature(UserAssignedIdentityArgs.__init__).parameters if p != "self"}
    assert set(identity.inputs) <= accepted, set(identity.inputs) - accepted


def _group(**changes):
    return CapacityReservationGroupArgs(**{"group_id": GROUP, **changes})


@pytest.mark.parametrize("pool, field, words", [
    ({**RESERVED, "spot": True}, "node_pool.spot", "Spot VMs cannot use"),
    ({"reservation": _group(only=True)}, "node_pool.reservation.only", "overallocation"),
    ({"reservation": _group(vm_size="Standard_NC40ads_H100_v5")}, "node_pool.vm_size",
     "holds Standard_NC40ads_H100_v5 only"),
    ({"reservation": _group(count=0)}, "node_pool.reservation.count", "1 VM or more"),
    ({"reservation": _group(zones=["4"])}, "node_pool.reservation.zones", "not Azure availability zones"),
    ({"reservation": _group(zones=["1"])}, "node_pool.availability_zones", "zone(s) 1"),
    ({"availability_zones": ["1", "2"], "reservation": _group(zones=["1"])}, "node_pool.availability_zones",
     "VMs elsewhere"),
    ({"reservation": _group(group_id="a100-eastus")}, "node_pool.reservation.group_id", "resource id"),
    ({"reservation": _group(group_id=GROUP.replace("Microsoft.Compute", "Microsoft.Network"))},
     "node_pool.reservation.group_id", "resource id"),
    ({"reservation": _group(end="2020-01-01")}, "node_pool.reservation.end", "has ended"),
    ({"reservation": _group(end="soon")}, "node_pool.reservation.end", "not an ISO date"),
    ({"reservation": _group(start="2999-02-01", end="2999-01-01")}, "node_pool.reservation.start",
     "not before the end"),
])
def test_what_azure_would_not_do_is_refused_in_one_line(pool, field, words):
    with pytest.raises(ConfigError) as error:
        check(args(pool))
    assert error.value.field == field
    assert words in str(error.value) and error.value.fix
    assert "\n" not in str(error.value)


def test_more_nodes_than_reserved_is_allowed_the_rest_come_without_the_guarantee():
    check(args({**RESERVED, "max_count": 5}))
    check(args({"reservation": _group(vm_size="standard_nc24ads_a100_v4")}))  # Azure's sizes are case-insensitive


def test_an_end_is_read_against_the_clock():
    res = _group(end="2030-01-01T00:00:00Z")
    reservation.check(res, vm_size="x", spot=False, zones=(), now=datetime.datetime(2029, 12, 31,
                                                                                     tzinfo=datetime.timezone.utc))
    with pytest.raises(ConfigError, match="has ended"):
        reservation.check(res, vm_size="x", spot=False, zones=(), now=datetime.datetime(2030, 1, 1,
                                                                                         tzinfo=datetime.timezone.utc))


def test_the_scope_and_role_come_from_the_groups_id():
    assert reservation.scope(GROUP) == f"/subscriptions/{SUB}/resourceGroups/gpu-reservations"
    assert reservation.contributor_role(GROUP).startswith(f"/subscriptions/{SUB}/providers/")


_ZONES = "the reservations are in zone(s) 1, 2: VMs elsewhere do not use them. Fix: set availability_zones to ['1', '2'] " \
         "(or some of them)"
_GROUP_ID = ("not a capacity reservation group's resource id. Fix: give /subscriptions/SUB/resourceGroups/RG/providers/"
             "Microsoft.Compute/capacityReservationGroups/NAME (az capacity reservation group show --query id -o tsv)")


@pytest.mark.parametrize("pool, line", [
    ({**RESERVED, "spot": True}, "node_pool.spot = True: Spot VMs cannot use a capacity reservation group. Fix: set "
                                 "spot false (Regular priority), or remove node_pool.reservation"),
    ({"reservation": _group(only=True)}, "node_pool.reservation.only = True: Azure deploys a group's VMs past its "
     "reserved count without the reservation's guarantee (overallocation), and no agent pool setting stops that. Fix: "
     "set only false; cap max_count at the reserved count to stay within it"),
    ({"reservation": _group(vm_size="Standard_NC40ads_H100_v5")}, "node_pool.vm_size = 'Standard_NC24ads_A100_v4': the "
     "capacity reservation group holds Standard_NC40ads_H100_v5 only. Fix: set vm_size to Standard_NC40ads_H100_v5"),
    ({"reservation": _group(count=0)}, "node_pool.reservation.count = 0: a capacity reservation holds 1 VM or more. "
                                       "Fix: set the reserved VM count, or leave it out"),
    ({"reservation": _group(zones=["4", "1", "0"])}, "node_pool.reservation.zones = ['4', '0']: not Azure availability "
                                                     "zones. Fix: use 1, 2 and/or 3"),
    ({"reservation": _group(zones=["1", "2"])}, f"node_pool.availability_zones = []: {_ZONES}"),
    ({"availability_zones": ["1", "3"], "reservation": _group(zones=["1", "2"])},
     f"node_pool.availability_zones = ['1', '3']: {_ZONES}"),
    ({"availability_zones": ["3", "2"], "reservation": _group(zones=["1", "2"])},
     f"node_pool.availability_zones = ['3', '2']: {_ZONES}"),
    ({"reservation": _group(group_id="a100-eastus")}, f"node_pool.reservation.group_id = 'a100-eastus': {_GROUP_ID}"),
    ({"reservation": _group(group_id=None)}, f"node_pool.reservation.group_id = None: {_GROUP_ID}"),
    ({"reservation": _group(group_id=GROUP + "/x")}, f"node_pool.reservation.group_id = '{GROUP}/x': {_GROUP_ID}"),
])
def test_each_refusal_is_one_whole_line_naming_the_value_and_the_fix(pool, line):
    with pytest.raises(ConfigError) as error:
        check(args(pool))
    assert str(error.value) == line


@pytest.mark.parametrize("pool", [
    {"reservation": _group(count=1, vm_size="Standard_NC24ads_A100_v4")},  # one VM reserved, the size as the pool's
    {"availability_zones": ["2", "1"], "reservation": _group(zones=["1", "2"])},  # every zone of the reservation
    {"availability_zones": ["2"], "reservation": _group(zones=["1", "2"])},  # some of them
    {"availability_zones": ["3"], "reservation": _group(zones=["1", "2", "3"])},
    {"availability_zones": ["1"], "reservation": _group(group_id=GROUP.upper())},  # Azure's ids are case-insensitive
])
def test_a_group_at_each_limit_is_accepted(pool):
    check(args(pool))


def test_the_reservation_is_told_as_given_with_a_zone_only_when_it_is_in_one():
    assert reservation.output(_group()) == {"kind": "capacity-reservation-group", "target": GROUP, "only": False}
    assert reservation.output(_group(zones=["1", "2"], count=2, start="2999-01-01", end="2999-02-01"), ["2"]) == {
        "kind": "capacity-reservation-group", "target": GROUP, "only": False, "start": "2999-01-01",
        "end": "2999-02-01", "count": 2, "nodeZones": ["2"]}
    assert reservation.output(_group(zones=["3"]), ["3"]) == {
        "kind": "capacity-reservation-group", "target": GROUP, "only": False, "zone": "3", "nodeZones": ["3"]}
    assert reservation.output(_group(zones=["3"])) == {
        "kind": "capacity-reservation-group", "target": GROUP, "only": False, "zone": "3", "nodeZones": []}


def test_the_contributor_role_is_azures_built_in_one_in_the_groups_subscription():
    assert reservation.contributor_role(GROUP) == (f"/subscriptions/{SUB}/providers/Microsoft.Authorization/"
                                                   "roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c")
    assert reservation.stamps(None) == {}
    assert reservation.stamps(_group(count=2, start="2999-01-01T11:30:00Z", end="2999-02-01")) == {
        "reservation-start.gpuready.io": "29990101t113000z", "reservation-end.gpuready.io": "29990201t000000z",
        "reservation-count.gpuready.io": "2"}
