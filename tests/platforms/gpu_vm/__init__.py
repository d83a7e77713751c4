"""A throw-away platform, ``gpu-vm``: one EC2 GPU instance with the NVIDIA driver, smoked by a fake target.

It lives in this one folder and joins gpuready as any platform does, with its descriptor: one
:func:`gpuready_components.platforms.register` call (its test's), or an entry point of the group
``gpuready.platforms`` naming :data:`PLATFORM`. ``gpuready plan`` (readers, describer, offline answers, capacity,
policy rules), ``gpuready smoke`` and the component package then treat it as one of their own. Nothing outside this
folder names it.
"""

from __future__ import annotations

from types import MappingProxyType, ModuleType

from gpuready_components.platforms import GANG, SINGLE, SWEEP, Platform
from gpuready_components.served import Served

from . import plugin
from .outputs import OUTPUTS

TOKEN = "gpuready:test:GpuVm"


def _stack() -> ModuleType:
    from . import stack

    return stack


def _component() -> type:
    from .component import GpuVm

    return GpuVm


def _target() -> type:
    from .target import FakeVmTarget

    return FakeVmTarget


def _served() -> Served:
    from .component import GpuVmArgs

    return Served(_component, GpuVmArgs, TOKEN, OUTPUTS)


PLATFORM = Platform(
    "gpu-vm", "aws", ("aws",), _stack, OUTPUTS, sdks=MappingProxyType({"pulumi_aws": "aws"}), served=(_served(),),
    readers=(plugin.Instance,), pools=(plugin.Instance,), describers=MappingProxyType(plugin.DESCRIBERS),
    answers=MappingProxyType(plugin.ANSWERS), targets=MappingProxyType({SINGLE: _target}),
    lacks=MappingProxyType({GANG: "one instance is one node", SWEEP: "one instance is one node: run gpuready smoke"}))
