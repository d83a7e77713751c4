"""The readers of the teams' queues over what the engine receives: Kueue objects built as pulumi_kubernetes'
CustomResource and a Batch fair-share policy built with pulumi_aws, rendered under the project's mocks; each Kueue
object is checked against Kueue v0.19.2's own CRD, and each quantity against the grammar its CRD fields carry."""

from __future__ import annotations

import re
from decimal import Decimal

import jsonschema
import pytest
import yaml

from gpuready.resources import aws, kubernetes, quantity, queues, read
from gpuready.resources.scaling import from_rendering
from tests.conftest import DATA
from tests.gpuready.queue_programs import FLAVORS, POOLS, TEAMS, program
from tests.gpuready.smoke import test_kubernetes_multinode as strict

CRDS = DATA / "kueue-0.19.2-crds"
KINDS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "Cohort": "cohorts",
         "LocalQueue": "localqueues", "WorkloadPriorityClass": "workloadpriorityclasses"}


def _crd(kind: str) -> dict:
    return yaml.load((CRDS / f"kueue.x-k8s.io_{KINDS[kind]}.yaml").read_text(), Loader=yaml.CSafeLoader)


def _schema(kind: str) -> dict:
    """The strict schema of the version the readers read (v1beta2, the one Kueue stores)."""
    (version,) = [v for v in _crd(kind)["spec"]["versions"] if v.get("storage")]
    assert version["name"] == "v1beta2"
    return strict._strict(version["schema"]["openAPIV3Schema"])


def _quantity_pattern() -> re.Pattern:
    """The quantity pattern of ClusterQueue.spec.resourceGroups[].flavors[].resources[].nominalQuota."""
    (version,) = [v for v in _crd("ClusterQueue")["spec"]["versions"] if v.get("storage")]
    groups = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["resourceGroups"]
    resource = groups["items"]["properties"]["flavors"]["items"]["properties"]["resources"]["items"]
    return re.compile(resource["properties"]["nominalQuota"]["pattern"])


@pytest.fixture(scope="module")
def rendered():
    from gpuready.plan.render import run

    return run(program(batch={"research": 0.5, "inference": 1.0}), project="queues", stack="test",
               config={"aws:region": "us-east-1"})


VALID = {"8": 8, "96": 96, "512Gi": 512 * 1024 ** 3, "500m": Decimal("0.5"), "1.5": Decimal("1.5"), "1e3": 1000,
         "2k": 2000, "+3": 3, ".5": Decimal("0.5"), "1Ki": 1024, "4E-2": Decimal("0.04")}
INVALID = ["8 Gi", "Gi", "1.5.2", "8gb", "", "1e", "0x10", "1E1.5"]


def test_quantities_are_read_by_the_grammar_the_crds_check():
    pattern = _quantity_pattern()
    for text, amount in VALID.items():
        assert pattern.match(text), text  # the API server accepts it
        assert quantity.parse(text) == amount, text
    for text in INVALID:
        if text != "1E1.5":  # the CRD pattern allows a fractional exponent; apimachinery's parser refuses it
            assert not pattern.match(text), text
        with pytest.raises(ValueError, match="not a Kubernetes quantity"):
            quantity.parse(text)
    assert quantity.parse(8.0) == 8 and quantity.parse(6) == 6  # numbers as the engine sends them
    with pytest.raises(ValueError):
        quantity.parse(True)
    assert [quantity.show(Decimal(x)) for x in ("12.0", "100", "1.50")] == ["12", "100", "1.5"]


def test_every_kueue_object_rendered_is_valid_against_the_v0_19_2_crd_and_a_misspelled_field_is_not(rendered):
    objects = [r for r in rendered.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    assert sorted({r.inputs["kind"] for r in objects}) == sorted(KINDS)
    for r in objects:
        assert r.type == f"kubernetes:{r.inputs['apiVersion']}:{r.inputs['kind']}"
        jsonschema.validate(r.inputs, _schema(r.inputs["kind"]))
    (queue,) = [r for r in objects if r.inputs["kind"] == "ClusterQueue" and r.name == "research"]
    spec = queue.inputs["spec"]
    with pytest.raises(jsonschema.ValidationError, match="cohort"):  # v1beta1's name for cohortName
        jsonschema.validate({**queue.inputs, "spec": {**spec, "cohort": "gpuready"}}, _schema("ClusterQueue"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**queue.inputs, "spec": {**spec, "preemption": {"reclaimWithinCohort": "Sometimes"}}},
                            _schema("ClusterQueue"))


def _read(rendered, reader, name):
    (found,) = [read(r.type, r.inputs) for r in rendered.resources if r.type == reader.TOKEN and r.name == name]
    assert isinstance(found, reader)
    return found


def test_the_readers_read_the_kueue_objects_as_declared(rendered):
    research = _read(rendered, kubernetes.ClusterQueue, "research")
    assert research.name == "research" and research.cohort == "gpuready" and research.fair_sharing_weight == 2
    assert research.gpu_quotas() == [kubernetes.Quota("gpu-l4", "nvidia.com/gpu", Decimal(6), Decimal(2), None)]
    (memory,) = [q for q in research.quotas if q.resource == "memory"]
    assert memory.nominal == 6 * 192 * 1024 ** 3  # "1152Gi"
    assert research.covered("gpu-l4") == ("nvidia.com/gpu", "cpu", "memory") and research.covered("gpu-l40s") == ()
    assert research.preemption["reclaimWithinCohort"] == "LowerPriority"
    inference = _read(rendered, kubernetes.ClusterQueue, "inference")
    assert inference.flavors == list(TEAMS["inference"])
    flavor = _read(rendered, kubernetes.ResourceFlavor, "gpu-l40s")
    assert flavor.node_labels == FLAVORS["gpu-l40s"] and flavor.tolerations[0]["operator"] == "Exists"
    local = _read(rendered, kubernetes.LocalQueue, "research-queue")
    assert (local.namespace, local.cluster_queue) == ("research", "research")
    assert _read(rendered, kubernetes.WorkloadPriorityClass, "gpuready-high").value == 1000
    cohort = _read(rendered, kubernetes.Cohort, "gpuready")
    assert cohort.quotas == [] and not cohort.overcommit


def test_the_readers_read_the_fair_share_policy_and_the_queue_that_schedules_by_it(rendered):
    policy = _read(rendered, aws.BatchSchedulingPolicy, "teams")
    assert policy.shares == [aws.Share("research", 0.5), aws.Share("inference", 1.0)]
    assert (policy.compute_reservation, policy.share_decay_seconds) == (10, 3600)
    assert policy.fractions() == pytest.approx({"research": 2 / 3, "inference": 1 / 3})  # Batch: lower gets more
    queue = _read(rendered, aws.BatchJobQueue, "gpu-fair")
    (policy_resource,) = [r for r in rendered.resources if r.type == aws.BatchSchedulingPolicy.TOKEN]
    assert queue.scheduling_policy_arn == policy_resource.outputs["arn"]


def test_flavors_select_the_pools_whose_nodes_carry_their_labels(rendered):
    """A flavor's nodeLabels become the admitted pod's node selector: it reaches a pool by a label the pool sets, by
    the platform's node-group label and the pool's name, or by the instance-type label."""
    items = from_rendering(rendered.resources)
    pools = {p.name: p for p in queues.kubernetes_gpu_pools(queues.gpu_pools(items))}
    assert set(pools) == set(POOLS)
    flavor = kubernetes.ResourceFlavor
    cases = {"by node group": ({"eks.amazonaws.com/nodegroup": "gpu-l4"}, {"gpu-l4"}),
             "by own label": ({"gpuready.io/pool": "l40s"}, {"gpu-l40s"}),
             "by instance type": ({"node.kubernetes.io/instance-type": "g6e.xlarge"}, {"gpu-l40s"}),
             "shared label": ({"nvidia.com/gpu.present": "true"}, set(POOLS)),
             "no labels": ({}, set(POOLS)),
             "label of no pool": ({"eks.amazonaws.com/nodegroup": "gpu-h100"}, set()),
             "one label wrong": ({"nvidia.com/gpu.present": "true", "gpuready.io/pool": "h100"}, set())}
    for case, (labels, expected) in cases.items():
        found = {name for name, pool in pools.items() if queues.selects(flavor({"spec": {"nodeLabels": labels}}), pool)}
        assert found == expected, case
    tolerant = flavor({"spec": {"nodeLabels": {}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})
    assert queues.is_gpu_flavor(tolerant, list(pools.values()))
    assert not queues.is_gpu_flavor(flavor({"spec": {"nodeLabels": {"pool": "cpu"}}}), list(pools.values()))
