"""A throw-away platform, ``gpu-vm``: one EC2 GPU instance with the NVIDIA driver, smoked by a fake target.

It lives in this one folder and joins gpuready with the one :func:`gpuready_components.platforms.register` call its
test makes: the stack program, ``gpuready plan`` (readers, describer, offline answers, capacity, policy rules) and
``gpuready smoke`` then treat it as one of their own. Nothing outside this folder names it.
"""

from __future__ import annotations

from types import MappingProxyType

from gpuready_components.platforms import SINGLE, Platform

HERE = __name__
PLATFORM = Platform(
    "gpu-vm", "aws", ("aws",), stack=f"{HERE}.stack", contract=f"{HERE}.outputs", plugins=(f"{HERE}.plugin",),
    targets=MappingProxyType({SINGLE: f"{HERE}.target:FakeVmTarget"}), compute_service="EC2")
