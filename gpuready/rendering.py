"""What a stack declared: its resources with the inputs the engine receives, and its outputs.

The shape both halves of a preview share: ``gpuready plan`` makes it (:mod:`gpuready.plan.render` runs the program
on Pulumi's mock runtime), the offline policy runner reads it (:mod:`gpuready.policy.offline`). Plain data: it
imports neither, so neither imports the other through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RenderedResource:
    """One resource the program declared, with the inputs the engine would receive (camelCase, as on the wire)."""

    urn: str
    type: str
    name: str
    parent: str
    """URN of the parent resource ('' for the stack itself)."""
    custom: bool
    """False for component resources."""
    remote: bool
    """A multi-language component: its children are created by a plugin and do not render offline."""
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    provider: str = ""
    """The explicit provider reference (``URN::ID``) the resource was registered with; '' for the default one."""
    secret_inputs: frozenset = frozenset()
    """Top-level input names whose value is, or holds, a secret (shown unwrapped in ``inputs``)."""
    masked_inputs: dict[str, Any] = field(default_factory=dict)
    """``inputs`` as they may be shown: each secret replaced, whole, by ``[secret]``."""
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Input name -> URNs of the resources whose outputs it was built from (as the engine receives them)."""
    dependencies: tuple[str, ...] = ()
    """URNs the resource waits for besides its inputs' (``depends_on``)."""


@dataclass
class Rendering:
    """Everything a program declared (sorted by URN: registration order is not deterministic) and its outputs."""

    project: str
    stack: str
    config: dict[str, str]
    resources: list[RenderedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: frozenset = frozenset()
    """Stack outputs whose value is a secret (shown unwrapped in ``outputs``)."""
    secrets: frozenset = frozenset()
    """The text of every secret the program handed the engine: what must never be printed."""

    def by_urn(self) -> dict[str, RenderedResource]:
        return {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[RenderedResource]:
        return [r for r in self.resources if r.type == type_]
