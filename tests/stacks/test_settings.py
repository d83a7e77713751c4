"""Each platform's settings, declared once (stacks/settings.py): defaults come from the args they feed, bounds
from the clouds' quotas, and the component field each feeds maps errors back to the key."""

from __future__ import annotations

import dataclasses

import pytest

from gpuready_components import platforms
from gpuready_stacks.config import config_key

SETTINGS = {p.name: p.stack().SETTINGS for p in platforms.every()}


def _walk(settings):
    for setting in settings:
        yield setting.key, setting
        for sub in setting.sub:
            yield f"{setting.key}.{sub.key}", sub


@pytest.mark.parametrize("platform", sorted(SETTINGS))
def test_every_default_is_the_field_of_the_args_it_feeds(platform):
    for key, setting in _walk(SETTINGS[platform]):
        if setting.feeds is None:
            continue
        name = setting.fields[0].rsplit(".", 1)[-1]
        field = {f.name: f for f in dataclasses.fields(setting.feeds)}[name]
        default = field.default_factory() if field.default is dataclasses.MISSING else field.default
        assert setting.value == (list(default) if isinstance(default, tuple) else default), key


def test_bounds_are_the_clouds_quotas():
    bounds = {(p, k): s.most for p, settings in SETTINGS.items() for k, s in _walk(settings) if s.most}
    assert bounds == {
        ("aws-batch", "maxVcpus"): 10_000, ("aws-batch", "minVcpus"): 10_000,
        ("aws-batch", "cpuQueue.maxVcpus"): 10_000, ("aws-batch", "multiNode.maxVcpus"): 10_000,
        ("eks", "maxSize"): 450, ("eks", "minSize"): 450, ("eks", "desiredSize"): 450,
        ("gke", "maxNodes"): 1_000, ("gke", "minNodes"): 1_000, ("aks", "maxCount"): 1_000, ("aks", "minCount"): 1_000}


@pytest.mark.parametrize("platform, field, key", [
    ("aws-batch", "max_vcpus", "gpuready:maxVcpus"), ("aws-batch", "job.memory_mib", "gpuready:job.memoryMiB"),
    ("aws-batch", "min_vcpus/max_vcpus", "gpuready:minVcpus/gpuready:maxVcpus"),
    ("aws-batch", "cidr_block", "gpuready:network.cidrBlock"),
    ("eks", "node_group.min_size/desired_size", "gpuready:minSize/gpuready:desiredSize"),
    ("eks", "autoscaler.kubernetes_version", "gpuready:kubernetesVersion"),
    ("eks", "cluster.public_access_cidrs", "gpuready:apiAllowedCidrs"),
    ("gke", "node_pool.gpu_sharing.max_clients_per_gpu", "gpuready:gpuSharing.maxClientsPerGpu"),
    ("gke", "node_pool.labels.team", "gpuready:nodeLabels.team"), ("gke", "software", "gpuready:install"),
    ("aks", "software.mig.config", "gpuready:mig.config"), ("aks", "existing_cluster.name", "gpuready:existingCluster"),
])
def test_component_fields_are_named_by_the_key_that_feeds_them(platform, field, key):
    assert config_key(SETTINGS[platform], field) == key


def test_a_message_names_a_one_word_field_by_its_key_only_in_backquotes():
    """``location`` in prose stays a word; `` `location` `` (a top-level field) reads as its key; the last word of a
    path (`` `name` `` of ``node_pool.reservation.name``) is no field of its own and stays."""
    from gpuready_components.errors import ConfigError
    from gpuready_stacks.config import for_stack

    error = for_stack(ConfigError("node_pool.node_locations", [], "the cluster's location is us-central1",
                                  "set `location` to us-east1, keep `name`"), SETTINGS["gke"])
    assert (error.problem, error.fix) == ("the cluster's location is us-central1",
                                          "set gpuready:location to us-east1, keep `name`")
