"""Kueue's accounting of a ComputeDomain gang's IMEX channel claims (``install: dra`` with ``computeDomains: true``),
against the vendors' own text: the ResourceClaimTemplate the ComputeDomain controller makes (driver v0.4.1,
tests/data/dra-driver-nvidia-gpu-0.4.1-templates), how Kueue v0.19.2 charges and refuses claims
(tests/data/kueue-0.19.2-config/claims.go, as tests/kueue_sim.py models it), its Configuration's rules for a
mapping (``pkg/config/validation.go`` ``validateDeviceClassMappings``) and its CRDs with their CEL rules.

A gang's pods each claim N GPUs (DeviceClass ``gpu.nvidia.com``, the smoke's own template) and one channel (the
ComputeDomain's template): admitted only if Kueue maps both classes and the queue covers both resources, each within
its quota."""

from __future__ import annotations

import re

import pytest
import yaml

from gpuready.smoke import dra
from gpuready_components.k8s_gpu import compute_domain as cd, facts, kueue
from tests.conftest import ROOT
from tests.kueue_sim import Kueue

from . import kueue_schemas
from .test_kueue import FLAVORS, TEAMS

DRIVER = ROOT / "tests" / "data" / "dra-driver-nvidia-gpu-0.4.1-templates"
CHART = ROOT / "tests" / "data" / "helm-charts" / "dra-driver-nvidia-gpu-0.4.1"
KUEUE_CLAIMS = ROOT / "tests" / "data" / "kueue-0.19.2-config" / "claims.go"
CHANNEL = facts.IMEX_CHANNEL_RESOURCE
WITH_CHANNELS = {**facts.DRA_KUEUE_MAPPINGS, **facts.DRA_CHANNEL_KUEUE_MAPPINGS}


def channel_template(name: str, namespace: str) -> dict:
    """The ResourceClaimTemplate the driver's controller makes for ComputeDomain ``name``: its Go template with the
    values ``resourceclaimtemplate.go`` fills in (the DeviceClass: the chart's channel class)."""
    values = {"Namespace": namespace, "Name": cd.channel_template(name), "Finalizer": "resource.nvidia.com/cd",
              "ComputeDomainLabelKey": "resource.nvidia.com/computeDomain", "ComputeDomainLabelValue": "uid",
              "TargetLabelKey": "resource.nvidia.com/computeDomainTarget", "TargetLabelValue": "Workload",
              "DeviceClassName": channel_device_class(), "DriverName": "compute-domain.nvidia.com",
              "ChannelConfig.APIVersion": "resource.nvidia.com/v1beta1",
              "ChannelConfig.Kind": "ComputeDomainChannelConfig", "ChannelConfig.DomainID": "uid",
              "ChannelConfig.AllocationMode": "Single"}
    text = (DRIVER / "compute-domain-workload-claim-template.tmpl.yaml").read_text()
    return yaml.safe_load(re.sub(r"{{\s*\.([\w.]+)\s*}}", lambda m: values[m.group(1)], text))


def channel_device_class() -> str:
    """The name of the chart's channel DeviceClass (``templates/deviceclass-compute-domain-default-channel.yaml``)."""
    text = (CHART / "templates" / "deviceclass-compute-domain-default-channel.yaml").read_text()
    return re.search(r"^kind: DeviceClass\nmetadata:\n  name: (\S+)", text, re.M).group(1)


def exact_counts(template: dict) -> dict[str, int]:
    """DeviceClass -> devices per claim of a ResourceClaimTemplate, as Kueue 0.19.2 counts them (``exactly``
    requests; ``allocationMode`` and ``count`` as the API server defaults them: ExactCount, 1)."""
    found: dict[str, int] = {}
    for request in template["spec"]["spec"]["devices"]["requests"]:
        exactly = request["exactly"]
        assert exactly.get("allocationMode", "ExactCount") == "ExactCount"  # All: Kueue refuses the workload
        found[exactly["deviceClassName"]] = found.get(exactly["deviceClassName"], 0) + int(exactly.get("count", 1))
    return found


def gang_claims(gpus_per_pod: int, name: str = "gang", namespace: str = "research") -> dict[str, dict[str, int]]:
    """The ResourceClaimTemplates one pod of the smoke's ComputeDomain gang claims (by name -> DeviceClass ->
    devices): its GPUs through the smoke's template, its channel through its ComputeDomain's."""
    gpu = dra.claim_template(dra.template_name(name, gpus_per_pod), namespace, gpus_per_pod, facts.DRA_DEVICE_CLASS,
                             {})
    pod = cd.claim_channel({"containers": [{"name": "main", "image": "nccl"}],
                            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": gpu["metadata"]["name"]}]},
                           name)
    templates = {t["metadata"]["name"]: t for t in (gpu, channel_template(name, namespace))}
    return {c["resourceClaimTemplateName"]: exact_counts(templates[c["resourceClaimTemplateName"]])
            for c in pod["resourceClaims"]}


def _config(device_classes) -> dict:
    return kueue_schemas.manager_config(kueue_schemas.render(kueue.chart_values({}, device_classes)))


def _kueue(channels: bool, device_classes=WITH_CHANNELS) -> Kueue:
    return Kueue(kueue.objects(TEAMS, FLAVORS, channels=channels), _config(device_classes))


def test_the_controller_s_channel_template_asks_one_channel_device_per_pod():
    """The template names the chart's channel class, the one the component maps, in one ``exactly`` request with
    neither ``allocationMode`` nor ``count`` (the API server writes ExactCount and 1), and no request Kueue
    refuses (FirstAvailable, adminAccess)."""
    assert channel_device_class() == facts.DRA_COMPUTE_DOMAIN_CLASS
    template = channel_template("gang", "research")
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert set(request) == {"name", "exactly"} and set(request["exactly"]) == {"deviceClassName"}
    assert exact_counts(template) == {facts.DRA_COMPUTE_DOMAIN_CLASS: 1}
    assert gang_claims(4) == {dra.template_name("gang", 4): {facts.DRA_DEVICE_CLASS: 4},
                              cd.channel_template("gang"): {facts.DRA_COMPUTE_DOMAIN_CLASS: 1}}


def test_kueue_refuses_an_unmapped_class_and_charges_count_units_of_a_mapped_one():
    """The rules the simulator applies, in Kueue v0.19.2's own code."""
    source = KUEUE_CLAIMS.read_text()
    assert "DeviceClass %s is not mapped in DRA configuration for podset %s" in source
    assert "q = req.Exactly.Count" in source and "AllocationMode 'All' is not supported" in source
    # The channel template's opaque ``config`` (its domain and channel mode) is the driver's: Kueue's docs call
    # per-request config unsupported, and its code never reads it, so the request is charged as any other.
    assert channel_template("gang", "research")["spec"]["spec"]["devices"]["config"]
    assert "Devices.Config" not in source and "Devices.Constraints" not in source


def _is_label_key(name: str) -> bool:
    """Kubernetes' ``IsQualifiedName`` as Kueue's ``content.IsLabelKey`` applies it: an optional DNS-subdomain
    prefix (at most 253) and a slash, then a name of at most 63 alphanumerics, ``-``, ``_``, ``.``."""
    prefix, _, rest = name.rpartition("/")
    label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    ok_prefix = not prefix or (len(prefix) <= 253 and re.fullmatch(rf"{label}(\.{label})*", prefix) is not None)
    return ok_prefix and 0 < len(rest) <= 63 and re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", rest)


def test_the_mappings_pass_kueues_configuration_rules():
    """validateDeviceClassMappings: at most 16 mappings, names label keys of at most 253 characters and unique, at
    most 8 classes each, a class in one mapping only (without counters)."""
    mappings = _config(WITH_CHANNELS)["resources"]["deviceClassMappings"]
    assert mappings == [{"name": facts.GPU_RESOURCE, "deviceClassNames": [facts.DRA_DEVICE_CLASS]},
                        {"name": CHANNEL, "deviceClassNames": [facts.DRA_COMPUTE_DOMAIN_CLASS]}]
    assert len(mappings) <= 16 and len({m["name"] for m in mappings}) == len(mappings)
    classes = [c for m in mappings for c in m["deviceClassNames"]]
    assert len(classes) == len(set(classes))
    for m in mappings:
        assert _is_label_key(m["name"]) and len(m["name"]) <= 253 and 1 <= len(m["deviceClassNames"]) <= 8
        assert all(_is_label_key(c) for c in m["deviceClassNames"])
    assert not _is_label_key("gpuready.io/imex channel") and not _is_label_key("Gpuready.IO/imex-channel")


def test_with_channels_every_queue_and_the_cohort_cover_them_and_validate():
    made = kueue.objects(TEAMS, FLAVORS, channels=True)
    queues = [o for o in made if o["kind"] in ("ClusterQueue", "Cohort")]
    assert len(queues) == 4  # two teams, the operators, the Cohort
    for obj in queues:
        (group,) = obj["spec"]["resourceGroups"]
        assert group["coveredResources"] == [facts.GPU_RESOURCE, "cpu", "memory", CHANNEL]
        for entry in group["flavors"]:
            assert [r["name"] for r in entry["resources"]] == group["coveredResources"]
        kueue_schemas.validate(obj)
        assert kueue_schemas.cel_violations(obj) == [], obj["metadata"]["name"]


def test_channel_limits_mirror_the_gpu_limits_and_the_gpu_arithmetic_is_unchanged():
    """One channel per GPU, nominal, borrowing and lending alike; take the channels away and what is left is the
    objects without channels, to the byte."""
    plain, made = kueue.objects(TEAMS, FLAVORS), kueue.objects(TEAMS, FLAVORS, channels=True)
    for obj in made:
        for group in (obj.get("spec") or {}).get("resourceGroups", ()) if obj["kind"] != "Namespace" else ():
            for entry in group["flavors"]:
                by = {r["name"]: r for r in entry["resources"]}
                assert {k: v for k, v in by[CHANNEL].items() if k != "name"} == \
                    {k: v for k, v in by[facts.GPU_RESOURCE].items() if k != "name"}
                entry["resources"] = [r for r in entry["resources"] if r["name"] != CHANNEL]
            group["coveredResources"] = [r for r in group["coveredResources"] if r != CHANNEL]
    assert made == plain
    assert kueue.admitted(plain, FLAVORS) == kueue.admitted(kueue.objects(TEAMS, FLAVORS, channels=True), FLAVORS)


@pytest.mark.parametrize("queue, namespace, pods, gpus_per_pod", [
    ("research", "research", 3, 4),     # research's whole guarantee on gpu-4x (12)
    ("research", "research", 4, 4),     # and borrowing the Cohort's 4 beyond it: the most it holds
    ("research", "research", 16, 1),    # one GPU a pod: as many channels as GPUs
    ("inference", "inference", 4, 1),   # the whole small pool, lending none
    (facts.OPERATORS_QUEUE, facts.OPERATORS_NAMESPACE, 4, 4),  # the smoke, borrowing all of gpu-4x
])
def test_a_compute_domain_gang_that_fits_the_gpus_is_admitted(queue, namespace, pods, gpus_per_pod):
    """With the channels mapped and covered, a gang is admitted exactly when the same gang without its channel
    claims is: the channels never bind first."""
    k = _kueue(channels=True)
    claims = gang_claims(gpus_per_pod, namespace=namespace)
    gang = k.submit("gang", namespace, queue, {}, count=pods, claims=claims)
    assert gang.admitted, gang.message
    assert gang.requests == {facts.GPU_RESOURCE: pods * gpus_per_pod, CHANNEL: pods}
    alone = _kueue(channels=False, device_classes=facts.DRA_KUEUE_MAPPINGS)
    only_gpus = {n: c for n, c in claims.items() if facts.DRA_COMPUTE_DOMAIN_CLASS not in c}
    assert alone.submit("gang", namespace, queue, {}, count=pods, claims=only_gpus).admitted


def test_a_gang_beyond_the_gpus_waits_on_the_gpus_not_the_channels():
    k = _kueue(channels=True)
    gang = k.submit("gang", "research", "research", {}, count=5, claims=gang_claims(4))  # 20 GPUs: research holds 16
    assert not gang.admitted
    # On gpu-4x (research's pool) its 5 channels fit, its 20 GPUs do not; on gpu it has no quota of either.
    assert f"for {facts.GPU_RESOURCE} in flavor gpu-4x, 4 more needed" in gang.message
    assert f"for {CHANNEL} in flavor gpu-4x" not in gang.message


def test_without_the_channel_mapping_kueue_never_admits_the_gang():
    """The defect this mapping fixes: with the GPUs' mapping alone, the channel's class is unmapped."""
    k = _kueue(channels=False, device_classes=facts.DRA_KUEUE_MAPPINGS)
    gang = k.submit("gang", "research", "research", {}, count=2, claims=gang_claims(4))
    assert not gang.admitted
    (reserved,) = [c for c in gang.conditions if c["type"] == "QuotaReserved"]
    assert reserved["reason"] == "Inadmissible"
    assert f"DeviceClass {facts.DRA_COMPUTE_DOMAIN_CLASS} is not mapped" in reserved["message"]


def test_a_mapped_channel_no_queue_covers_is_never_admitted_either():
    k = _kueue(channels=False)
    gang = k.submit("gang", "research", "research", {}, count=2, claims=gang_claims(4))
    assert not gang.admitted and f"resource {CHANNEL} unavailable in ClusterQueue" in gang.message


def test_without_compute_domains_nothing_changes():
    assert kueue.objects(TEAMS, FLAVORS) == kueue.objects(TEAMS, FLAVORS, channels=False)
    for obj in kueue.objects(TEAMS, FLAVORS):
        for group in (obj.get("spec") or {}).get("resourceGroups", ()) if obj["kind"] != "Namespace" else ():
            assert group["coveredResources"] == [facts.GPU_RESOURCE, "cpu", "memory"]
    k = _kueue(channels=False, device_classes=facts.DRA_KUEUE_MAPPINGS)
    plain = k.submit("plain", "research", "research", {}, count=2,
                     claims={dra.template_name("plain", 4): {facts.DRA_DEVICE_CLASS: 4}})
    assert plain.admitted and plain.requests == {facts.GPU_RESOURCE: 8}
