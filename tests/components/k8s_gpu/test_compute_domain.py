"""ComputeDomains as NVIDIA's DRA driver v0.4.1 takes them: the ComputeDomain against the chart's own CRD (strict,
defaults applied), the pods' claim of its channel against Kubernetes' schemas, and both shaped exactly as the driver's
own demo specs (tests/data/helm-charts/dra-driver-nvidia-gpu-0.4.1/ and tests/data/dra-driver-nvidia-gpu-0.4.1-demo/,
unchanged)."""

from __future__ import annotations

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpuready_components.k8s_gpu import compute_domain as cd
from tests.conftest import ROOT

CHART = ROOT / "tests" / "data" / "helm-charts" / "dra-driver-nvidia-gpu-0.4.1"
DEMO = ROOT / "tests" / "data" / "dra-driver-nvidia-gpu-0.4.1-demo" / "imex"
KUBERNETES = ("1.34.0", "1.37.0")
"""DRA's ``resource.k8s.io/v1`` is GA from 1.34 (the driver needs 1.34.2+)."""


def _crd():
    return yaml.safe_load((CHART / "crds" / "resource.nvidia.com_computedomains.yaml").read_text())


def _strict(schema):
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema = {**schema, "additionalProperties": False}
        return {k: _strict(v) for k, v in schema.items()}
    return [_strict(v) for v in schema] if isinstance(schema, list) else schema


def _schema():
    (version,) = [v for v in _crd()["spec"]["versions"] if v["served"]]
    assert (version["name"], version["storage"]) == (cd.VERSION, True)
    return _strict(version["schema"]["openAPIV3Schema"])


def _demo(name):
    return [d for d in yaml.safe_load_all((DEMO / name).read_text()) if d]


def test_the_api_is_the_charts():
    crd = _crd()
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"]) == \
        (cd.GROUP, cd.KIND, cd.PLURAL)
    assert crd["spec"]["scope"] == "Namespaced"


def test_a_jobs_compute_domain_validates_against_the_crd_and_a_misspelled_field_does_not():
    domain = cd.compute_domain("gpuready-nccl-0123456789", "ml", 4, labels={"app.kubernetes.io/name": "gpuready"})
    jsonschema.validate(domain, _schema())
    domain["spec"]["numNode"] = 4
    with pytest.raises(jsonschema.ValidationError, match="numNode"):
        jsonschema.validate(domain, _schema())


def test_the_crds_only_cel_rule_is_the_immutable_spec_a_create_never_runs():
    rules = []

    def walk(node):
        if isinstance(node, dict):
            rules.extend(r["rule"] for r in node.get("x-kubernetes-validations", ()))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(_crd())
    assert rules == ["self == oldSelf"]  # a transition rule: on an update only, and ours are never updated


@pytest.mark.parametrize("demo", ["nvbandwidth-test-job.yaml", "nvbandwidth-test-job-1.yaml",
                                  "nvbandwidth-test-job-2.yaml"])
def test_the_compute_domain_is_the_demos(demo):
    """The multi-node demos name the channel's template ``<domain>-channel``, as ours do (channel-injection.yaml,
    one node, names it freely: any name is the driver's to make)."""
    (domain,) = [d for d in _demo(demo) if d["kind"] == "ComputeDomain"]
    name, nodes = domain["metadata"]["name"], domain["spec"]["numNodes"]
    ours = cd.compute_domain(name, "default", nodes)
    del ours["metadata"]["namespace"]
    assert ours == domain
    jsonschema.validate(domain, _schema())


def test_a_pod_claims_the_channel_as_the_demo_worker_does():
    domain, job = _demo("nvbandwidth-test-job.yaml")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    bare = {"containers": [{k: v for k, v in worker["containers"][0].items()}], "resourceClaims": []}
    bare["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 2}}
    claimed = cd.claim_channel(bare, domain["metadata"]["name"])
    assert claimed["resourceClaims"] == worker["resourceClaims"]
    assert claimed["containers"][0]["resources"] == worker["containers"][0]["resources"]
    assert bare["resourceClaims"] == []  # the caller's spec is left alone


@pytest.mark.parametrize("version", KUBERNETES)
def test_a_claiming_pod_validates_strictly_and_keeps_its_other_claims(version):
    gpu_claim = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
    spec = {"containers": [{"name": "probe", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [gpu_claim]}
    labels = {"app.kubernetes.io/instance": "job"}
    claimed = cd.claim_channel(spec, "job", same_clique=labels)
    assert claimed["resourceClaims"] == [gpu_claim, {"name": cd.CHANNEL_CLAIM, "resourceClaimTemplateName":
                                                      "job-channel"}]
    assert claimed["containers"][0]["resources"]["claims"] == [{"name": "gpu"}, {"name": cd.CHANNEL_CLAIM}]
    (term,) = claimed["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"labelSelector": {"matchLabels": labels}, "topologyKey": "nvidia.com/gpu.clique"}
    assert cd.claim_channel(claimed, "job")["resourceClaims"] == claimed["resourceClaims"]  # claimed once
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": claimed}
    kubernetes_validate.validate(pod, version, strict=True)


def test_a_compute_domain_spans_a_node_or_more():
    with pytest.raises(ValueError, match="1 node or more"):
        cd.compute_domain("x", "ml", 0)


def test_rack_models_are_the_nvl72_ones():
    assert cd.needs_compute_domains(("GB200",)) and cd.needs_compute_domains(("GB300",))
    assert not cd.needs_compute_domains(("B200", "H100"))
