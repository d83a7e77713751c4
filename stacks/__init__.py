"""The reference stacks: ``stacks/__main__.py`` builds the platform named by the config key ``gpuready:platform``.

Each platform's stack module (named by its descriptor in :mod:`gpuready_components.platforms`) has ``SETTINGS`` (the
config keys it reads, declared once: :mod:`.settings`), ``CLOUD_KEYS`` (its cloud provider's keys, for the README)
and ``build(config)``; a platform's module imports only its own cloud SDK.
"""

from __future__ import annotations

from typing import Optional

from gpuready_components import platforms
from gpuready_components.errors import ConfigError
from gpuready_components.sdk import MissingExtra, extra_requirements, install_command

from .config import StackConfig, for_stack
from .settings import Settings


def providers(extras: tuple[str, ...]) -> Optional[set[str]]:
    """The config namespaces of the Pulumi providers gpuready's ``extras`` install (``pulumi-azure-native`` ->
    ``azure-native``); None without gpuready's installed metadata."""
    names = extra_requirements(extras)
    return None if names is None else {n.removeprefix("pulumi-") for n in names if n.startswith("pulumi-")}


def main() -> None:
    """Build the platform the stack's config names."""
    config = StackConfig()
    name = config.require_str("platform")
    platform = platforms.get(name)
    if platform is None:
        raise ConfigError("gpuready:platform", name, "unknown platform",
                          f"use one of {', '.join(sorted(platforms.names()))}")
    module = None
    try:
        module = platform.stack()
        config.settings = module.SETTINGS
        config.reject_unknown({"platform", *module.SETTINGS.keys}, getattr(module, "RENAMED", {}),
                              providers(platform.extras))
        module.build(config)
    except ConfigError as error:
        raise for_stack(error, module.SETTINGS if module else Settings()) from None
    except MissingExtra as missing:  # one command that installs all the platform needs
        raise MissingExtra(f"{missing.name} is not installed: the {name} platform needs gpuready[{platform.extra}]: "
                           f"{install_command(platform.extra)}", name=missing.name) from missing
