"""EKS Auto Mode on a capacity reservation: a custom ``eks.amazonaws.com/v1`` NodeClass selects it and the GPU NodePool
prefers ``reserved`` capacity.

AWS publishes no CRD for Auto Mode's NodeClass, so the NodeClass is checked against a documented-keys schema derived
here from the vendored EKS user guide pages (``tests/data/eks-auto-mode-nodeclass``, see PROVENANCE.md): every key
gpuready sets must appear, at the same place, in a NodeClass YAML example of ``create-node-class.adoc`` (its Node
Class Specification, with the alternatives it gives as comments, ``# - id: ...``, read as entries) or of
``auto-odcr.adoc``; maps named ``tags`` are free-form (string to string); the required fields are the keys under the
specification's ``# Required fields`` comment. It is a schema of what AWS documents, not of what Auto Mode accepts.
The NodePool is Karpenter's ``karpenter.sh/v1`` NodePool, checked against the Karpenter chart's CRD and core labels."""

from __future__ import annotations

import re

import jsonschema
import pytest
import yaml

from gpuready_components.eks_gpu import AutoscalerArgs, CapacityReservationArgs
from gpuready_components.eks_gpu.validation import check
from gpuready_components.errors import ConfigError
from tests.conftest import ROOT, one

from .helpers import CLUSTER, ROLE, args, build
from .test_karpenter import _capacity_types_of_karpenter

AUTO = {"autoscaler": AutoscalerArgs(mode="auto-mode")}
DOCS = ROOT / "tests" / "data" / "eks-auto-mode-nodeclass"
NODE_CLASS = "kubernetes:eks.amazonaws.com/v1:NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_POOL_CRD = ROOT / "tests" / "data" / "helm-charts" / "karpenter-1.13.0" / "crds" / "karpenter.sh_nodepools.yaml"
BLOCK_ID = "cr-0123456789abcdef0"
P5 = {"instance_types": ["p5.48xlarge"], "max_size": 2}
_BLOCK = re.compile(r"```yaml\n(.*?)```|\[source,yaml\]\n----\n(.*?)----", re.S)
_ALTERNATIVE = re.compile(r"^(\s*)# (- (?:id|name): .*)$", re.M)


def _examples() -> list[tuple[str, dict]]:
    """Every NodeClass YAML example of the vendored pages, as (its text, the object)."""
    found = []
    for page in ("create-node-class.adoc", "auto-odcr.adoc"):
        for match in _BLOCK.finditer((DOCS / page).read_text()):
            text = match.group(1) or match.group(2)
            for doc in yaml.safe_load_all(_ALTERNATIVE.sub(r"\1\2", text)):
                if isinstance(doc, dict) and doc.get("kind") == "NodeClass":
                    found.append((text, doc))
    return found


def _documented() -> dict[tuple[str, ...], set[str]]:
    """Path (keys, ``[]`` for a list's entries) -> the keys documented under it, over every example."""
    keys: dict[tuple[str, ...], set[str]] = {}

    def walk(value, path):
        if isinstance(value, dict):
            if path and path[-1] == "tags":
                return  # free-form
            keys.setdefault(path, set()).update(value)
            for key, item in value.items():
                walk(item, (*path, key))
        elif isinstance(value, list):
            for item in value:
                walk(item, (*path, "[]"))

    for _, doc in _examples():
        walk(doc, ())
    return keys


def _undocumented(obj, documented=None) -> list[str]:
    """The paths of ``obj`` (a NodeClass) that no documented example has; ``tags`` maps must map strings to strings."""
    documented = documented or _documented()
    wrong = []

    def walk(value, path):
        if isinstance(value, dict):
            if path and path[-1] == "tags":
                wrong.extend(".".join((*path, k)) for k, v in value.items()
                             if not (isinstance(k, str) and isinstance(v, str)))
                return
            wrong.extend(".".join((*path, k)) for k in value if k not in documented.get(path, set()))
            for key, item in value.items():
                walk(item, (*path, key))
        elif isinstance(value, list):
            for item in value:
                walk(item, (*path, "[]"))

    walk(obj, ())
    return wrong


def _required() -> set[str]:
    """The spec keys under the specification's ``# Required fields`` comment (up to ``# Optional fields``)."""
    (spec,) = [text for text, doc in _examples() if "# Required fields" in text]
    block = spec[spec.index("# Required fields"):spec.index("# Optional fields")]
    return set(re.findall(r"^  (\w+):", block, re.M))


def _reserved(render, reservation: CapacityReservationArgs, node_group=None):
    rendering, eks = build(render, {**P5, "reservation": reservation, **(node_group or {})}, **AUTO)
    (nodeclass,) = rendering.of_type(NODE_CLASS)
    (pool,) = rendering.of_type(NODE_POOL)
    return rendering, _manifest(nodeclass), _manifest(pool)


def _manifest(resource) -> dict:
    return {k: resource.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}


def _capacity_requirement(pool) -> list[str]:
    (req,) = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    return req["values"]


def test_the_documented_keys_schema_is_read_from_the_vendored_pages():
    documented = _documented()
    assert len(_examples()) == 4  # the Basic example, the Specification, and auto-odcr's two NodeClasses
    assert {"role", "subnetSelectorTerms", "securityGroupSelectorTerms", "capacityReservationSelectorTerms",
            "ephemeralStorage", "tags"} <= documented[("spec",)]
    assert documented[("spec", "capacityReservationSelectorTerms", "[]")] == {"id", "tags", "owner"}
    assert documented[("spec", "subnetSelectorTerms", "[]")] == {"id", "tags"}  # id: a commented alternative
    assert documented[("spec", "securityGroupSelectorTerms", "[]")] == {"id", "tags", "name"}
    assert _required() == {"role", "subnetSelectorTerms", "securityGroupSelectorTerms"}


@pytest.mark.parametrize("reservation, terms", [
    (CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID), [{"id": BLOCK_ID}]),
    (CapacityReservationArgs(kind="odcr", id=BLOCK_ID), [{"id": BLOCK_ID}]),
    (CapacityReservationArgs(kind="odcr", tags={"team": "ml"}), [{"tags": {"team": "ml"}}]),
])
def test_the_node_class_selects_the_reservation_with_documented_keys_only(render, reservation, terms):
    rendering, nodeclass, pool = _reserved(render, reservation)
    assert (nodeclass["apiVersion"], nodeclass["kind"]) == ("eks.amazonaws.com/v1", "NodeClass")
    assert nodeclass["metadata"]["name"] == "gpuready-gpu"  # not `default`, the built-in one's name
    assert _undocumented({k: nodeclass[k] for k in ("apiVersion", "kind", "spec")}) == []
    assert _required() <= set(nodeclass["spec"])
    spec = nodeclass["spec"]
    assert spec["capacityReservationSelectorTerms"] == terms
    # What the built-in NodeClass takes from the cluster: the Auto Mode node role (computeConfig's), the GPU
    # subnets and the cluster security group (EKS's `eks-cluster-sg-*`), each by id.
    role = one(rendering, ROLE, "ml-gpu-node")
    (cluster,) = rendering.of_type(CLUSTER)
    assert cluster.inputs["computeConfig"]["nodeRoleArn"] == role.outputs["arn"]
    assert spec["role"] == role.outputs["name"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-aaaaaaaa"}, {"id": "subnet-bbbbbbbb"}]
    assert spec["securityGroupSelectorTerms"] == [
        {"id": cluster.outputs["vpcConfig"]["clusterSecurityGroupId"]}]
    assert re.fullmatch(r"sg-[0-9a-f]+", spec["securityGroupSelectorTerms"][0]["id"])
    # The same role needs no access entry of its own: EKS made the node role's with the cluster.
    assert rendering.of_type("aws:eks/accessEntry:AccessEntry") == []
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {"group": "eks.amazonaws.com", "kind": "NodeClass",
                                                                "name": "gpuready-gpu"}


@pytest.mark.parametrize("change", [
    {"capacityReservationSelectorTerms": [{"instanceMatchCriteria": "open"}]},  # Karpenter's, not Auto Mode's
    {"capacityReservationSelectorTerms": [{"tags": {"team": "ml"}, "ownerID": "012345678901"}]},  # docs: `owner`
    {"securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0", "alias": "x"}]},
    {"amiSelectorTerms": [{"alias": "al2023@latest"}]},
    {"tags": {"team": 1}},
])
def test_a_key_the_pages_do_not_document_fails_the_check(render, change):
    _, nodeclass, _ = _reserved(render, CapacityReservationArgs(kind="odcr", id=BLOCK_ID))
    wrong = {"apiVersion": nodeclass["apiVersion"], "kind": nodeclass["kind"], "spec": {**nodeclass["spec"], **change}}
    assert _undocumented(wrong) != []


@pytest.mark.parametrize("only, node_group, capacity", [
    (False, {}, ["reserved", "on-demand"]),
    (True, {}, ["reserved"]),
    (False, {"capacity_type": "SPOT"}, ["reserved", "spot"]),
])
def test_the_node_pool_prefers_reserved_and_is_a_valid_karpenter_nodepool(render, only, node_group, capacity):
    _, _, pool = _reserved(render, CapacityReservationArgs(kind="odcr", id=BLOCK_ID, only=only), node_group)
    assert _capacity_requirement(pool) == capacity
    assert set(capacity) <= _capacity_types_of_karpenter()
    crd = yaml.safe_load(NODE_POOL_CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    jsonschema.validate(pool, version["schema"]["openAPIV3Schema"])
    assert (pool["metadata"].get("annotations") or {}).get("reservations-only.gpuready.io") == (
        "true" if only else None)


def test_without_a_reservation_the_stack_keeps_its_children_and_the_default_node_class(render):
    plain, _ = build(render, P5, **AUTO)
    reserved, _ = build(render, {**P5, "reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID)}, **AUTO)
    names = {(r.type, r.name) for r in plain.resources}
    assert names < {(r.type, r.name) for r in reserved.resources}
    assert {(r.type, r.name) for r in reserved.resources} - names == {(NODE_CLASS, "ml-gpu-nodeclass")}
    assert plain.of_type(NODE_CLASS) == []
    (pool,) = plain.of_type(NODE_POOL)
    assert pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"
    assert _capacity_requirement(_manifest(pool)) == ["on-demand"]


@pytest.mark.parametrize("node_group, field, words", [
    ({"reservation": CapacityReservationArgs(kind="odcr", preference="open")},
     "node_group.reservation.preference", "by id or tags only"),
    ({"reservation": CapacityReservationArgs(kind="odcr")}, "node_group.reservation.preference", "by id or tags only"),
    ({"reservation": CapacityReservationArgs(
        kind="odcr", resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/g")},
     "node_group.reservation.resource_group_arn", "EKS Auto Mode selects reservations by id or tags"),
    ({"reservation": CapacityReservationArgs(kind="odcr", id=BLOCK_ID, preference="open")},
     "node_group.reservation.preference", "names none"),
    ({"reservation": CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID, tags={"team": "ml"})},
     "node_group.reservation.tags", "not both"),
    ({"reservation": CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID), "capacity_type": "SPOT"},
     "node_group.capacity_type", "mixes no Spot"),
    ({"reservation": CapacityReservationArgs(kind="capacity-block", id=BLOCK_ID, count=1)},
     "node_group.max_size", "never come"),
])
def test_an_auto_mode_reservation_aws_does_not_document_is_refused_in_one_line(node_group, field, words):
    with pytest.raises(ConfigError) as error:
        check(args({**P5, **node_group}, **AUTO))
    assert error.value.field == field and words in str(error.value) and error.value.fix
    assert "\n" not in str(error.value)
