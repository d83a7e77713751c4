"""The platform registry (``components/platforms.py``) through its public calls only: a name means one platform,
and the Kubernetes platforms are told from the others. A throw-away platform is a built-in one renamed, so these
tests hold whatever fields the descriptor has."""

from __future__ import annotations

import dataclasses

import pytest

from gpuready_components import platforms

BUILTIN = ("aks", "aws-batch", "eks", "gke")  # by name, whatever the order they were registered in


def test_a_second_different_platform_under_a_taken_name_is_refused_and_the_first_kept():
    eks = platforms.require("eks")
    impostor = dataclasses.replace(platforms.require("aws-batch"), name="eks")
    try:
        with pytest.raises(ValueError, match="'eks' is registered already"):
            platforms.register(impostor)
        assert platforms.require("eks") is eks and platforms.require("eks").kubernetes
    finally:  # where the registry took it, the built-in back, so no other test sees the impostor
        if platforms.get("eks") is not eks:
            platforms.unregister("eks")
            platforms.register(eks)
    assert platforms.register(eks) is eks  # the same one again: nothing changes
    assert platforms.names()[:len(BUILTIN)] == BUILTIN


def test_a_new_platform_registers_once_and_is_forgotten_when_asked():
    spare = dataclasses.replace(platforms.require("eks"), name="guard-test-k8s")
    platforms.register(spare)
    try:
        assert platforms.get("guard-test-k8s") is spare and "guard-test-k8s" in platforms.names()
        assert spare in platforms.every(kubernetes=True) and spare not in platforms.every(kubernetes=False)
        with pytest.raises(ValueError):
            platforms.register(dataclasses.replace(platforms.require("aws-batch"), name="guard-test-k8s"))
    finally:
        platforms.unregister("guard-test-k8s")
    assert platforms.get("guard-test-k8s") is None
    with pytest.raises(KeyError, match="unknown platform 'guard-test-k8s': gpuready knows aks, aws-batch, eks, gke"):
        platforms.require("guard-test-k8s")


def test_every_kubernetes_platform_and_only_those():
    kubernetes = [p.name for p in platforms.every(kubernetes=True)]
    others = [p.name for p in platforms.every(kubernetes=False)]
    assert {"eks", "gke", "aks"} <= set(kubernetes) and "aws-batch" not in kubernetes
    assert "aws-batch" in others and not {"eks", "gke", "aks"} & set(others)
    assert sorted(kubernetes + others) == sorted(p.name for p in platforms.every()) == sorted(platforms.names())


@pytest.mark.parametrize("name", [None, 3, ["eks"], "EKS", "batch"])
def test_get_answers_none_for_anything_but_a_registered_name(name):
    assert platforms.get(name) is None


def _installed(tmp_path, monkeypatch, group: str, entries: dict[str, str]) -> None:
    """A distribution on the path whose metadata names ``entries`` under ``group``, as a package's install would."""
    info = tmp_path / f"test_{group.replace('.', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: test-{group}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_fresh_registry_loads_gpuready_s_own_platforms_from_their_entry_points():
    fresh = platforms.Registry()
    assert tuple(p.name for p in fresh.all()) == BUILTIN
    assert all(p is platforms.require(p.name) for p in fresh.all())  # the very objects the entry points name


def test_a_registry_reads_its_own_group_by_name_and_nothing_else(tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, "gpuready.test-group", {"zz-second": "gpuready_platforms.gke:PLATFORM",
                                                             "aa-first": "gpuready_platforms.aks:PLATFORM"})
    assert [p.name for p in platforms.Registry("gpuready.test-group").all()] == ["aks", "gke"]
    assert platforms.Registry("gpuready.no-such-group").all() == ()


def test_a_look_up_from_another_thread_while_the_entry_points_load_waits_for_them(tmp_path, monkeypatch):
    """A provider's or engine's gRPC threads may look a platform up at the same moment: none sees a half-loaded
    registry (an offline id then came out as ``vpc-id``, not EC2's shape, and the component refused it)."""
    import threading
    import time

    (tmp_path / "slow_platform.py").write_text("import time\ntime.sleep(0.5)\n"
                                               "from gpuready_platforms.aks import PLATFORM\n")
    _installed(tmp_path, monkeypatch, "gpuready.test-slow", {"slow": "slow_platform:PLATFORM"})
    registry, seen = platforms.Registry("gpuready.test-slow"), {}
    first = threading.Thread(target=lambda: seen.setdefault("first", registry.all()))
    first.start()
    time.sleep(0.1)  # the first thread is importing the slow module
    seen["second"] = registry.all()
    first.join()
    assert [p.name for p in seen["second"]] == [p.name for p in seen["first"]] == ["aks"]


def test_an_entry_point_that_is_not_a_platform_is_refused_naming_it(tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, "gpuready.test-bad", {"odd": "gpuready_components.platforms:SINGLE"})
    with pytest.raises(TypeError, match=r"^entry point odd = gpuready_components.platforms:SINGLE "
                                        r"\(gpuready.test-bad\) is not a Platform$"):
        platforms.Registry("gpuready.test-bad").all()


@pytest.mark.parametrize("part, key, says", [
    ("describers", "reader", "describer for"), ("answers", "token", "offline answer for"),
    ("node_images", "image", "node image"), ("readers", None, "reader for"), ("served", None, "served type")])
def test_a_part_two_platforms_share_is_no_clash_and_a_different_one_is(part, key, says):
    """The same object under the same key from two platforms is shared (the AWS readers of aws-batch and eks); a
    different one under a key another platform gives is refused, naming the part, the key and both platforms."""
    registry = platforms.Registry("gpuready.no-such-group")
    base = platforms.require("eks")
    registry.register(base)
    registry.register(dataclasses.replace(base, name="eks-twin"))  # every part the same objects: no clash
    if part == "readers":
        reader = base.readers[0]
        other = (type(reader.__name__, (reader,), {}),)
        label = reader.TOKEN
    elif part == "served":
        other = (dataclasses.replace(base.served[0], args=object),)
        label = base.served[0].token
    else:
        label = next(iter(getattr(base, part)))
        other = {label: object()}
    with pytest.raises(ValueError) as refused:
        registry.register(dataclasses.replace(base, name="eks-other", **{part: other}))
    label = getattr(label, "__name__", label)
    assert str(refused.value) == f"platform 'eks-other' gives another {says} {label}, which 'eks' gives"
    assert [p.name for p in registry.all()] == ["eks", "eks-twin"]


def test_tables_read_from_every_platform_follow_registration():
    registry = platforms.Registry("gpuready.no-such-group")
    count = lambda: len(registry.all())  # noqa: E731
    assert registry.derived("count", count) == 0
    registry.register(platforms.require("aks"))
    assert registry.derived("count", count) == 1  # recomputed after a registration
    registry.unregister("aks")
    assert registry.derived("count", count) == 0  # and after an unregistration
    registry.unregister("aks")  # twice is nothing


def test_an_equal_part_from_two_platforms_is_no_clash():
    """Two platforms may each build the same served type (equal, not the same object): one component, no clash."""
    registry = platforms.Registry("gpuready.no-such-group")
    base = platforms.require("aws-batch")
    registry.register(base)
    twin = dataclasses.replace(base, name="batch-twin", served=tuple(dataclasses.replace(s) for s in base.served))
    assert twin.served[0] is not base.served[0] and twin.served[0] == base.served[0]
    assert registry.register(twin) is twin


def test_node_facts_are_the_kubernetes_platforms_own():
    assert platforms.node_facts("eks") is platforms.require("eks").node
    with pytest.raises(KeyError, match="platform 'aws-batch' runs no Kubernetes GPU nodes"):
        platforms.node_facts("aws-batch")
    with pytest.raises(KeyError, match="unknown platform 'nomad'"):
        platforms.node_facts("nomad")


def test_node_images_and_clouds_are_every_platform_s():
    images = platforms.node_images()
    assert set(images) == {k for p in platforms.every(kubernetes=True) for k in p.node_images}
    assert images["gke/driver-installed"] is platforms.require("gke").node_images["gke/driver-installed"]
    assert platforms.clouds() == ("azure", "aws", "gcp")  # each once, in the platforms' order


def test_once_merges_parts_into_one_read_only_table():
    merged = platforms.once({"a": 1, "b": 2}, {"b": 3, "c": 4})
    assert dict(merged) == {"a": 1, "b": 3, "c": 4}
    with pytest.raises(TypeError):
        merged["d"] = 5  # type: ignore[index]
