"""The examples run against the same stand-in nvidia-smi as the SDK's tests."""

from tests.gpuready.conftest import fake_smi  # noqa: F401 (a fixture)
