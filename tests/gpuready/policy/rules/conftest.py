"""The reference stacks the rule tests edit, each rendered once (every value known, as ``gpuready plan`` renders
it): the tests change copies (:func:`tests.gpuready.policy.helpers.edited`), never these."""

from __future__ import annotations

import pytest

from ..helpers import render_stack


@pytest.fixture(scope="session")
def eks():
    """Two GPU node groups (eks-gpu: up to 4 g6.xlarge or g6.2xlarge, 1 GPU each; eks-gpu-4x: up to 4 g6.12xlarge, 4
    GPUs each), both at minSize 0 with template tags, a CPU group eks-system (2 nodes always), cluster-autoscaler,
    the NVIDIA device plugin and the DCGM exporter."""
    return render_stack("eks")
