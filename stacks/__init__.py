"""The reference stacks: ``stacks/__main__.py`` builds the platform named by the config key ``gpuready:platform``.

Each platform is a module here with ``SETTINGS`` (the config keys it reads, declared once: :mod:`.settings`),
``CLOUD_KEYS`` (its cloud provider's keys, for the README) and ``build(config)``; a platform's module imports only its
own cloud SDK.
"""

from __future__ import annotations

import importlib

from gpuready_components.errors import ConfigError
from gpuready_components.sdk import MissingExtra, install_command

from .config import StackConfig, for_stack
from .settings import Settings

PLATFORMS = {
    "aws-batch": "stacks.aws_batch",
    "eks": "stacks.eks",
    "gke": "stacks.gke",
    "aks": "stacks.aks",
}
"""Platform name (the value of ``gpuready:platform``) -> module that builds it."""
EXTRAS = {"aws-batch": "aws", "eks": "aws,k8s", "gke": "gcp,k8s", "aks": "azure,k8s"}
"""The gpuready extras each platform needs, named together when one is missing."""


def main() -> None:
    """Build the platform the stack's config names."""
    config = StackConfig()
    platform = config.require_str("platform")
    if platform not in PLATFORMS:
        raise ConfigError("gpuready:platform", platform, "unknown platform",
                          f"use one of {', '.join(sorted(PLATFORMS))}")
    module = None
    from gpuready_components import catalog

    catalog.use_extra(())  # a previous render's extra types (same process: tests, gpuready plan) never reach this one
    try:
        module = importlib.import_module(PLATFORMS[platform])
        config.settings = module.SETTINGS
        config.reject_unknown({"platform", *module.SETTINGS.keys}, getattr(module, "RENAMED", {}))
        module.build(config)
    except ConfigError as error:
        raise for_stack(error, module.SETTINGS if module else Settings()) from None
    except MissingExtra as missing:
        raise MissingExtra(f"{missing}. The {platform} platform needs: {install_command(EXTRAS[platform])}") \
            from missing
