"""The component package (``components/package.py``) as a platform's author meets it: a platform registered with its
own args dataclasses is served with a schema read from them (each field under its camelCase name, its docstring, its
type, required where it has no default; a nested dataclass a type of the platform's module; an enum's values named
as identifiers), an annotation no schema type says is refused naming it, and Construct reads the engine's inputs
back into those dataclasses."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional, Sequence, Union

import pulumi
import pytest
from pulumi.output import _OutputData
from pulumi.resource import DependencyResource

from gpuready_components import package, platforms
from gpuready_components.batch_gpu import BatchGpuEnvironmentArgs
from gpuready_components.outputs import Contract
from gpuready_components.served import Choice, Served

HERE = __name__


class Rig:
    """A rig of GPUs in the lab."""


@dataclass(frozen=True)
class Args:
    """Settings a class named ``Args`` alone holds."""

    note: str = ""
    """A note."""


@dataclass(frozen=True)
class LinkArgs:
    """A link of a chain."""

    name: str
    next: Optional[LinkArgs] = None
    """The link after this one."""


@dataclass(frozen=True)
class RigArgs:
    """The rig's inputs."""

    name: str
    """The rig's name."""
    size: Optional[pulumi.Input[int]] = None
    """GPUs, from another resource maybe."""
    tier: str = "p4d.24xlarge"
    """Its tier."""
    links: Sequence[LinkArgs] = ()
    """Its chain."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels."""
    sizes: tuple[int, ...] = ()
    """Sizes."""
    pair: tuple[str, int] = ("A100", 80)
    """A model and its memory in GiB."""
    ratio: float = 1.0
    """A ratio."""
    quotas: Mapping[str, int] = field(default_factory=dict)
    """GPUs by team."""
    nodes: Mapping[str, LinkArgs] = field(default_factory=dict)
    """Links by name."""
    settings: Args = field(default_factory=Args)
    """Settings."""


TIERS = {"p4d.24xlarge": "Eight A100s.", "1x": "", "ON_DEMAND": "", "spot": ""}


def _lab(*served: Served) -> platforms.Platform:
    return platforms.Platform(name="lab", cloud="aws", extras=(), stack=lambda: None, contract=Contract("lab", ()),
                              served=served)


@pytest.fixture
def registered():
    """Registers a platform for the test; the registry as it was afterwards."""
    names = []

    def register(platform: platforms.Platform) -> None:
        platforms.register(platform)
        names.append(platform.name)

    yield register
    for name in names:
        platforms.unregister(name)


class Bare:
    pass


def test_only_kubernetes_platforms_node_images_are_offered_to_the_gpu_software(registered):
    """The NVIDIA layer installs on Kubernetes nodes: a platform that runs no Kubernetes nodes adds no node image to
    its ``nodeImage`` enum, whatever images it describes."""
    def images():
        return {e["value"] for e in package.schema()["types"]["gpuready:k8s:NodeImage"]["enum"]}
    before = images()
    assert "eks/AL2023_x86_64_NVIDIA" in before
    registered(replace(_lab(), node_images={"lab/rig": object()}))
    assert images() == before


def test_a_platforms_own_args_are_served_as_its_resource_and_types(registered):
    registered(_lab(Served(lambda: Rig, RigArgs, "gpuready:lab:Rig", Contract("lab", ()),
                           {(RigArgs, "tier"): Choice("Tier", lambda: TIERS)}),
                    Served(lambda: Bare, Args, "gpuready:lab:Bare", Contract("lab", ()))))
    schema = package.schema()
    assert schema["resources"]["gpuready:lab:Bare"]["description"] == ""  # a component without a docstring
    assert schema["resources"]["gpuready:lab:Rig"] == {
        "isComponent": True, "description": "A rig of GPUs in the lab.",
        "inputProperties": {
            "name": {"type": "string", "plain": True, "description": "The rig's name."},
            "size": {"type": "integer", "description": "GPUs, from another resource maybe."},
            "tier": {"$ref": "#/types/gpuready:lab:Tier", "plain": True, "description": "Its tier."},
            "links": {"type": "array", "items": {"$ref": "#/types/gpuready:lab:Link", "plain": True}, "plain": True,
                      "description": "Its chain."},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "plain": True}, "plain": True,
                       "description": "Labels."},
            "sizes": {"type": "array", "items": {"type": "integer", "plain": True}, "plain": True,
                      "description": "Sizes."},
            "pair": {"type": "array", "items": {"$ref": "pulumi.json#/Any"}, "plain": True,
                     "description": "A model and its memory in GiB."},
            "ratio": {"type": "number", "plain": True, "description": "A ratio."},
            "quotas": {"type": "object", "additionalProperties": {"type": "integer", "plain": True}, "plain": True,
                       "description": "GPUs by team."},
            "nodes": {"type": "object", "additionalProperties": {"$ref": "#/types/gpuready:lab:Link", "plain": True},
                      "plain": True, "description": "Links by name."},
            "settings": {"$ref": "#/types/gpuready:lab:Args", "plain": True, "description": "Settings."}},
        "requiredInputs": ["name"], "properties": {}, "required": []}
    assert schema["types"]["gpuready:lab:Link"] == {
        "type": "object", "description": "A link of a chain.", "required": ["name"], "properties": {
            "name": {"type": "string", "plain": True},  # no docstring: none said
            "next": {"$ref": "#/types/gpuready:lab:Link", "plain": True, "description": "The link after this one."}}}
    assert schema["types"]["gpuready:lab:Args"] == {
        "type": "object", "description": "Settings a class named ``Args`` alone holds.",
        "properties": {"note": {"type": "string", "plain": True, "description": "A note."}}}
    assert schema["types"]["gpuready:lab:Tier"] == {"type": "string", "enum": [
        {"name": "P4d24xlarge", "value": "p4d.24xlarge", "description": "Eight A100s."},
        {"name": "Tier1x", "value": "1x"}, {"name": "ON_DEMAND", "value": "ON_DEMAND"},
        {"name": "Spot", "value": "spot"}]}


@dataclass(frozen=True)
class Link:
    """Another class whose token would be ``Link``."""


@dataclass(frozen=True)
class ChainArgs:
    """Two types of one token."""

    first: LinkArgs
    """One."""
    second: Link
    """The other."""


@dataclass(frozen=True)
class EitherArgs:
    """A union of two types."""

    value: Union[int, str]
    """One or the other."""


@dataclass(frozen=True)
class KeyedArgs:
    """A map whose keys are numbers."""

    value: Mapping[int, str]
    """By number."""


@dataclass(frozen=True)
class BagArgs:
    """A set."""

    value: frozenset[str] = frozenset()
    """Unordered."""


@pytest.mark.parametrize(("args", "message"), [
    (ChainArgs, f"{HERE}:Link and {HERE}:LinkArgs would both be gpuready:lab:Link"),
    (EitherArgs, "no schema type for the union typing.Union[int, str]"),
    (KeyedArgs, "no schema type for typing.Mapping[int, str]"),
    (BagArgs, "no schema type for frozenset[str]"),
], ids=["two classes of one token", "a union", "a map with other keys than strings", "a set"])
def test_an_args_type_the_schema_cannot_say_is_refused_naming_it(registered, args, message):
    registered(_lab(Served(lambda: Rig, args, "gpuready:lab:Rig", Contract("lab", ()))))
    with pytest.raises(TypeError) as refused:
        package.schema()
    assert str(refused.value) == message


@pytest.mark.parametrize(("hint", "unwrapped"), [
    (Optional[pulumi.Input[str]], package.Hint(str, optional=True, input=True)),
    (pulumi.Input[int], package.Hint(int, optional=False, input=True)),
    (Optional[int], package.Hint(int, optional=True, input=False)),
    (Sequence[str], package.Hint(Sequence[str], optional=False, input=False)),
])
def test_unwrap_reads_an_annotation_as_written(hint, unwrapped):
    """An annotation as the class holds it before its forward references are resolved (``pulumi.Input`` names
    ``"Output[T]"``)."""
    assert package.unwrap(hint) == unwrapped


@dataclass(frozen=True)
class NamedLinkArgs:
    """A name and a link, as one fixed-length tuple."""

    pair: tuple[str, LinkArgs]
    """The name, then the link."""


@pytest.mark.parametrize(("args", "inputs", "path", "reason"), [
    (BatchGpuEnvironmentArgs, {"subnetIds": ["subnet-aaaaaaaa"]}, "instanceTypes",
     "Missing required input 'instanceTypes' on 'BatchGpuEnvironmentArgs'"),
    (BatchGpuEnvironmentArgs, ["g6e.xlarge"], "", "args must be an object, not ['g6e.xlarge']"),
    (RigArgs, {"name": "r", "nodes": {"a": {"nam": "b"}}}, "nodes.a.nam", "nodes.a.nam is not an input of LinkArgs"),
    (NamedLinkArgs, {"pair": ["a", {"nam": "b"}]}, "pair[1].nam", "pair[1].nam is not an input of LinkArgs"),
    (RigArgs, {"name": "r", "links": [{"name": "a"}, {"name": "b", "next": {}}]}, "links[1].next.name",
     "Missing required input 'links[1].next.name' on 'LinkArgs'"),
])
def test_an_input_error_says_its_path_and_reason(args, inputs, path, reason):
    with pytest.raises(package.InputError) as refused:
        package.to_args(args, inputs)
    assert str(refused.value) == refused.value.reason == reason
    assert refused.value.path == path


def test_the_engines_inputs_become_the_args_their_annotations_say():
    """The wire carries every number as a float and lists for tuples: an int field gets an int (a float field keeps
    its float), a tuple field a tuple (of what its items' annotations say), a map its values as their annotation
    says; a field not sent keeps its default."""
    rig = package.to_args(RigArgs, {"name": "r", "size": 8.0, "links": [{"name": "a", "next": {"name": "b"}}],
                                    "labels": {"team": "ml"}, "sizes": [1.0, 2.0], "pair": ["H100", 80.0],
                                    "ratio": 2.0, "quotas": {"ml": 4.0}, "settings": {"note": "n"}})
    assert rig == RigArgs(name="r", size=8, links=[LinkArgs("a", LinkArgs("b"))], labels={"team": "ml"},
                          sizes=(1, 2), pair=("H100", 80), ratio=2.0, quotas={"ml": 4}, settings=Args("n"))
    assert type(rig.size) is int and type(rig.sizes) is tuple and all(type(s) is int for s in rig.sizes)
    assert type(rig.pair) is tuple and type(rig.pair[1]) is int and type(rig.links) is list
    assert type(rig.ratio) is float and type(rig.quotas["ml"]) is int


@pytest.mark.parametrize("value", [["r"], {"first": "r"}, "8"], ids=["a list", "an object", "a number's digits"])
def test_a_value_of_another_type_than_its_field_s_is_passed_as_sent(value):
    """For the component's own check to refuse it, with the message a Python program gets."""
    assert package.to_args(RigArgs, {"name": value}).name == value
    assert package.to_args(RigArgs, {"name": "r", "size": value}).size == value


@dataclass(frozen=True)
class SubnetArgs:
    """Where a rig's nodes go."""

    subnet: Optional[pulumi.Input[str]] = None
    """Its subnet."""


@dataclass(frozen=True)
class PlacementArgs:
    """A rig's placement."""

    zone: Optional[str] = None
    """Its zone."""
    network: SubnetArgs = field(default_factory=SubnetArgs)
    """Its network."""
    name: Optional[pulumi.Input[str]] = None
    """Its name."""


@dataclass(frozen=True)
class PlacedArgs:
    """A rig placed."""

    placement: Optional[PlacementArgs] = None
    """Its placement."""


def test_an_args_object_sent_whole_as_one_output_gives_each_input_field_its_resources():
    """``placement: {network: {subnet: subnet.id}, name: ...}`` from an engine that sends no output values: the whole
    object comes as one output with the subnet's resource; each input field, nested ones too, is then an output of its
    own value with that resource, and a plain field keeps its value."""
    async def read():
        subnet = DependencyResource("urn:pulumi:test::gpuready::aws:ec2/subnet:Subnet::gpu")
        future = asyncio.get_running_loop().create_future()
        future.set_result(_OutputData(resources={subnet}, value={"network": {"subnet": "subnet-aaaaaaaa"},
                                                                 "name": "rig"}, is_known=True, is_secret=False))
        placed = package.to_args(PlacedArgs, {"placement": pulumi.Output._from_data(future)})
        placement = placed.placement
        carried = [placement.network.subnet, placement.name]
        return placement.zone, [(await o.future(), await o.resources()) for o in carried], subnet

    loop = asyncio.new_event_loop()  # not asyncio.run: it leaves the main thread no current loop for later tests
    try:
        zone, carried, subnet = loop.run_until_complete(read())
    finally:
        loop.close()
    assert zone is None
    assert carried == [("subnet-aaaaaaaa", {subnet}), ("rig", {subnet})]
